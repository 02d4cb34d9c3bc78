package rdma

import (
	"fmt"
	"time"
)

// janitor runs periodic housekeeping: slice timeouts (lost completions),
// passive endpoints whose ready ACK never came, reclaiming dead
// endpoints, and re-enabling local NICs after the rail pause.
func (t *Transport) janitor() {
	period := min(time.Second, t.cfg.SliceTimeout/4, t.cfg.ReadyAckTimeout/4)
	period = max(period, 5*time.Millisecond)
	tk := time.NewTicker(period)
	defer tk.Stop()
	downSince := make([]time.Time, len(t.nics))
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tk.C:
		}
		t.expireSlices()
		t.expireEndpoints()
		for i, n := range t.nics {
			switch {
			case !n.down.Load():
				downSince[i] = time.Time{}
			case downSince[i].IsZero():
				downSince[i] = time.Now()
			case time.Since(downSince[i]) > t.cfg.RailPause:
				n.down.Store(false)
				downSince[i] = time.Time{}
				t.log.Info("rdma: local NIC re-enabled", "nic", n.name)
			}
		}
	}
}

// expireSlices fails slices posted longer than the slice timeout ago.
// Their slots stay reserved until a completion (or Close) frees them, so a
// late completion can never hit a reused slot.
func (t *Transport) expireSlices() {
	limit := nanotime() - int64(t.cfg.SliceTimeout)
	var kill []*endpoint
	t.slab.each(func(i int32, s *slice) {
		if s.state.Load() != slicePosted || s.postedAt.Load() > limit {
			return
		}
		if !s.state.CompareAndSwap(slicePosted, sliceOrphaned) {
			return
		}
		ts, ep := s.task, s.ep
		s.task = nil
		t.nics[s.nic].inflightB.Add(-int64(s.length))
		t.nics[s.nic].m.failed.Inc()
		ts.done(fmt.Errorf("%w after %s (%s -> %s)", ErrTimeout, t.cfg.SliceTimeout, ep.n.path, ep.peerPath))
		kill = append(kill, ep)
	})
	for _, ep := range kill {
		ep.kill(ErrTimeout)
	}
}

// expireEndpoints kills passive endpoints still waiting for their ready
// ACK and reclaims dead endpoints whose in-flight work is gone, or
// whose completions never came back.
func (t *Transport) expireEndpoints() {
	for _, n := range t.nics {
		var stale []*endpoint
		n.mu.Lock()
		for _, ep := range n.eps {
			ep.mu.Lock()
			if ep.state.Load() == epWaitAck && time.Since(ep.since) > t.cfg.ReadyAckTimeout {
				stale = append(stale, ep)
			}
			ep.mu.Unlock()
		}
		n.mu.Unlock()
		for _, ep := range stale {
			t.log.Warn("rdma: no ready ACK from peer; closing endpoint", "local", n.path, "peer", ep.peerPath)
			ep.kill(fmt.Errorf("%w: no ready ack", ErrHandshake))
		}
	}
	t.deadMu.Lock()
	dead := t.dead[:0]
	var reclaim []*endpoint
	for _, ep := range t.dead {
		ep.mu.Lock()
		done := ep.destroyed || ep.total == 0 || time.Since(ep.since) > t.cfg.SliceTimeout+time.Second
		ep.mu.Unlock()
		if done {
			reclaim = append(reclaim, ep)
		} else {
			dead = append(dead, ep)
		}
	}
	clear(t.dead[len(dead):])
	t.dead = dead
	t.deadMu.Unlock()
	for _, ep := range reclaim {
		ep.destroy()
		t.releaseOrphans(ep)
	}
}

// releaseOrphans frees the slots of timed-out slices of a destroyed
// endpoint: no completion can come for them any more.
func (t *Transport) releaseOrphans(ep *endpoint) {
	t.slab.each(func(i int32, s *slice) {
		if s.state.Load() == sliceOrphaned && s.ep == ep && s.state.CompareAndSwap(sliceOrphaned, sliceQueued) {
			reg := s.reg
			t.slab.release(i)
			reg.inflight.Add(-1)
		}
	})
}
