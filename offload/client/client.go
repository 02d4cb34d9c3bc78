package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/offload/config"
	"github.com/ferrylabs/ferry/transport"
)

// Timings are the stages of one key's operation. Keys served by the same
// owner RPC share its stage times.
type Timings struct {
	// Master is the master query (Lookup or Place).
	Master time.Duration
	// Owner is the owner RPC: for Get, allocation plus the object-store
	// load; for Put, the slot reservation.
	Owner time.Duration
	// Transfer is the engine READ (Get) or WRITE (Put).
	Transfer time.Duration
	// Commit is the owner's upload and master record (Put only).
	Commit time.Duration
	// Total is the whole call.
	Total time.Duration
}

// Result is the outcome of one key.
type Result struct {
	// Size is the object size: for Get, the bytes written at the start of
	// the destination.
	Size int64
	// Owner is the endpoint of the owner that served the key.
	Owner string
	// Err is nil on success; otherwise it wraps one of the package's
	// sentinel errors.
	Err error
	// Timings are the per-stage durations.
	Timings Timings
}

// DefaultBatchBytes is the default cap on one owner batch: large enough
// that the owner's object-store batch keeps many GETs in flight (16
// objects of 4 MiB), small enough that an owner loads the next batch
// while the previous one transfers.
const DefaultBatchBytes = 64 << 20

// Options configure New.
type Options struct {
	// Config supplies the tenant, RPC timeouts and the default batch cap.
	Config config.Config
	// Engine moves the bytes. The caller owns it and registers the
	// destination and source memory with it.
	Engine Engine
	// Master is the master client. The caller owns it.
	Master Master
	// Dial returns the client of the owner at endpoint. Nil uses gRPC
	// connections cached per endpoint and closed by Close.
	Dial func(endpoint string) (Owner, error)
	// MaxBatchBytes caps the staging bytes one owner RPC may ask for;
	// 0 means min(Config.StagingSize / InflightPerOwner, DefaultBatchBytes).
	// An object larger than the cap goes in a batch of its own.
	MaxBatchBytes int64
	// MinStoreRate is the object-store throughput (bytes/s) the owner
	// RPCs that move object bytes (a get's load, a put's commit) are
	// allowed on top of the RPC timeout (plus 5 ms per object); 0 means
	// 32 MiB/s.
	MinStoreRate int64
	// InflightPerOwner is how many batches one call keeps in flight per
	// owner (one loading while another transfers); 0 means 2.
	InflightPerOwner int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Client is an offload requester. It is safe for concurrent use.
type Client struct {
	cfg      config.Config
	eng      Engine
	master   Master
	dial     func(string) (Owner, error)
	pool     *ownerPool
	maxBytes int64
	inflight int
	rate     int64
	log      *slog.Logger

	mu     sync.Mutex
	segs   map[string]engine.SegmentID
	closed bool
}

// New returns a requester.
func New(o Options) (*Client, error) {
	if o.Engine == nil || o.Master == nil {
		return nil, fmt.Errorf("%w: client needs an engine and a master", ErrInvalidArgument)
	}
	c := &Client{cfg: o.Config, eng: o.Engine, master: o.Master, dial: o.Dial, maxBytes: o.MaxBatchBytes,
		log: o.Logger, segs: make(map[string]engine.SegmentID)}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.rate = o.MinStoreRate
	if c.rate <= 0 {
		c.rate = 32 << 20
	}
	c.inflight = o.InflightPerOwner
	if c.inflight <= 0 {
		c.inflight = 2
	}
	if c.maxBytes <= 0 {
		// Batches small enough that one owner's loads and transfers
		// overlap, and that the batches in flight fit its staging.
		c.maxBytes = max(min(o.Config.StagingSize/int64(c.inflight), DefaultBatchBytes), 1<<20)
	}
	if c.cfg.RPCTimeout <= 0 {
		c.cfg.RPCTimeout = config.DefaultRPCTimeout
	}
	if c.cfg.RPCConnectTimeout <= 0 {
		c.cfg.RPCConnectTimeout = config.DefaultRPCConnectTimeout
	}
	if c.cfg.TenantID == "" {
		c.cfg.TenantID = config.DefaultTenant
	}
	if c.dial == nil {
		c.pool = newOwnerPool(c.cfg)
		c.dial = c.pool.get
	}
	return c, nil
}

// Close closes the owner connections the client opened. It is
// idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if c.pool != nil {
		return c.pool.close()
	}
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Client) segment(ctx context.Context, name string) (engine.SegmentID, error) {
	c.mu.Lock()
	id, ok := c.segs[name]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := c.eng.OpenSegment(ctx, name)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.segs[name] = id
	c.mu.Unlock()
	return id, nil
}

