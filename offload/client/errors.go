package client

import "errors"

// Sentinel errors carried by Result.Err (wrapped with details).
var (
	// ErrInvalidArgument means the call's arguments were malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound means no owner advertises the key.
	ErrNotFound = errors.New("key not found")
	// ErrBufferTooSmall means a destination is shorter than the object.
	ErrBufferTooSmall = errors.New("destination buffer too small")
	// ErrMaster means the master RPC failed.
	ErrMaster = errors.New("master RPC failed")
	// ErrOwner means an owner RPC failed or the owner is unreachable.
	ErrOwner = errors.New("owner RPC failed")
	// ErrStagingExhausted means the owner's staging memory stayed full
	// even for a single key; retry later.
	ErrStagingExhausted = errors.New("owner staging memory exhausted")
	// ErrTransfer means the engine transfer failed.
	ErrTransfer = errors.New("transfer failed")
	// ErrLeaseExpired means the transfer did not finish within the owner's
	// lease; the bytes in the destination must not be used.
	ErrLeaseExpired = errors.New("owner lease expired before the transfer finished")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("client closed")
)
