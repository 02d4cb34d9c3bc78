package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// State is a request's or a batch's state, with Mooncake's numbering.
type State int32

// States. Ferry produces Waiting, Completed, Failed and (after
// Batch.Cancel) Canceled.
const (
	Waiting   = State(transport.StateWaiting)
	Pending   = State(transport.StatePending)
	Invalid   = State(transport.StateInvalid)
	Canceled  = State(transport.StateCanceled)
	Completed = State(transport.StateCompleted)
	Timeout   = State(transport.StateTimeout)
	Failed    = State(transport.StateFailed)
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "WAITING"
	case Pending:
		return "PENDING"
	case Invalid:
		return "INVALID"
	case Canceled:
		return "CANCELED"
	case Completed:
		return "COMPLETED"
	case Timeout:
		return "TIMEOUT"
	case Failed:
		return "FAILED"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Request is one transfer. Local is the address of Length bytes inside
// memory registered with this engine (build it with Addr); TargetAddr is
// the peer's virtual address inside a buffer of segment Target. A Read
// copies the remote bytes into local memory; a Write copies local bytes to
// the peer. The local memory must not be touched until the request is
// finished.
type Request struct {
	Op         transport.Opcode
	Local      uint64
	Target     SegmentID
	TargetAddr uint64
	Length     uint64
}

// TransferStatus is the state of a request or a batch. Transferred is a
// lower bound of the bytes moved. Err is set when State is Failed.
type TransferStatus struct {
	State       State
	Transferred uint64
	Err         error
}

// Batch holds up to a fixed number of requests (its capacity). Submit may
// be called several times until the capacity is used; Reset makes a
// finished batch reusable, Free retires it. A Batch is safe for concurrent
// use, and its steady-state Submit/finish path allocates nothing.
type Batch struct {
	e      *Engine
	tasks  []transport.Task
	via    []int   // transport index per task
	start  []int64 // submit time per task, ns since e.epoch
	groups [][]*transport.Task
	hook   func(*transport.Task)

	mu      sync.Mutex // serializes Submit, Reset, Free, Cancel
	freed   bool
	count   atomic.Int32 // tasks in use, published after they are set up
	pending atomic.Int64 // tasks submitted and not finished
	done    chan struct{}

	// cmu orders failover resubmissions against Cancel: a failover
	// checks canceling and sets via under it.
	cmu       sync.Mutex
	canceling bool
	cgroups   [][]*transport.Task // Cancel's per-transport scratch

	notifyOn  atomic.Bool
	notify    Notify
	notifyTo  SegmentID
	notifySet atomic.Bool // notify already sent
}

// AllocateBatch returns a batch for up to capacity requests.
func (e *Engine) AllocateBatch(capacity int) (*Batch, error) {
	if capacity <= 0 || capacity > 1<<24 {
		return nil, fmt.Errorf("%w: batch capacity %d (want 1..%d)", ErrInvalidArgument, capacity, 1<<24)
	}
	if e.isClosed() {
		return nil, ErrClosed
	}
	b := &Batch{
		e:       e,
		tasks:   make([]transport.Task, capacity),
		via:     make([]int, capacity),
		start:   make([]int64, capacity),
		groups:  make([][]*transport.Task, len(e.trs)),
		cgroups: make([][]*transport.Task, len(e.trs)),
		done:    make(chan struct{}, 1),
	}
	for i := range b.groups {
		b.groups[i] = make([]*transport.Task, 0, capacity)
	}
	b.hook = b.onFinish
	return b, nil
}

// Capacity is the most requests the batch holds.
func (b *Batch) Capacity() int { return len(b.tasks) }

// Len is the number of requests submitted since allocation or Reset.
func (b *Batch) Len() int { return int(b.count.Load()) }

// Submit validates reqs and starts them. Either all requests are accepted
// or none: ErrTooManyRequests when they exceed the remaining capacity,
// ErrInvalidArgument for a bad opcode, an unknown target or a range that
// wraps, ErrAddressNotRegistered when a local range is not inside one
// registered region. A target range outside the cached descriptor makes
// the engine refetch it once; if it is still outside, that request fails
// (Status reports ErrAddressNotRegistered). Zero-length requests complete
// at once. reqs is not retained.
func (b *Batch) Submit(reqs []Request) error { return b.submit(reqs, nil) }

// SubmitWithNotify is Submit that also sends n to the target of reqs[0]
// when BatchStatus (or Wait) first sees the whole batch completed.
func (b *Batch) SubmitWithNotify(reqs []Request, n Notify) error { return b.submit(reqs, &n) }

func (b *Batch) submit(reqs []Request, n *Notify) error {
	e := b.e
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return ErrBatchFreed
	}
	if e.isClosed() {
		return ErrClosed
	}
	base := int(b.count.Load())
	if len(reqs) > len(b.tasks)-base {
		return fmt.Errorf("%w: %d requests, %d of %d slots left", ErrTooManyRequests, len(reqs), len(b.tasks)-base, len(b.tasks))
	}
	for i := range reqs {
		if err := e.validate(&reqs[i]); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	if n != nil && len(reqs) > 0 {
		b.notify, b.notifyTo = *n, reqs[0].Target
		b.notifySet.Store(false)
		b.notifyOn.Store(true)
	}
	now := int64(time.Since(e.epoch))
	for i := range reqs {
		r := &reqs[i]
		idx := base + i
		t := &b.tasks[idx]
		reg, _ := e.regions.Find(r.Local, r.Length)
		t.Op = r.Op
		t.Local = reg.Slice(r.Local, r.Length)
		t.LocalAddr = r.Local
		t.Target = e.segment(r.Target)
		t.TargetAddr = r.TargetAddr
		t.Attempt = 0
		t.Index = idx
		t.Reset(b.hook)
		b.via[idx] = -1
		b.start[idx] = now
	}
	b.pending.Add(int64(len(reqs)))
	b.count.Store(int32(base + len(reqs)))
	var refreshed *transport.Segment // refetch each segment at most once per Submit
	for i := range reqs {
		b.route(&b.tasks[base+i], &refreshed)
	}
	for ti, g := range b.groups {
		if len(g) == 0 {
			continue
		}
		tm := e.tm[ti]
		tm.requests.Add(float64(len(g)))
		tm.inflight.Add(float64(len(g)))
		if err := e.trs[ti].Submit(g); err != nil {
			for _, t := range g {
				t.Finish(err)
			}
		}
		clear(g)
		b.groups[ti] = g[:0]
	}
	return nil
}

// validate checks one request before anything is started.
func (e *Engine) validate(r *Request) error {
	if r.Op != transport.Read && r.Op != transport.Write {
		return fmt.Errorf("%w: opcode %d", ErrInvalidArgument, r.Op)
	}
	if r.Local+r.Length < r.Local || r.TargetAddr+r.Length < r.TargetAddr {
		return fmt.Errorf("%w: range of %d bytes wraps the address space", ErrInvalidArgument, r.Length)
	}
	if e.segment(r.Target) == nil {
		return fmt.Errorf("%w: unknown target segment %d", ErrInvalidArgument, r.Target)
	}
	if _, ok := e.regions.Find(r.Local, r.Length); !ok {
		return fmt.Errorf("%w: local [%#x+%d]", ErrAddressNotRegistered, r.Local, r.Length)
	}
	return nil
}

// route picks a transport for t and queues it in its group, or finishes t
// at once (zero length, uncovered target, no transport). refreshed is the
// segment already refetched during this Submit.
func (b *Batch) route(t *transport.Task, refreshed **transport.Segment) {
	e := b.e
	if len(t.Local) == 0 {
		b.finalize(t, Completed)
		return
	}
	seg := t.Target
	d := seg.Desc()
	if (e.cfg.DisableMetaCache || !d.Covers(t.TargetAddr, t.Length())) && *refreshed != seg {
		*refreshed = seg
		if err := e.refreshMiss(seg); err != nil {
			e.log.Debug("descriptor refetch failed", "segment", seg.Name, "err", err)
		}
		d = seg.Desc()
	}
	if !d.Covers(t.TargetAddr, t.Length()) {
		b.fail(t, fmt.Errorf("%w: segment %s has no buffer holding [%#x+%d]", ErrAddressNotRegistered, seg.Name, t.TargetAddr, t.Length()))
		return
	}
	ti := e.pick(d, -1)
	if ti < 0 {
		b.fail(t, fmt.Errorf("%w: no installed transport reaches segment %s (protocol %q)", ErrNoTransport, seg.Name, d.Protocol))
		return
	}
	b.via[t.Index] = ti
	b.groups[ti] = append(b.groups[ti], t)
}

// fail ends t with err without involving a transport.
func (b *Batch) fail(t *transport.Task, err error) {
	t.Reset(nil)
	t.Finish(err)
	b.finalize(t, Failed)
}

// finalize publishes t's terminal state and wakes waiters when it was the
// batch's last pending task.
func (b *Batch) finalize(t *transport.Task, s State) {
	t.SetState(int32(s))
	if b.pending.Add(-1) == 0 {
		select {
		case b.done <- struct{}{}:
		default:
		}
	}
}

// onFinish is every task's finish hook; it runs in the transport's
// goroutine.
func (b *Batch) onFinish(t *transport.Task) {
	e := b.e
	i := t.Index
	ti := b.via[i]
	tm := e.tm[ti]
	tm.inflight.Dec()
	if err := t.Err(); err != nil {
		tm.failures.Inc()
		if errors.Is(err, transport.ErrCanceled) {
			b.finalize(t, Canceled)
			return
		}
		if t.Attempt == 0 && len(e.trs) > 1 && e.goTracked(func() { b.failover(t, ti, err) }) {
			return
		}
		b.finalize(t, Failed)
		return
	}
	if t.Op == transport.Read {
		tm.readBytes.Add(float64(t.Length()))
	} else {
		tm.writeBytes.Add(float64(t.Length()))
	}
	tm.latency.Observe(time.Duration(int64(time.Since(e.epoch)) - b.start[i]).Seconds())
	b.finalize(t, Completed)
}

// failover retries t, which failed on transport from with err, once on
// another transport that reaches the target, after refetching the target's
// descriptor (as Mooncake does on redispatch).
func (b *Batch) failover(t *transport.Task, from int, err error) {
	e := b.e
	if rerr := e.refresh(e.ctx, t.Target); rerr != nil {
		e.log.Debug("descriptor refetch before failover failed", "segment", t.Target.Name, "err", rerr)
	}
	d := t.Target.Desc()
	to := e.pick(d, from)
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if to < 0 || !d.Covers(t.TargetAddr, t.Length()) || b.canceling {
		b.finalize(t, Failed)
		return
	}
	e.log.Debug("failing over", "segment", t.Target.Name, "from", e.trNames[from], "to", e.trNames[to], "err", err)
	e.tm[from].failovers.Inc()
	t.Attempt++
	t.Reset(b.hook)
	b.via[t.Index] = to
	tm := e.tm[to]
	tm.requests.Inc()
	tm.inflight.Inc()
	if serr := e.trs[to].Submit([]*transport.Task{t}); serr != nil {
		t.Finish(serr)
	}
}

// Status returns the state of request i (0-based, in submission order).
func (b *Batch) Status(i int) (TransferStatus, error) {
	if i < 0 || i >= int(b.count.Load()) {
		return TransferStatus{}, fmt.Errorf("%w: request index %d of %d", ErrInvalidArgument, i, b.count.Load())
	}
	t := &b.tasks[i]
	s := State(t.State())
	st := TransferStatus{State: s, Transferred: t.Transferred()}
	if s == Failed || s == Canceled {
		st.Err = t.Err()
	}
	return st, nil
}

// BatchStatus returns Failed if any request failed (Err is the first
// failure), else Canceled if Cancel ended any request (Err is the first
// one's error, wrapping transport.ErrCanceled), Completed when all
// completed, Waiting otherwise; Transferred is the sum. The first call that sees Completed sends the batch's notify
// (SubmitWithNotify); a send failure is logged.
func (b *Batch) BatchStatus() TransferStatus {
	n := int(b.count.Load())
	st := TransferStatus{State: Completed}
	for i := 0; i < n; i++ {
		t := &b.tasks[i]
		st.Transferred += t.Transferred()
		switch State(t.State()) {
		case Completed:
		case Failed:
			if st.State != Failed {
				st.State = Failed
				st.Err = t.Err()
			}
		case Canceled:
			if st.State != Failed && st.State != Canceled {
				st.State = Canceled
				st.Err = t.Err()
			}
		default:
			if st.State == Completed {
				st.State = Waiting
			}
		}
	}
	if st.State == Completed && b.notifyOn.Load() && b.notifySet.CompareAndSwap(false, true) {
		b.sendNotify()
	}
	return st
}

func (b *Batch) sendNotify() {
	e := b.e
	b.mu.Lock()
	to, n := b.notifyTo, b.notify
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.HandshakeConnectTimeout+refreshTimeout)
	defer cancel()
	if err := e.SendNotify(ctx, to, n); err != nil {
		e.log.Warn("batch notify failed", "target", to, "err", err)
	}
}

