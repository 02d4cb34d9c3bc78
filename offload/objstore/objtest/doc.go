// Package objtest provides loopback HTTP servers for object-storage
// adapter tests: a fault server that answers each request by its last
// path segment (or from a script in arrival order) with a reply, raw
// bytes, a TCP reset, a stall, a gated reply or a keep-alive reply, and
// records the raw wire text of every request; and MemBucket, an in-memory
// bucket (PUT, ranged GET, HEAD, DELETE, ListObjectsV2 pages,
// multipart upload) behind an authorisation hook.
//
// Servers listen on 127.0.0.1 only and stop all their goroutines on Close.
package objtest
