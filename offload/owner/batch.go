package owner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/offload/filestorage"
	"github.com/ferrylabs/ferry/staging"
)

// Batch is what a requester receives for a get or put batch.
type Batch struct {
	// ID names the batch in ReleaseOffloadBuffer / BatchPutCommit.
	ID uint64
	// Addrs holds one slot address per key in the owner's segment (0 for
	// a zero-length object, which needs no transfer).
	Addrs []uint64
	// Segment is the owner engine's segment name.
	Segment string
	// Lease is how long the slots are guaranteed to the requester,
	// counted from when the owner returned the batch.
	Lease time.Duration
}

func (w *Owner) checkBatch(keys [][]byte, sizes []int64) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys", ErrInvalidArgument)
	}
	if len(keys) != len(sizes) {
		return fmt.Errorf("%w: %d keys but %d sizes", ErrInvalidArgument, len(keys), len(sizes))
	}
	maxSlot := int64(w.arena.MaxSlot())
	for i, s := range sizes {
		if len(keys[i]) == 0 {
			return fmt.Errorf("%w: key %d is empty", ErrInvalidArgument, i)
		}
		if s < 0 || s > maxSlot {
			return fmt.Errorf("%w: key %q: size %d outside [0, %d] (the owner's largest staging slot)", ErrInvalidArgument, keys[i], s, maxSlot)
		}
	}
	return nil
}