// Wait blocks until every submitted request is finished or ctx is done.
// It returns nil when all completed, the first request's error when one
// failed or was cancelled, or an error wrapping ErrContext and ctx's
// error. In that last case the requests go on: transports may still
// write (Read) or read (Write) their local memory, and Free stays refused
// until they finish. A caller that gives up must call Cancel before it
// reuses that memory.
func (b *Batch) Wait(ctx context.Context) error {
	for b.pending.Load() > 0 {
		select {
		case <-b.done:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrContext, ctx.Err())
		}
	}
	b.wakeNext()
	st := b.BatchStatus()
	if st.State == Failed || st.State == Canceled {
		return st.Err
	}
	return nil
}

// wakeNext passes the "all finished" signal on to another waiter, since
// finalize sends it only once.
func (b *Batch) wakeNext() {
	select {
	case b.done <- struct{}{}:
	default:
	}
}

// Cancel ends the batch's requests that are still in flight and returns
// once no transport touches their local memory any more and every request
// is finished. Transports that implement transport.Canceler drop the
// requests (they finish with state Canceled and an error wrapping
// transport.ErrCanceled, unless they ended first); requests on other
// transports are waited for, and no request is failed over once Cancel
// has begun. A cancelled Read may have written part of its local range,
// a cancelled Write part of its remote range. Cancel returns within the
// transports' dead-peer timeouts; afterwards Reset and Free succeed.
// Cancel on a freed or finished batch does nothing. It must not be
// called from a request's finish path.
func (b *Batch) Cancel() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed || b.pending.Load() == 0 {
		return
	}
	e := b.e
	b.cmu.Lock()
	b.canceling = true
	n := int(b.count.Load())
	for i := 0; i < n; i++ {
		t := &b.tasks[i]
		if State(t.State()) != Waiting || b.via[i] < 0 {
			continue
		}
		b.cgroups[b.via[i]] = append(b.cgroups[b.via[i]], t)
	}
	b.cmu.Unlock()
	for ti, g := range b.cgroups {
		if c, ok := e.trs[ti].(transport.Canceler); ok && len(g) > 0 {
			c.Cancel(g)
		}
		clear(g)
		b.cgroups[ti] = g[:0]
	}
	for b.pending.Load() > 0 {
		<-b.done
	}
	b.wakeNext()
	b.cmu.Lock()
	b.canceling = false
	b.cmu.Unlock()
}

