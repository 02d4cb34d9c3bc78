// Package objtest provides loopback HTTP servers for object-storage
// adapter tests: a fault server that answers each request by its last
// path segment (or from a script in arrival order) with a reply, raw
// bytes, a TCP reset, a stall, a gated reply or a keep-alive reply, and
// records the raw wire text of every request; and MemBucket, an in-memory
// bucket (PUT, ranged GET, HEAD, DELETE, ListObjectsV2 pages,
// multipart upload) behind an authorisation hook. S3Env reads the real
// S3 server scripts/test.sh starts (FERRY_TEST_S3_*), skips a test
// without it, and makes per-test buckets that are removed when the test
// ends.
//
// Servers listen on 127.0.0.1 only and stop all their goroutines on Close.
package objtest
