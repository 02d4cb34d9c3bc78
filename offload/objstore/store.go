package objstore

import "context"

// GetRequest asks for len(Buf) bytes of object Key starting at byte Off,
// written into Buf. Buf belongs to the caller; on failure it may hold part
// of a body or of an error document and must not be used. Bytes outside
// Buf are never touched.
//
// A plain request reads a range: a larger object is fine. With WholeObject
// set, Buf is the whole object and len(Buf) its expected size: Off must be
// 0 (else INVALID_PARAMS), and a stored object of any other size, as the
// reply's Content-Range total (206, 416) or Content-Length (200) states,
// fails with an INVALID_PARAMS *Error naming both sizes that also matches
// ErrObjectSize; Buf is still never written past its end.
type GetRequest struct {
	Key         string
	Buf         []byte
	Off         int64
	WholeObject bool
}

// GetResult is the outcome of one GetRequest: N bytes written (len(Buf) on
// success) or Err, a *Error whose Code says what happened.
type GetResult struct {
	N   int
	Err error
}

// PutRequest stores the concatenation of Bufs (empty slices are skipped,
// no Bufs means an empty object) as object Key, overwriting any object
// there. The slices are read during the call only.
type PutRequest struct {
	Key  string
	Bufs [][]byte
}

// KeyInfo is one listed object: its logical key and its size in bytes.
type KeyInfo struct {
	Key  string
	Size int64
}

// Store is an object-storage adapter. Keys are opaque logical keys (any
// bytes, including NUL, '/', '%' and UTF-8). All methods are safe for
// concurrent use once Init has succeeded; argument validation happens
// before the initialisation check, and every other method returns an
// INTERNAL_ERROR *Error before Init succeeds. Errors are *Error values that
// match one sentinel (ErrNotFound, ErrReadFail, ...) with errors.Is.
type Store interface {
	// Init reads the configuration afresh (from the environment) and
	// starts the adapter. Once an adapter runs, a later Init only
	// re-validates the current configuration and never changes it.
	Init(ctx context.Context) error
	// Put stores data as key.
	Put(ctx context.Context, key string, data []byte) error
	// PutV stores the concatenation of bufs as key, streaming from bufs.
	PutV(ctx context.Context, key string, bufs [][]byte) error
	// Get reads len(buf) bytes from the start of key into buf and returns
	// len(buf). The object must have at least len(buf) bytes.
	Get(ctx context.Context, key string, buf []byte) (int, error)
	// GetRange reads len(buf) bytes at off; off < 0 is INVALID_PARAMS and
	// an empty buf returns 0 without a request.
	GetRange(ctx context.Context, key string, buf []byte, off int64) (int, error)
	// GetV scatters the bytes at off across bufs and returns their total.
	GetV(ctx context.Context, key string, bufs [][]byte, off int64) (int, error)
	// Exists reports whether key exists (HEAD; 404 is false).
	Exists(ctx context.Context, key string) (bool, error)
	// GetSize returns the size of key (404 is FILE_NOT_FOUND).
	GetSize(ctx context.Context, key string) (int64, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// ListKeys returns every object under the prefix (all pages) with
	// decoded logical keys and sizes.
	ListKeys(ctx context.Context) ([]KeyInfo, error)
	// GetBatch runs reqs with at most MaxConnections in flight and returns
	// one result per request, in input order. Local rejects are never sent.
	GetBatch(ctx context.Context, reqs []GetRequest) []GetResult
	// PutBatch runs reqs like GetBatch and returns one error (nil on
	// success) per request, in input order. A batch is not a transaction.
	PutBatch(ctx context.Context, reqs []PutRequest) []error
	// CheckHealth writes, reads back and deletes a probe object.
	CheckHealth(ctx context.Context) error
	// Close releases idle connections. It is idempotent; the adapter must
	// not be used afterwards.
	Close() error
}