// allocate reserves one slot per non-empty object, all or nothing, as an
// unstarted lease. bufs[i] is the slot memory for key i (nil when empty).
func (w *Owner) allocate(sizes []int64) (*staging.Lease, []uint64, [][]byte, error) {
	want := make([]uint64, 0, len(sizes))
	for _, s := range sizes {
		if s > 0 {
			want = append(want, uint64(s))
		}
	}
	lease, err := w.arena.AllocLease(want)
	if err != nil {
		if errors.Is(err, staging.ErrNoSpace) {
			w.m.exhausted.Inc()
			return nil, nil, nil, fmt.Errorf("%w: %d objects need more than the %d of %d staging bytes free: %w",
				ErrStagingExhausted, len(want), w.arena.Len()-w.arena.Used(), w.arena.Len(), err)
		}
		if errors.Is(err, staging.ErrClosed) {
			return nil, nil, nil, ErrClosed
		}
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	slots := lease.Slots()
	addrs := make([]uint64, len(sizes))
	bufs := make([][]byte, len(sizes))
	j := 0
	for i, s := range sizes {
		if s > 0 {
			addrs[i] = slots[j].Addr()
			bufs[i] = slots[j].Bytes()
			j++
		} else {
			bufs[i] = []byte{}
		}
	}
	return lease, addrs, bufs, nil
}

func storageKeys(tenant string, keys [][]byte) [][]byte {
	sks := make([][]byte, len(keys))
	for i, k := range keys {
		sks[i] = filestorage.StorageKey(tenant, k)
	}
	return sks
}

// GetObjects loads the objects into staging slots and hands them out: the
// lease clock starts only after the load. sizes[i] must be the object's
// exact size. On any error no slot stays allocated; an error wraps
// ErrInvalidArgument, ErrStagingExhausted, ErrNotFound, ErrStorage or
// ErrClosed.
func (w *Owner) GetObjects(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (Batch, error) {
	if w.draining.Load() {
		return Batch{}, ErrClosed
	}
	if err := w.checkBatch(keys, sizes); err != nil {
		return Batch{}, err
	}
	start := time.Now()
	lease, addrs, bufs, err := w.allocate(sizes)
	if err != nil {
		return Batch{}, err
	}
	if err := w.fs.BatchLoad(ctx, storageKeys(tenant, keys), bufs); err != nil {
		lease.Release()
		w.m.loadFailures.Inc()
		if errors.Is(err, filestorage.ErrNotFound) {
			return Batch{}, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return Batch{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := lease.Start(w.ttl + w.grace); err != nil {
		lease.Release()
		return Batch{}, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	w.m.getBatches.Inc()
	w.m.loadBytes.Add(float64(total))
	w.m.loadSeconds.Observe(time.Since(start).Seconds())
	return Batch{ID: lease.ID(), Addrs: addrs, Segment: w.eng.Name(), Lease: w.ttl}, nil
}

// Release ends a batch early (ReleaseOffloadBuffer). It reports false if
// the batch is unknown, already released or expired. Releasing a put
// batch abandons it.
func (w *Owner) Release(id uint64) bool {
	w.mu.Lock()
	delete(w.puts, id)
	w.mu.Unlock()
	return w.arena.ReleaseLease(id) == nil
}

// PutStart reserves staging slots for the requester to write the objects
// into. The batch must be committed within the returned lease.
func (w *Owner) PutStart(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (Batch, error) {
	if w.draining.Load() {
		return Batch{}, ErrClosed
	}
	if err := w.checkBatch(keys, sizes); err != nil {
		return Batch{}, err
	}
	lease, addrs, _, err := w.allocate(sizes)
	if err != nil {
		return Batch{}, err
	}
	kc := make([][]byte, len(keys))
	for i, k := range keys {
		kc[i] = append([]byte(nil), k...)
	}
	w.mu.Lock()
	w.puts[lease.ID()] = &putBatch{tenant: tenant, keys: kc, sizes: append([]int64(nil), sizes...), lease: lease}
	w.mu.Unlock()
	if err := lease.Start(w.ttl + w.grace); err != nil {
		w.Release(lease.ID())
		return Batch{}, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return Batch{ID: lease.ID(), Addrs: addrs, Segment: w.eng.Name(), Lease: w.ttl}, nil
}

// PutCommit uploads a put batch's slots to the object store and reports
// the stored keys to the master. It returns one error per key (nil when
// stored and recorded) or, for the whole batch, ErrUnknownBatch. The
// slots are freed when it returns.
func (w *Owner) PutCommit(ctx context.Context, id uint64) ([]error, error) {
	w.mu.Lock()
	pb := w.puts[id]
	delete(w.puts, id)
	w.mu.Unlock()
	if pb == nil {
		return nil, fmt.Errorf("%w: put batch %d", ErrUnknownBatch, id)
	}
	if err := pb.lease.Acquire(); err != nil {
		return nil, fmt.Errorf("%w: put batch %d: %w", ErrUnknownBatch, id, err)
	}
	defer func() {
		pb.lease.Done()
		pb.lease.Release()
	}()
	start := time.Now()
	slots := pb.lease.Slots()
	srcs := make([][][]byte, len(pb.keys))
	j := 0
	for i, s := range pb.sizes {
		if s > 0 {
			srcs[i] = [][]byte{slots[j].Bytes()}
			j++
		}
	}
	errs := w.fs.BatchOffload(ctx, storageKeys(pb.tenant, pb.keys), srcs)
	var ok, failed []Object
	var total int64
	for i, err := range errs {
		o := Object{Tenant: pb.tenant, Key: pb.keys[i], Size: pb.sizes[i]}
		if err != nil {
			errs[i] = fmt.Errorf("%w: %w", ErrStorage, err)
			failed = append(failed, o)
			continue
		}
		ok = append(ok, o)
		total += pb.sizes[i]
	}
	if len(ok) > 0 {
		// The master must hear the outcome even if the requester gave up.
		cctx, cancel := w.rpcCtx(context.WithoutCancel(ctx))
		err := w.master.NotifySuccess(cctx, w.id, ok)
		cancel()
		if err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("%w: stored but not recorded: %w", ErrMaster, err)
				}
			}
		}
	}
	if len(failed) > 0 {
		cctx, cancel := w.rpcCtx(context.WithoutCancel(ctx))
		if err := w.master.NotifyFailure(cctx, w.id, failed); err != nil {
			w.log.Warn("notify offload failure", "err", err, "keys", len(failed))
		}
		cancel()
	}
	w.m.putBatches.Inc()
	w.m.storeBytes.Add(float64(total))
	w.m.storeSeconds.Observe(time.Since(start).Seconds())
	return errs, nil
}
