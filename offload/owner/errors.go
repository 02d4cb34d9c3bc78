package owner

import "errors"

// Sentinel errors. The gRPC service maps them to status codes.
var (
	// ErrInvalidArgument means a request was malformed (mismatched
	// lengths, negative or oversized sizes, empty keys). gRPC
	// InvalidArgument.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrStagingExhausted means the staging arena has no room for the
	// batch right now. It is temporary: retry later or with fewer keys.
	// gRPC ResourceExhausted.
	ErrStagingExhausted = errors.New("staging memory exhausted")
	// ErrNotFound means a key is not in the owner's store. gRPC NotFound.
	ErrNotFound = errors.New("object not found")
	// ErrUnknownBatch means a batch id is not live: never issued,
	// released, committed or expired. gRPC NotFound (FailedPrecondition
	// for a commit).
	ErrUnknownBatch = errors.New("unknown or expired batch")
	// ErrStorage means the object store failed. gRPC Unavailable.
	ErrStorage = errors.New("object store failure")
	// ErrMaster means a master RPC failed.
	ErrMaster = errors.New("master RPC failed")
	// ErrClosed means the owner is shutting down. gRPC Unavailable.
	ErrClosed = errors.New("owner closed")
)
