package demo

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ferrylabs/ferry/offload/client"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/offload/filestorage"
)

// plan is the work: keys and sizes of every object.
type plan struct {
	o     Options
	keys  [][]byte
	sizes []int64
	total int64
	run   string
}

func newPlan(o Options, run string) *plan {
	p := &plan{o: o, run: run, keys: make([][]byte, o.Objects), sizes: make([]int64, o.Objects)}
	for i := range p.keys {
		p.keys[i] = objectKey(run, i)
		p.sizes[i] = objectSize(o.Seed, i, o.MinSize, o.MaxSize)
		p.total += p.sizes[i]
	}
	return p
}

// batches splits the object indices into runs of at most Batch.
func (p *plan) batches() [][2]int {
	var out [][2]int
	for lo := 0; lo < len(p.keys); lo += p.o.Batch {
		out = append(out, [2]int{lo, min(lo+p.o.Batch, len(p.keys))})
	}
	return out
}

// regionBytes is the requester memory one batch in flight uses: every
// object 4 KiB aligned.
func regionBytes(o Options) int64 {
	return int64(o.Batch) * ((o.MaxSize + 4095) &^ 4095)
}

// Run starts the in-process cluster, writes every object through the
// write path, reads every object back through the read path into the
// requester's registered memory, verifies every byte, cleans up and
// stops the cluster. It returns the report and, when anything went wrong,
// an error wrapping ErrInvalidOptions, ErrSetup, ErrFailed or ErrMismatch
// (the report is non-nil except for ErrInvalidOptions and ErrSetup).
func Run(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sz := sizeFor(o)
	sz.bufferBytes = inflight * regionBytes(o)
	c, err := startCluster(ctx, o, sz)
	if err != nil {
		return nil, err
	}
	run := "run"
	if c.s3srv == nil {
		// Keep runs against a real bucket apart.
		run = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	p := newPlan(o, run)
	rep := &Report{Objects: o.Objects, Bytes: p.total, MinSize: o.MinSize, MaxSize: o.MaxSize, Batch: o.Batch,
		Store: c.storeDesc, Unlocked: c.unlocked}

	var runErr error
	stored := make([]bool, o.Objects)
	rep.Put = c.putPhase(ctx, p, stored)
	if len(o.CorruptObjects) > 0 {
		if err := c.corrupt(ctx, p, o.CorruptObjects); err != nil {
			runErr = fmt.Errorf("%w: corrupting objects: %w", ErrSetup, err)
		}
	}
	if runErr == nil && ctx.Err() == nil {
		rep.Get = c.getPhase(ctx, p, rep)
	}
	rep.Transports = c.transportBytes()
	if c.s3srv == nil && !o.Keep {
		rep.Deleted = c.cleanup(context.WithoutCancel(ctx), p, stored)
	}
	closeErr := c.close(context.WithoutCancel(ctx))
	rep.Total = time.Since(start)

	switch {
	case runErr != nil:
	case ctx.Err() != nil:
		runErr = ctx.Err()
	case rep.MismatchCount > 0:
		runErr = fmt.Errorf("%w: %d of %d objects read back differ from what was written", ErrMismatch, rep.MismatchCount, rep.Objects)
	case rep.Put.Failed > 0 || rep.Get.Failed > 0:
		first := rep.Put.FirstErr
		if first == nil {
			first = rep.Get.FirstErr
		}
		runErr = fmt.Errorf("%w: %d puts and %d gets failed; first: %w", ErrFailed, rep.Put.Failed, rep.Get.Failed, first)
	case rep.Verified != rep.Objects:
		runErr = fmt.Errorf("%w: only %d of %d objects verified", ErrFailed, rep.Verified, rep.Objects)
	}
	if closeErr != nil {
		c.log.Warn("demo shutdown", "err", closeErr)
	}
	return rep, runErr
}

// phaseRunner runs batches on inflight workers, each with its own region
// of the requester buffer, and serialises progress and result updates.
type phaseRunner struct {
	c  *cluster
	p  *plan
	mu sync.Mutex
}

// each calls fn for every batch with the worker's region of registered
// memory. It stops handing out batches when ctx ends.
func (r *phaseRunner) each(ctx context.Context, fn func(lo, hi int, region []byte)) {
	work := make(chan [2]int)
	var wg sync.WaitGroup
	rb := regionBytes(r.p.o)
	mem := r.c.buf.Bytes()
	for w := 0; w < inflight; w++ {
		region := mem[int64(w)*rb : int64(w+1)*rb]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				fn(b[0], b[1], region)
			}
		}()
	}
	for _, b := range r.p.batches() {
		if ctx.Err() != nil {
			break
		}
		work <- b
	}
	close(work)
	wg.Wait()
}

// carve lays objects lo..hi-1 out in region, 4 KiB aligned.
func carve(region []byte, sizes []int64) [][]byte {
	out := make([][]byte, len(sizes))
	var off int64
	for i, n := range sizes {
		out[i] = region[off : off+n : off+n]
		off += (n + 4095) &^ 4095
	}
	return out
}

