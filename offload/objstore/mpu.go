package objstore

import (
	"context"
	"net/http"
)

// putMultipart uploads one request through the Multipart protocol: create,
// parts in parallel (at most MaxConnections in flight), complete; any
// failure aborts the upload best-effort and is returned.
func (e *Executor) putMultipart(ctx context.Context, r *PutRequest) error {
	mp := e.cfg.Multipart
	phys, err := e.cfg.Keys.Physical(r.Key)
	if err != nil {
		return withOp(err, "PUT")
	}
	id, err := mp.Create(ctx, e, phys)
	if err != nil {
		return withOp(err, "PUT")
	}
	parts := SplitVec(r.Bufs, e.cfg.MultipartPartSize)
	calls := make([]Call, len(parts))
	for i, p := range parts {
		calls[i] = Call{Method: http.MethodPut, Key: phys, LogicalKey: r.Key, Body: p,
			Query: mp.PartQuery(id, i+1)}
	}
	out := make([]Outcome, len(calls))
	e.Run(ctx, calls, out)
	etags := make([]string, len(calls))
	for i := range calls {
		if err := e.MapPut(&calls[i], &out[i]); err != nil {
			e.abort(ctx, phys, id)
			return err
		}
		etags[i] = out[i].Header.Get("ETag")
		if etags[i] == "" {
			e.abort(ctx, phys, id)
			return Errorf(CodeFileWriteFail, "PUT", r.Key, "part %d reply has no ETag", i+1)
		}
	}
	if err := mp.Complete(ctx, e, phys, id, etags); err != nil {
		e.abort(ctx, phys, id)
		return withOp(err, "PUT")
	}
	return nil
}

func (e *Executor) abort(ctx context.Context, phys, id string) {
	if err := e.cfg.Multipart.Abort(context.WithoutCancel(ctx), e, phys, id); err != nil {
		e.log.Warn("multipart abort failed", "adapter", e.cfg.Name, "err", err)
	}
}
