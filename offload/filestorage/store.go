package filestorage

import "context"

// GetItem asks for the whole object Key to be read into Buf. len(Buf) is
// the expected object size; a stored object of any other size is an
// error. Buf belongs to the caller; the store writes only inside it and
// does not retain it after the call returns.
type GetItem struct {
	Key []byte
	Buf []byte
}

// PutItem stores the concatenation of Bufs as object Key, replacing any
// previous object. Bufs are only read, and not retained after the call.
type PutItem struct {
	Key  []byte
	Bufs [][]byte
}

// KeyInfo is one stored key and its size.
type KeyInfo struct {
	Key  []byte
	Size int64
}

// Store is a storage backend: the object-store adapters and the posix
// directory both implement it. Implementations are safe for concurrent
// use. Batch calls return one error per item, in input order (nil for a
// success); the errors wrap ErrNotFound, ErrSizeMismatch or ErrBackend.
type Store interface {
	// GetBatch reads every item into its buffer. A failed item's buffer
	// may hold partial bytes.
	GetBatch(ctx context.Context, items []GetItem) []error
	// PutBatch writes every item. A batch is not a transaction.
	PutBatch(ctx context.Context, items []PutItem) []error
	// ListKeys returns every stored key with its size.
	ListKeys(ctx context.Context) ([]KeyInfo, error)
	// CheckHealth writes, reads back and deletes a probe object.
	CheckHealth(ctx context.Context) error
	// Close releases the store's resources; it is idempotent.
	Close() error
}
