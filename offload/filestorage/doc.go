// Package filestorage is the offload owner's storage layer, Mooncake's
// FileStorage: it validates the local storage directory, picks a backend
// from the MOONCAKE_* configuration, and offers the three operations the
// owner needs: BatchLoad (object bytes straight into caller memory, the
// owner's staging slots), BatchOffload (caller memory to the backend) and
// ScanMeta (every stored key with its size, in batches, so a restarted
// owner can advertise them again).
//
// Keys are storage keys: tenant + NUL + user key, opaque bytes (see
// StorageKey). Backends never interpret them.
//
// Backends:
//   - object storage (distributed_storage_backend with adapter oss or s3):
//     objects live under the owner prefix (the root dir without slashes);
//   - posix: one file per key in a local directory (file_per_key_storage_backend,
//     or distributed_storage_backend with adapter posix for a shared mount).
package filestorage