func (c *Client) forgetSegment(name string) {
	c.mu.Lock()
	delete(c.segs, name)
	c.mu.Unlock()
}

// slotBytes is the staging an owner reserves for an object: a
// power-of-two block of at least one 4 KiB page.
func slotBytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	b := int64(4096)
	for b < n {
		b <<= 1
	}
	return b
}

// Per-RPC caps besides staging bytes, so requests stay well inside
// gRPC's default 4 MiB message limit. Variables so tests can lower them.
var (
	maxBatchKeys     = 4096
	maxBatchKeyBytes = 1 << 20
)

// chunk splits idx (indices into sizes and keys) into groups whose slot
// bytes stay within limit, with at most maxBatchKeys keys and
// maxBatchKeyBytes of key bytes; an object larger than limit goes alone.
func chunk(idx []int, keys [][]byte, sizes []int64, limit int64) [][]int {
	var out [][]int
	var cur []int
	var bytes, kbytes int64
	for _, i := range idx {
		b, kb := slotBytes(sizes[i]), int64(len(keys[i]))
		if len(cur) > 0 && (bytes+b > limit || len(cur) == maxBatchKeys || kbytes+kb > int64(maxBatchKeyBytes)) {
			out = append(out, cur)
			cur, bytes, kbytes = nil, 0, 0
		}
		cur = append(cur, i)
		bytes += b
		kbytes += kb
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// masterBatches runs a per-key master query over keys in slices that
// respect the per-RPC caps, each bounded by the RPC timeout, and checks
// that every slice got one answer per key.
func (c *Client) masterBatches(ctx context.Context, keys [][]byte, call func(ctx context.Context, lo, hi int) ([]Replica, error)) ([]Replica, error) {
	out := make([]Replica, 0, len(keys))
	for lo := 0; lo < len(keys); {
		hi, kb := lo, 0
		for hi < len(keys) && hi-lo < maxBatchKeys && (hi == lo || kb+len(keys[hi]) <= maxBatchKeyBytes) {
			kb += len(keys[hi])
			hi++
		}
		mctx, cancel := c.rpcCtx(ctx)
		reps, err := call(mctx, lo, hi)
		cancel()
		if err != nil {
			return nil, err
		}
		if len(reps) != hi-lo {
			return nil, fmt.Errorf("master answered %d of %d keys", len(reps), hi-lo)
		}
		out = append(out, reps...)
		lo = hi
	}
	return out, nil
}

// groupByOwner returns, per endpoint, the indices of keys whose replica
// has no error, in a stable order.
func groupByOwner(reps []Replica, skip []bool) (endpoints []string, groups map[string][]int) {
	groups = make(map[string][]int)
	for i, r := range reps {
		if skip[i] || r.Err != nil {
			continue
		}
		if _, ok := groups[r.Endpoint]; !ok {
			endpoints = append(endpoints, r.Endpoint)
		}
		groups[r.Endpoint] = append(groups[r.Endpoint], i)
	}
	sort.Strings(endpoints)
	return endpoints, groups
}

// perOwner runs fn over every owner's chunks: owners in parallel, and
// for each owner at most c.inflight chunks at once, so the owner loads
// one batch while the previous one is being transferred, and the batches
// in flight fit its staging.
func (c *Client) perOwner(endpoints []string, groups map[string][]int, keys [][]byte, sizes []int64, fn func(ep string, part []int)) {
	var wg sync.WaitGroup
	for _, ep := range endpoints {
		parts := chunk(groups[ep], keys, sizes, c.maxBytes)
		next := make(chan []int, len(parts))
		for _, p := range parts {
			next <- p
		}
		close(next)
		for range min(c.inflight, len(parts)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range next {
					fn(ep, p)
				}
			}()
		}
	}
	wg.Wait()
}

// exhaustedRetries bounds the retries of a single-key batch refused for
// lack of staging; the waits double from 10 ms.
const exhaustedRetries = 6

// waitRetry waits before retry n (0-based) or until ctx ends.
func waitRetry(ctx context.Context, n int) bool {
	t := time.NewTimer(10 * time.Millisecond << n)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *Client) rpcCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.RPCTimeout)
}