// Reset makes a finished batch reusable for Capacity new requests.
// ErrBatchBusy while requests are in flight.
func (b *Batch) Reset() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.idleLocked(); err != nil {
		return err
	}
	b.count.Store(0)
	b.notifyOn.Store(false)
	return nil
}

// Free retires the batch. ErrBatchBusy while requests are in flight (unlike
// Mooncake, a finished request need not have been polled first).
func (b *Batch) Free() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.idleLocked(); err != nil {
		return err
	}
	b.freed = true
	return nil
}

// idleLocked is ErrBatchFreed after Free, ErrBatchBusy while requests are
// in flight, and nil when the batch may be reset or freed. b.mu is held.
func (b *Batch) idleLocked() error {
	if b.freed {
		return ErrBatchFreed
	}
	if b.pending.Load() > 0 {
		return ErrBatchBusy
	}
	return nil
}

// Transfer runs reqs in a fresh batch and waits for them: a blocking
// convenience for one-off transfers. It returns nil when all completed,
// the first request's error when one failed, or, when ctx ends first, an
// error wrapping ErrContext and ctx.Err() after cancelling the requests
// still in flight (Batch.Cancel). In every case, once Transfer returns no
// transport touches the requests' local memory any more.
func (e *Engine) Transfer(ctx context.Context, reqs []Request) error {
	if len(reqs) == 0 {
		return nil
	}
	b, err := e.AllocateBatch(len(reqs))
	if err != nil {
		return err
	}
	if err := b.Submit(reqs); err != nil {
		b.Free()
		return err
	}
	err = b.Wait(ctx)
	if err != nil && errors.Is(err, ErrContext) && ctx.Err() != nil {
		b.Cancel()
	}
	if ferr := b.Free(); ferr != nil && err == nil {
		err = ferr
	}
	return err
}
