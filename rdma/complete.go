package rdma

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/transport"
)

// pollBatch is how many completions one Poll call may return.
const pollBatch = 64

// pollLoop is NIC n's completion goroutine. It stays on one OS thread,
// busy-polls the CQ for cfg.BusyPoll after the last completion, then arms
// the CQ and sleeps on the completion channel.
func (t *Transport) pollLoop(n *nic) {
	defer t.pollWG.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wcs := make([]verbs.Completion, pollBatch)
	touched := make([]*endpoint, 0, pollBatch)
	var idleSince time.Time
	for {
		k, err := n.cq.Poll(wcs)
		if err != nil {
			if t.pollCtx.Err() != nil {
				return
			}
			t.log.Error("rdma: polling CQ failed; NIC disabled", "nic", n.name, "err", err)
			n.down.Store(true)
			if t.waitEvent(n) != nil {
				return
			}
			continue
		}
		if k > 0 {
			touched = t.handleCompletions(n, wcs[:k], touched)
			idleSince = time.Time{}
			continue
		}
		if t.pollCtx.Err() != nil {
			return
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) < t.cfg.BusyPoll {
			runtime.Gosched()
			continue
		}
		if err := n.cq.ReqNotify(false); err != nil {
			t.log.Warn("rdma: arming CQ", "nic", n.name, "err", err)
		}
		if k, err = n.cq.Poll(wcs); err == nil && k > 0 {
			touched = t.handleCompletions(n, wcs[:k], touched)
			idleSince = time.Time{}
			continue
		}
		if t.waitEvent(n) != nil {
			return
		}
		idleSince = time.Time{}
	}
}

