package filestorage

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// objectStore adapts an objstore.Store (OSS, S3) to Store.
type objectStore struct {
	s objstore.Store
}

// FromObjectStore wraps an initialised object-storage adapter as a Store.
// Closing the Store closes the adapter.
func FromObjectStore(s objstore.Store) Store { return objectStore{s: s} }

// mapErr wraps an adapter error with this package's sentinel, keeping the
// adapter's error (and its code) reachable with errors.Is / errors.As: a
// stored object of another size than requested (objstore.ErrObjectSize,
// code INVALID_PARAMS) is ErrSizeMismatch.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, objstore.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, objstore.ErrObjectSize):
		return fmt.Errorf("%w: %w", ErrSizeMismatch, err)
	default:
		return fmt.Errorf("%w: %w", ErrBackend, err)
	}
}

func (o objectStore) GetBatch(ctx context.Context, items []GetItem) []error {
	reqs := make([]objstore.GetRequest, len(items))
	for i, it := range items {
		reqs[i] = objstore.GetRequest{Key: string(it.Key), Buf: it.Buf, WholeObject: true}
	}
	res := o.s.GetBatch(ctx, reqs)
	errs := make([]error, len(items))
	if len(res) != len(items) {
		for i := range errs {
			errs[i] = fmt.Errorf("%w: adapter returned %d results for %d requests", ErrBackend, len(res), len(items))
		}
		return errs
	}
	for i, r := range res {
		switch {
		case r.Err != nil:
			errs[i] = mapErr(r.Err)
		case r.N != len(items[i].Buf):
			errs[i] = fmt.Errorf("%w: key %q: got %d bytes, want %d", ErrSizeMismatch, items[i].Key, r.N, len(items[i].Buf))
		}
	}
	return errs
}

func (o objectStore) PutBatch(ctx context.Context, items []PutItem) []error {
	reqs := make([]objstore.PutRequest, len(items))
	for i, it := range items {
		reqs[i] = objstore.PutRequest{Key: string(it.Key), Bufs: it.Bufs}
	}
	res := o.s.PutBatch(ctx, reqs)
	errs := make([]error, len(items))
	for i := range errs {
		if len(res) != len(items) {
			errs[i] = fmt.Errorf("%w: adapter returned %d results for %d requests", ErrBackend, len(res), len(items))
			continue
		}
		errs[i] = mapErr(res[i])
	}
	return errs
}

func (o objectStore) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	ks, err := o.s.ListKeys(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]KeyInfo, len(ks))
	for i, k := range ks {
		out[i] = KeyInfo{Key: []byte(k.Key), Size: k.Size}
	}
	return out, nil
}

func (o objectStore) CheckHealth(ctx context.Context) error { return mapErr(o.s.CheckHealth(ctx)) }

func (o objectStore) Close() error { return o.s.Close() }