// perObjectAllowance is the time allowed per object, on top of the
// byte allowance, for an owner RPC that loads or stores objects (one
// object-store request or file sync each).
const perObjectAllowance = 5 * time.Millisecond

// storeCtx bounds an owner RPC that moves the objects idx to or from the
// object store: the RPC timeout, plus their bytes at the minimum store
// rate, plus perObjectAllowance each.
func (c *Client) storeCtx(ctx context.Context, idx []int, sizes []int64) (context.Context, context.CancelFunc) {
	var n int64
	for _, i := range idx {
		n += sizes[i]
	}
	d := c.cfg.RPCTimeout + time.Duration(float64(n)/float64(c.rate)*float64(time.Second)) + time.Duration(len(idx))*perObjectAllowance
	return context.WithTimeout(ctx, d)
}

// Get reads keys[i] into dst[i] and returns one Result per key, in order.
// dst memory must be registered with the engine; each dst[i] must be at
// least as long as the object, whose bytes land in dst[i][:Size]. A
// failed key's destination may hold partial bytes. dst stays the
// caller's: when Get returns no transfer writes into it any more (a
// transfer still running when its lease or ctx ends is cancelled with
// engine.Batch.Cancel, which returns once the transports have let go of
// dst). Keys of
// different owners are fetched concurrently; an unreachable owner fails
// only its own keys, after at most the RPC timeouts.
func (c *Client) Get(ctx context.Context, keys [][]byte, dst [][]byte) []Result {
	start := time.Now()
	res := make([]Result, len(keys))
	fail := func(err error) []Result { return failAll(res, start, err) }
	if c.isClosed() {
		return fail(ErrClosed)
	}
	if len(keys) != len(dst) {
		return fail(fmt.Errorf("%w: %d keys but %d destinations", ErrInvalidArgument, len(keys), len(dst)))
	}
	if len(keys) == 0 {
		return res
	}
	reps, err := c.masterBatches(ctx, keys, func(ctx context.Context, lo, hi int) ([]Replica, error) {
		return c.master.Lookup(ctx, c.cfg.TenantID, keys[lo:hi])
	})
	masterT := time.Since(start)
	if err == nil && len(reps) != len(keys) {
		err = fmt.Errorf("master returned %d replicas for %d keys", len(reps), len(keys))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: lookup: %w", ErrMaster, err))
	}
	skip := make([]bool, len(keys))
	sizes := make([]int64, len(keys))
	for i, r := range reps {
		res[i].Timings.Master = masterT
		res[i].Owner = r.Endpoint
		res[i].Size = r.Size
		sizes[i] = r.Size
		switch {
		case r.Err != nil:
			res[i].Err = r.Err
			skip[i] = true
		case int64(len(dst[i])) < r.Size:
			res[i].Err = fmt.Errorf("%w: key %q is %d bytes, destination holds %d", ErrBufferTooSmall, keys[i], r.Size, len(dst[i]))
			skip[i] = true
		}
	}
	endpoints, groups := groupByOwner(reps, skip)
	c.perOwner(endpoints, groups, keys, sizes, func(ep string, part []int) {
		c.getFromOwner(ctx, ep, part, keys, sizes, dst, res, 0)
	})
	for i := range res {
		res[i].Timings.Total = time.Since(start)
	}
	return res
}

