package s3

import (
	"context"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// Put stores data as key (see objstore.Store). data is read during the
// call only.
func (a *Adapter) Put(ctx context.Context, key string, data []byte) error {
	return a.PutV(ctx, key, [][]byte{data})
}

// PutV stores the concatenation of bufs as key, streaming from bufs.
// Objects above the multipart threshold are uploaded in parts.
func (a *Adapter) PutV(ctx context.Context, key string, bufs [][]byte) error {
	e, err := a.exec("PUT", key)
	if err != nil {
		return err
	}
	return e.PutV(ctx, key, bufs)
}

// Get reads len(buf) bytes from the start of key into buf.
func (a *Adapter) Get(ctx context.Context, key string, buf []byte) (int, error) {
	return a.GetRange(ctx, key, buf, 0)
}

// GetRange reads len(buf) bytes of key at off into buf. The reply must be
// 206 with exactly len(buf) bytes; buf is never written past its end.
func (a *Adapter) GetRange(ctx context.Context, key string, buf []byte, off int64) (int, error) {
	if err := objstore.CheckGetArgs("GET", key, int64(len(buf)), off); err != nil {
		return 0, err
	}
	if len(buf) == 0 {
		return 0, nil
	}
	e, err := a.exec("GET", key)
	if err != nil {
		return 0, err
	}
	return e.GetRange(ctx, key, buf, off)
}

// GetV scatters the bytes of key at off across bufs and returns the total.
func (a *Adapter) GetV(ctx context.Context, key string, bufs [][]byte, off int64) (int, error) {
	total := int64(0)
	for _, b := range bufs {
		total += int64(len(b))
	}
	if err := objstore.CheckGetArgs("GET", key, total, off); err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, nil
	}
	e, err := a.exec("GET", key)
	if err != nil {
		return 0, err
	}
	return e.GetV(ctx, key, bufs, off)
}

// Exists reports whether key exists.
func (a *Adapter) Exists(ctx context.Context, key string) (bool, error) {
	e, err := a.exec("HEAD", key)
	if err != nil {
		return false, err
	}
	return e.Exists(ctx, key)
}

// GetSize returns the size of key; a missing key is FILE_NOT_FOUND.
func (a *Adapter) GetSize(ctx context.Context, key string) (int64, error) {
	e, err := a.exec("HEAD", key)
	if err != nil {
		return 0, err
	}
	return e.Head(ctx, key)
}

// Delete removes key; a missing key is not an error.
func (a *Adapter) Delete(ctx context.Context, key string) error {
	e, err := a.exec("DELETE", key)
	if err != nil {
		return err
	}
	return e.Delete(ctx, key)
}

// GetBatch runs reqs with at most MaxConnections in flight and returns one
// result per request in input order. Each buffer receives its object's
// bytes straight from the socket (no intermediate copy) and is never
// written past its end; after a failure it may hold part of a body or an
// error document and must not be used. Buffers belong to the caller and
// are not referenced after GetBatch returns.
func (a *Adapter) GetBatch(ctx context.Context, reqs []objstore.GetRequest) []objstore.GetResult {
	e, err := a.exec("GET", "")
	if err != nil {
		res := make([]objstore.GetResult, len(reqs))
		for i, r := range reqs {
			if verr := objstore.CheckGetArgs("GET", r.Key, int64(len(r.Buf)), r.Off); verr != nil {
				res[i].Err = verr
			} else if len(r.Buf) > 0 {
				res[i].Err = err
			}
		}
		return res
	}
	return e.GetBatch(ctx, reqs)
}

// PutBatch runs reqs like GetBatch and returns one error per request.
func (a *Adapter) PutBatch(ctx context.Context, reqs []objstore.PutRequest) []error {
	e, err := a.exec("PUT", "")
	if err != nil {
		res := make([]error, len(reqs))
		for i := range res {
			res[i] = err
		}
		return res
	}
	return e.PutBatch(ctx, reqs)
}

// ListKeys returns every object under the prefix, all pages, with decoded
// logical keys. Each page is GET /?encoding-type=url&list-type=2&
// max-keys=1000&prefix=<physical prefix>[&continuation-token=<token>];
// the token goes back exactly as S3 sent it (S3 does not encode it). A
// non-2xx status, a malformed page (strict parser), a key outside the
// prefix or a truncated page without a token is FILE_READ_FAIL; a
// transport failure DFS_SERVICE_UNAVAILABLE.
func (a *Adapter) ListKeys(ctx context.Context) ([]objstore.KeyInfo, error) {
	e, err := a.exec("LIST", "")
	if err != nil {
		return nil, err
	}
	return e.ListKeys(ctx)
}

// CheckHealth writes the probe object .mooncake_health_probe_<u64>-<u64>
// holding "health_check", reads its 12 bytes back and deletes it (wire
// sequence PUT, GET, DELETE). A failed PUT is returned as is; a failed or
// mismatching read is DFS_SERVICE_UNAVAILABLE (the probe is still deleted).
func (a *Adapter) CheckHealth(ctx context.Context) error {
	if _, err := a.exec("HEALTH", ""); err != nil {
		return err
	}
	return objstore.CheckHealth(ctx, a, a.log)
}