// runPhase times one phase over all batches: batch moves the objects
// lo..hi through the worker's region and counts them with r.tally.
func (c *cluster) runPhase(ctx context.Context, p *plan, name string, stages []string,
	batch func(r *phaseRunner, ph *Phase, samples *stageSamples, lo, hi int, region []byte)) Phase {
	var ph Phase
	samples := newStageSamples(len(p.keys), stages...)
	r := &phaseRunner{c: c, p: p}
	p.o.Progress.Start(name, len(p.keys), p.total)
	t0 := time.Now()
	r.each(ctx, func(lo, hi int, region []byte) { batch(r, &ph, samples, lo, hi, region) })
	ph.Elapsed = time.Since(t0)
	p.o.Progress.Finish()
	ph.Stages = samples.stages()
	return ph
}

// tally counts one batch's results (objects lo..) into ph under r.mu: a
// failure bumps Failed and keeps the first error, naming op and the key;
// a success adds its object and bytes and is handed to ok (key index i,
// batch index j). The progress bar advances by the whole batch.
func (r *phaseRunner) tally(ph *Phase, op string, lo int, res []client.Result, ok func(i, j int, x client.Result)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int
	var bytes int64
	for j, x := range res {
		i := lo + j
		if x.Err != nil {
			ph.Failed++
			if ph.FirstErr == nil {
				ph.FirstErr = fmt.Errorf("%s %s: %w", op, r.p.keys[i], x.Err)
			}
			continue
		}
		n++
		bytes += r.p.sizes[i]
		ok(i, j, x)
	}
	ph.Objects += n
	ph.Bytes += bytes
	r.p.o.Progress.Add(len(res), bytes)
}

func (c *cluster) putPhase(ctx context.Context, p *plan, stored []bool) Phase {
	stages := []string{"master place", "owner staging", "transfer (engine WRITE)", "object-store store"}
	return c.runPhase(ctx, p, "put", stages, func(r *phaseRunner, ph *Phase, samples *stageSamples, lo, hi int, region []byte) {
		srcs := carve(region, p.sizes[lo:hi])
		for j, b := range srcs {
			fill(p.o.Seed, lo+j, b)
		}
		res := c.client.Put(ctx, p.keys[lo:hi], srcs)
		r.tally(ph, "put", lo, res, func(i, _ int, x client.Result) {
			stored[i] = true
			samples.add(x.Timings.Master, x.Timings.Owner, x.Timings.Transfer, x.Timings.Commit)
		})
	})
}

func (c *cluster) getPhase(ctx context.Context, p *plan, rep *Report) Phase {
	stages := []string{"master query", "object-store load", "transfer (engine READ)"}
	return c.runPhase(ctx, p, "get", stages, func(r *phaseRunner, ph *Phase, samples *stageSamples, lo, hi int, region []byte) {
		dsts := carve(region, p.sizes[lo:hi])
		for _, b := range dsts {
			// A transfer that silently wrote nothing must not pass
			// verification with what an earlier batch left here.
			clear(b)
		}
		res := c.client.Get(ctx, p.keys[lo:hi], dsts)
		diffs := make([]int64, len(res))
		for j, x := range res {
			diffs[j] = -1
			if x.Err == nil {
				if x.Size != p.sizes[lo+j] {
					diffs[j] = min(x.Size, p.sizes[lo+j])
				} else {
					diffs[j] = verify(p.o.Seed, lo+j, dsts[j])
				}
			}
		}
		r.tally(ph, "get", lo, res, func(i, j int, x client.Result) {
			samples.add(x.Timings.Master, x.Timings.Owner, x.Timings.Transfer)
			if diffs[j] >= 0 {
				rep.MismatchCount++
				if len(rep.Mismatches) < 10 {
					rep.Mismatches = append(rep.Mismatches, Mismatch{Index: i, Key: string(p.keys[i]), Offset: diffs[j]})
				}
				return
			}
			rep.Verified++
			rep.VerifiedBytes += p.sizes[i]
		})
	})
}

// storageKey is the object-store key the owner uses for a requester key.
func storageKey(key []byte) string {
	return string(filestorage.StorageKey(config.DefaultTenant, key))
}

// corrupt flips one byte of each listed object in the object store,
// behind the owner's back.
func (c *cluster) corrupt(ctx context.Context, p *plan, idx []int) error {
	for _, i := range idx {
		b := make([]byte, p.sizes[i])
		fill(p.o.Seed, i, b)
		b[len(b)/2] ^= 0xff
		if err := c.direct.Put(ctx, storageKey(p.keys[i]), b); err != nil {
			return fmt.Errorf("object %d: %w", i, err)
		}
	}
	return nil
}

// cleanup deletes the stored objects from a real store, 16 at a time,
// and returns how many were deleted.
func (c *cluster) cleanup(ctx context.Context, p *plan, stored []bool) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	n := 0
	var firstErr error
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, ok := range stored {
		if !ok {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := c.direct.Delete(ctx, storageKey(p.keys[i]))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			n++
		}()
	}
	wg.Wait()
	if firstErr != nil {
		c.log.Warn("could not delete every demo object; remove them with `ferry objstore rm`", "deleted", n,
			"prefix", "demo/"+p.run+"/", "err", firstErr)
	}
	return n
}