// openedBatch is an owner batch openBatch obtained: the owner, its answer,
// when the request left and how long the owner took to answer.
type openedBatch struct {
	ow     Owner
	b      OwnerBatch
	t0     time.Time
	ownerT time.Duration
}

// openBatch dials the owner ep and asks open for a batch of the keys idx
// (open bounds its own RPC). When the owner's staging is full it hands
// the halves of idx, or, for a single key, the same key after waitRetry
// (at most exhaustedRetries times), back to again and returns ok false;
// any other failure sets the error of every key in idx and returns ok
// false. With ok true the caller owns the batch and must release it.
func (c *Client) openBatch(ctx context.Context, ep string, idx []int, keys [][]byte, sizes []int64, res []Result, retry int,
	open func(ow Owner, bk [][]byte, bs []int64) (OwnerBatch, error), again func(idx []int, retry int)) (openedBatch, bool) {
	ow, err := c.dial(ep)
	if err != nil {
		setErrs(res, idx, fmt.Errorf("%w: %s: %w", ErrOwner, ep, err))
		return openedBatch{}, false
	}
	bk := make([][]byte, len(idx))
	bs := make([]int64, len(idx))
	for j, i := range idx {
		bk[j], bs[j] = keys[i], sizes[i]
	}
	t0 := time.Now()
	b, err := open(ow, bk, bs)
	ownerT := time.Since(t0)
	if err != nil {
		if errors.Is(err, ErrStagingExhausted) {
			if len(idx) > 1 {
				h := len(idx) / 2
				again(idx[:h], retry)
				again(idx[h:], retry)
				return openedBatch{}, false
			}
			if retry < exhaustedRetries && waitRetry(ctx, retry) {
				again(idx, retry+1)
				return openedBatch{}, false
			}
		}
		setErrs(res, idx, fmt.Errorf("owner %s: %w", ep, err))
		return openedBatch{}, false
	}
	return openedBatch{ow: ow, b: b, t0: t0, ownerT: ownerT}, true
}

// setErrs sets err as the result of every key in idx.
func setErrs(res []Result, idx []int, err error) {
	for _, i := range idx {
		res[i].Err = err
	}
}

// failAll sets err as the result of every key, with the time since start.
func failAll(res []Result, start time.Time, err error) []Result {
	for i := range res {
		res[i].Err = err
		res[i].Timings.Total = time.Since(start)
	}
	return res
}

// getFromOwner serves the keys idx from one owner, splitting the batch
// when the owner's staging is full.
func (c *Client) getFromOwner(ctx context.Context, ep string, idx []int, keys [][]byte, sizes []int64, dst [][]byte, res []Result, retry int) {
	ob, ok := c.openBatch(ctx, ep, idx, keys, sizes, res, retry,
		func(ow Owner, bk [][]byte, bs []int64) (OwnerBatch, error) {
			octx, cancel := c.storeCtx(ctx, idx, sizes)
			defer cancel()
			return ow.Get(octx, c.cfg.TenantID, bk, bs)
		},
		func(part []int, retry int) { c.getFromOwner(ctx, ep, part, keys, sizes, dst, res, retry) })
	if !ok {
		return
	}
	ow, b, t0, ownerT := ob.ow, ob.b, ob.t0, ob.ownerT
	// Past this point the batch is always released.
	defer func() {
		rctx, cancel := c.rpcCtx(context.WithoutCancel(ctx))
		if err := ow.Release(rctx, b.ID); err != nil {
			c.log.Debug("release offload buffer", "owner", ep, "batch", b.ID, "err", err)
		}
		cancel()
	}()
	for _, i := range idx {
		res[i].Timings.Owner = ownerT
	}
	if len(b.Addrs) != len(idx) {
		setErrs(res, idx, fmt.Errorf("%w: %s returned %d addresses for %d keys", ErrOwner, ep, len(b.Addrs), len(idx)))
		return
	}
	// The owner starts the lease just before it answers, so the lease
	// runs from the answer's arrival (the owner keeps the slots a grace
	// period longer, covering the answer's transit and our drain).
	tResp := t0.Add(ownerT)
	deadline := tResp.Add(b.Lease)
	tctx, tcancel := context.WithDeadline(ctx, deadline)
	defer tcancel()
	t1 := time.Now()
	err := c.transfer(tctx, transport.Read, b, idx, sizes, dst)
	xferT := time.Since(t1)
	if err == nil && !time.Now().Before(deadline) {
		err = fmt.Errorf("%w: %v since the owner's answer, lease %v", ErrLeaseExpired, time.Since(tResp), b.Lease)
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", ErrLeaseExpired, err)
	}
	for _, i := range idx {
		res[i].Timings.Transfer = xferT
		res[i].Err = err
	}
}