// waitEvent sleeps on the channel and acknowledges its events.
func (t *Transport) waitEvent(n *nic) error {
	if err := n.ch.Wait(t.pollCtx); err != nil {
		if t.pollCtx.Err() != nil || errors.Is(err, verbs.ErrClosed) {
			return err
		}
		// A spurious failure: back off briefly instead of spinning.
		select {
		case <-t.pollCtx.Done():
			return t.pollCtx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	for {
		cq, err := n.ch.GetEvent()
		if err != nil {
			return nil
		}
		cq.AckEvents(1)
	}
}

// handleCompletions settles one batch of completions and then posts more
// work on the endpoints that have some queued.
func (t *Transport) handleCompletions(n *nic, wcs []verbs.Completion, touched []*endpoint) []*endpoint {
	sb := t.slab
	now := nanotime()
	for k := range wcs {
		wc := &wcs[k]
		if !sb.valid(wc.WRID) {
			continue
		}
		i := int32(wc.WRID)
		s := sb.get(i)
		st := s.state.Load()
		if st != slicePosted && st != sliceOrphaned && st != sliceExpiring {
			continue // stale completion of a slot already settled
		}
		ep := s.ep
		if ep == nil || ep.n != n || int(s.qp) >= len(ep.qpNums) || ep.qpNums[s.qp] != wc.QPNum {
			continue
		}
		n.cqOut.Add(-1)
		ep.mu.Lock()
		ep.inflight[s.qp]--
		ep.total--
		drained := ep.total == 0 && ep.state.Load() == epDead
		more := ep.pending.n > 0
		ep.mu.Unlock()
		if drained {
			ep.destroy()
		}
		if !s.state.CompareAndSwap(slicePosted, sliceQueued) {
			// Timed out: the device is done with it now (late or
			// flushed), so the task may finish. While the janitor is
			// still expiring it, the janitor settles it.
			if s.state.CompareAndSwap(sliceOrphaned, sliceQueued) {
				t.settleOrphan(i, s)
			} else {
				s.state.CompareAndSwap(sliceExpiring, sliceLate)
			}
			continue
		}
		n.inflightB.Add(-int64(s.length))
		if wc.Status == verbs.StatusSuccess {
			n.observe(s.length, now-s.postedAt.Load())
			if s.op == verbs.OpRead {
				n.m.readBytes.Add(float64(s.length))
			} else {
				n.m.writeBytes.Add(float64(s.length))
			}
			s.task.t.AddTransferred(uint64(s.length))
			t.finishSlice(i, s, nil)
		} else {
			t.sliceFailed(i, s, wc)
		}
		if more {
			seen := false
			for _, e := range touched {
				seen = seen || e == ep
			}
			if !seen {
				touched = append(touched, ep)
			}
		}
	}
	for j, ep := range touched {
		ep.post()
		touched[j] = nil
	}
	return touched[:0]
}

// sliceFailed decides what a failed completion means (Mooncake's
// performPollCq): a flush is retried without blaming anyone, a local
// error moves the slice to another local NIC, anything else pauses the
// peer rail, closes the endpoint and retries after a descriptor refetch.
func (t *Transport) sliceFailed(i int32, s *slice, wc *verbs.Completion) {
	n := t.nics[s.nic]
	ep := s.ep
	s.ep = nil
	if t.closed.Load() {
		t.finishSlice(i, s, ErrClosedTransport)
		return
	}
	if wc.Status == verbs.StatusWRFlushErr {
		// The QP is in ERR: retire its endpoint and retry elsewhere
		// without charging the slice (Mooncake does the same). dispatch
		// drops the slice of a cancelled task.
		ep.kill(errQPFlushed)
		t.postAll(t.dispatch(i, s, -1, nil))
		return
	}
	if s.task.canceled.Load() {
		t.finishSlice(i, s, errCanceled)
		return
	}
	n.m.retries.Inc()
	s.retries++
	if int(s.retries) >= t.cfg.RetryCount {
		t.finishSlice(i, s, fmt.Errorf("%w: %d attempts, last: %w", ErrTransferFailed, s.retries, wc.Err()))
		return
	}
	switch {
	case wc.Status.IsLocal():
		if n.localErrs.Add(1) >= 32 {
			n.down.Store(true)
			n.localErrs.Store(0)
			t.log.Warn("rdma: local NIC disabled after repeated errors", "nic", n.name)
		}
		t.postAll(t.dispatch(i, s, int(s.nic), nil))
	default:
		p := s.task.peer
		if p.railError(int(s.peerDev), true, t.cfg.RailPause) {
			n.m.pauses.Inc()
			t.log.Warn("rdma: peer rail paused", "peer", ep.peerPath, "status", wc.Status.String(), "for", t.cfg.RailPause)
		}
		s.avoid = s.nic
		ep.kill(wc.Err())
		t.parkForRefresh(p, i)
	}
}

// parkForRefresh holds slice i until the peer's descriptor is refetched,
// then dispatches it again.
func (t *Transport) parkForRefresh(p *peer, i int32) {
	p.mu.Lock()
	p.parked.push(t.slab, i)
	start := !p.refreshing
	p.refreshing = true
	p.mu.Unlock()
	if start && !t.spawn(func() { t.refreshPeer(p) }) {
		p.mu.Lock()
		l := p.parked.take()
		p.refreshing = false
		p.mu.Unlock()
		t.failList(l, ErrClosedTransport)
	}
}

func (t *Transport) refreshPeer(p *peer) {
	ctx, cancel := context.WithTimeout(t.ctx, 2*t.cfg.HandshakeTimeout)
	err := t.host.Refresh(ctx, p.seg)
	cancel()
	if err != nil && t.ctx.Err() == nil {
		t.log.Warn("rdma: refetching peer descriptor", "segment", p.seg.Name, "err", err)
	}
	p.mu.Lock()
	l := p.parked.take()
	p.refreshing = false
	p.mu.Unlock()
	if t.closed.Load() {
		t.failList(l, ErrClosedTransport)
		return
	}
	var touched []*endpoint
	for {
		i, ok := l.pop(t.slab)
		if !ok {
			break
		}
		s := t.slab.get(i)
		avoid := int(s.avoid)
		s.avoid = -1
		touched = t.dispatch(i, s, avoid, touched)
	}
	t.postAll(touched)
}

func (t *Transport) failList(l sliceList, err error) {
	for {
		i, ok := l.pop(t.slab)
		if !ok {
			return
		}
		t.finishSlice(i, t.slab.get(i), err)
	}
}

var _ = transport.ErrClosed
