package s3

import (
	"context"

	"github.com/ferrylabs/ferry/offload/objstore"
)

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