// transfer moves the objects idx between local buffers and the owner's
// slots in one engine batch. If ctx ends first (the lease deadline), it
// cancels the requests still in flight (engine.Batch.Cancel), so no byte
// lands in (or leaves) the local buffers after it returns; Cancel returns
// within the transports' dead-peer timeouts.
func (c *Client) transfer(ctx context.Context, op transport.Opcode, b OwnerBatch, idx []int, sizes []int64, local [][]byte) error {
	seg, err := c.segment(ctx, b.Segment)
	if err != nil {
		return fmt.Errorf("%w: open owner segment %s: %w", ErrTransfer, b.Segment, err)
	}
	reqs := make([]engine.Request, 0, len(idx))
	for j, i := range idx {
		if sizes[i] == 0 {
			continue
		}
		reqs = append(reqs, engine.Request{Op: op, Local: engine.Addr(local[i]), Target: seg,
			TargetAddr: b.Addrs[j], Length: uint64(sizes[i])})
	}
	if len(reqs) == 0 {
		return nil
	}
	batch, err := c.eng.AllocateBatch(len(reqs))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTransfer, err)
	}
	if err := batch.Submit(reqs); err != nil {
		batch.Free()
		return fmt.Errorf("%w: %s: %w", ErrTransfer, b.Segment, err)
	}
	err = batch.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		batch.Cancel()
	}
	if ferr := batch.Free(); ferr != nil {
		c.log.Debug("free transfer batch", "err", ferr)
	}
	if err != nil {
		c.forgetSegment(b.Segment)
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrTransfer, ctx.Err())
		}
		return fmt.Errorf("%w: %s: %w", ErrTransfer, b.Segment, err)
	}
	return nil
}

// Put writes srcs[i] as keys[i] through owners the master picks, and
// returns one Result per key. srcs memory must be registered with the
// engine and stay unchanged until Put returns; when Put returns no
// transfer reads them any more.
func (c *Client) Put(ctx context.Context, keys [][]byte, srcs [][]byte) []Result {
	start := time.Now()
	res := make([]Result, len(keys))
	fail := func(err error) []Result { return failAll(res, start, err) }
	if c.isClosed() {
		return fail(ErrClosed)
	}
	if len(keys) != len(srcs) {
		return fail(fmt.Errorf("%w: %d keys but %d sources", ErrInvalidArgument, len(keys), len(srcs)))
	}
	if len(keys) == 0 {
		return res
	}
	sizes := make([]int64, len(keys))
	for i := range srcs {
		sizes[i] = int64(len(srcs[i]))
		res[i].Size = sizes[i]
	}
	reps, err := c.masterBatches(ctx, keys, func(ctx context.Context, lo, hi int) ([]Replica, error) {
		return c.master.Place(ctx, c.cfg.TenantID, keys[lo:hi], sizes[lo:hi])
	})
	masterT := time.Since(start)
	if err == nil && len(reps) != len(keys) {
		err = fmt.Errorf("master placed %d of %d keys", len(reps), len(keys))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: place: %w", ErrMaster, err))
	}
	skip := make([]bool, len(keys))
	for i, r := range reps {
		res[i].Timings.Master = masterT
		res[i].Owner = r.Endpoint
		if r.Err != nil {
			res[i].Err = r.Err
			skip[i] = true
		}
	}
	endpoints, groups := groupByOwner(reps, skip)
	c.perOwner(endpoints, groups, keys, sizes, func(ep string, part []int) {
		c.putToOwner(ctx, ep, part, keys, sizes, srcs, res, 0)
	})
	for i := range res {
		res[i].Timings.Total = time.Since(start)
	}
	return res
}

