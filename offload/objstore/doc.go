// Package objstore is the object-storage core shared by Ferry's OSS and S3
// adapters: the Store interface every adapter implements, typed errors that
// mirror Mooncake's ErrorCode values, the logical-to-physical key mapping,
// environment parsing with Mooncake's rules, credentials that can be
// refreshed without a restart, and the batch Executor that runs admission-
// limited HTTP batches with bodies read straight into caller memory.
//
// Ownership: every []byte handed to a Store or an Executor belongs to the
// caller. A GET writes only inside the destination slice it was given and
// never keeps a reference after the call returns; a PUT reads its source
// slices during the call only, so they may be reused once it returns.
package objstore
