// Package demo runs Ferry's main job end to end inside one process: an
// offload master, an offload owner whose object store is either an
// embedded S3 server or a real S3/OSS bucket, and a requester. It writes a
// set of KV-cache-sized objects through the write path (requester Put ->
// owner staging over the transfer engine -> object-store PutBatch), reads
// them back through the read path (master query -> owner
// BatchGetOffloadObject -> object-store GetBatch into staging -> engine
// READ into the requester's registered memory -> release), checks every
// byte against the content it wrote, and reports per-stage latency
// percentiles, throughput and the transport that carried the bytes.
//
// Run is the entry point; `ferry demo` is a thin command around it.
// StartS3Server serves the embedded object store on its own (the
// multi-host test runs it inside a network namespace).
package demo