func (c *Client) putToOwner(ctx context.Context, ep string, idx []int, keys [][]byte, sizes []int64, srcs [][]byte, res []Result, retry int) {
	ob, ok := c.openBatch(ctx, ep, idx, keys, sizes, res, retry,
		func(ow Owner, bk [][]byte, bs []int64) (OwnerBatch, error) {
			octx, cancel := c.rpcCtx(ctx)
			defer cancel()
			return ow.PutStart(octx, c.cfg.TenantID, bk, bs)
		},
		func(part []int, retry int) { c.putToOwner(ctx, ep, part, keys, sizes, srcs, res, retry) })
	if !ok {
		return
	}
	ow, b, t0, ownerT := ob.ow, ob.b, ob.t0, ob.ownerT
	abort := func() {
		rctx, cancel := c.rpcCtx(context.WithoutCancel(ctx))
		_ = ow.Release(rctx, b.ID)
		cancel()
	}
	if len(b.Addrs) != len(idx) {
		abort()
		setErrs(res, idx, fmt.Errorf("%w: %s returned %d addresses for %d keys", ErrOwner, ep, len(b.Addrs), len(idx)))
		return
	}
	deadline := t0.Add(ownerT).Add(b.Lease) // from the answer, as for Get
	tctx, tcancel := context.WithDeadline(ctx, deadline)
	t1 := time.Now()
	err := c.transfer(tctx, transport.Write, b, idx, sizes, srcs)
	tcancel()
	xferT := time.Since(t1)
	if err != nil {
		abort()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", ErrLeaseExpired, err)
		}
		setErrs(res, idx, err)
		return
	}
	t2 := time.Now()
	// The upload runs on the owner; allow for the bytes to move.
	cctx, ccancel := c.storeCtx(ctx, idx, sizes)
	errs, err := ow.PutCommit(cctx, b.ID)
	ccancel()
	commitT := time.Since(t2)
	if err == nil && len(errs) != len(idx) {
		err = fmt.Errorf("%w: %s committed %d results for %d keys", ErrOwner, ep, len(errs), len(idx))
	}
	for j, i := range idx {
		res[i].Timings.Owner = ownerT
		res[i].Timings.Transfer = xferT
		res[i].Timings.Commit = commitT
		if err != nil {
			res[i].Err = err
		} else {
			res[i].Err = errs[j]
		}
	}
}

// List returns the tenant's keys that start with prefix.
func (c *Client) List(ctx context.Context, prefix []byte) ([]Listed, error) {
	mctx, cancel := c.rpcCtx(ctx)
	defer cancel()
	l, err := c.master.List(mctx, c.cfg.TenantID, prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: list: %w", ErrMaster, err)
	}
	return l, nil
}

// Stat asks the master where each key lives and how large it is, without
// moving bytes. A missing key's Replica.Err wraps ErrNotFound.
func (c *Client) Stat(ctx context.Context, keys [][]byte) ([]Replica, error) {
	reps, err := c.masterBatches(ctx, keys, func(ctx context.Context, lo, hi int) ([]Replica, error) {
		return c.master.Lookup(ctx, c.cfg.TenantID, keys[lo:hi])
	})
	if err != nil {
		return nil, fmt.Errorf("%w: lookup: %w", ErrMaster, err)
	}
	return reps, nil
}
