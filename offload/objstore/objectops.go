package objstore

import "context"

// ObjectOps implements the single-object methods of Store (Put, PutV, Get,
// GetRange, GetV, Exists, GetSize, Delete, ListKeys) on an Executor. An
// adapter embeds it and supplies Exec; the batch methods, Init,
// CheckHealth and Close stay with the adapter.
//
// The methods check their arguments (CheckGetArgs; an empty read returns
// 0 without a request) before they ask Exec, as Store requires, and then
// hand the call to the Executor. Buffers belong to the caller and are not
// referenced after a method returns; a failed read may leave part of a
// body in them.
type ObjectOps struct {
	// Exec returns the running executor for op ("PUT", "GET", "HEAD",
	// "DELETE" or "LIST") on the logical key ("" for LIST), or the *Error
	// the call returns instead: the adapter is not initialised or is
	// closed, or (the adapter's choice) the key is rejected.
	Exec func(op, key string) (*Executor, error)
}

// Put stores data as key; data is read during the call only.
func (o ObjectOps) Put(ctx context.Context, key string, data []byte) error {
	return o.PutV(ctx, key, [][]byte{data})
}

// PutV stores the concatenation of bufs as key, streaming from bufs.
// Objects above the adapter's multipart threshold go up in parts.
func (o ObjectOps) PutV(ctx context.Context, key string, bufs [][]byte) error {
	e, err := o.Exec("PUT", key)
	if err != nil {
		return err
	}
	return e.PutV(ctx, key, bufs)
}

// Get reads len(buf) bytes from the start of key into buf.
func (o ObjectOps) Get(ctx context.Context, key string, buf []byte) (int, error) {
	return o.GetRange(ctx, key, buf, 0)
}

// GetRange reads len(buf) bytes of key at off straight into buf. The
// reply must be 206 with exactly len(buf) bytes; buf is never written
// past its end.
func (o ObjectOps) GetRange(ctx context.Context, key string, buf []byte, off int64) (int, error) {
	if err := CheckGetArgs("GET", key, int64(len(buf)), off); err != nil {
		return 0, err
	}
	if len(buf) == 0 {
		return 0, nil
	}
	e, err := o.Exec("GET", key)
	if err != nil {
		return 0, err
	}
	return e.GetRange(ctx, key, buf, off)
}

// GetV scatters the bytes of key at off across bufs and returns their
// total.
func (o ObjectOps) GetV(ctx context.Context, key string, bufs [][]byte, off int64) (int, error) {
	total := int64(0)
	for _, b := range bufs {
		total += int64(len(b))
	}
	if err := CheckGetArgs("GET", key, total, off); err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, nil
	}
	e, err := o.Exec("GET", key)
	if err != nil {
		return 0, err
	}
	return e.GetV(ctx, key, bufs, off)
}

// Exists reports whether key exists (HEAD; 404 is false).
func (o ObjectOps) Exists(ctx context.Context, key string) (bool, error) {
	e, err := o.Exec("HEAD", key)
	if err != nil {
		return false, err
	}
	return e.Exists(ctx, key)
}

// GetSize returns the size of key; a missing key is FILE_NOT_FOUND.
func (o ObjectOps) GetSize(ctx context.Context, key string) (int64, error) {
	e, err := o.Exec("HEAD", key)
	if err != nil {
		return 0, err
	}
	return e.Head(ctx, key)
}

// Delete removes key; a missing key is not an error.
func (o ObjectOps) Delete(ctx context.Context, key string) error {
	e, err := o.Exec("DELETE", key)
	if err != nil {
		return err
	}
	return e.Delete(ctx, key)
}

// ListKeys returns every object under the prefix, all pages, with decoded
// logical keys and sizes.
func (o ObjectOps) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	e, err := o.Exec("LIST", "")
	if err != nil {
		return nil, err
	}
	return e.ListKeys(ctx)
}
