package filestorage

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them with
// %w and name the key, path or variable at fault.
var (
	// ErrInvalidPath means MOONCAKE_OFFLOAD_FILE_STORAGE_PATH (or a
	// backend directory) fails the init rules.
	ErrInvalidPath = errors.New("invalid storage path")
	// ErrInvalidArgument means a call got malformed input (mismatched
	// lengths, a negative size, a key without its tenant).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound means a key is not stored (FILE_NOT_FOUND).
	ErrNotFound = errors.New("object not found")
	// ErrSizeMismatch means the stored length differs from the requested
	// size (Mooncake INVALID_PARAMS; an object-store error it wraps keeps
	// that code) or a read came back short (FILE_READ_FAIL); the
	// destination buffer is not trustworthy.
	ErrSizeMismatch = errors.New("object size mismatch")
	// ErrBackend means the backend failed for another reason (I/O error,
	// object store unavailable or refusing the request).
	ErrBackend = errors.New("storage backend error")
	// ErrNotSupported means the configuration selects a backend Ferry
	// does not implement.
	ErrNotSupported = errors.New("storage backend not supported")
	// ErrHealthCheck means the object store failed its start-up probe.
	ErrHealthCheck = errors.New("storage health check failed")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("file storage closed")
)
