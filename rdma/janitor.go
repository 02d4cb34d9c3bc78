package rdma

import (
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// janitor runs periodic housekeeping: slice timeouts (lost completions),
// passive endpoints whose ready ACK never came, reclaiming dead
// endpoints, and re-enabling local NICs after the rail pause when their
// port is ACTIVE.
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
				// After the pause, but only onto an ACTIVE port: a port
				// still down would fail every slice sent to it. Its
				// PORT_ACTIVE event re-enables it at once anyway.
				if pa, err := n.dev.QueryPort(n.port); err != nil || pa.State != verbs.PortActive {
					downSince[i] = time.Now()
					t.log.Debug("rdma: local NIC port still not active; kept out of rotation", "nic", n.name, "err", err)
					continue
				}
				n.down.Store(false)
				downSince[i] = time.Time{}
				t.log.Info("rdma: local NIC re-enabled", "nic", n.name)
			}
		}
	}
}

// expireSlices times out slices posted longer than the slice timeout ago.
// The task gets ErrTimeout as its error and posts no further slice, and
// the endpoint carrying the slice is killed: its QPs go to ERR, so the
// device flushes the work request back. The task finishes only when the
// timed-out work request has come back (late or flushed), because until
// then the device may still read or write the task's memory.
//
// A device that never returns the flush is bounded by expireEndpoints: a
// dead endpoint still holding work SliceTimeout+1s after it was killed has
// its QPs destroyed (after ibv_destroy_qp the device executes none of
// their work requests), the event is logged at error level, and the
// timed-out slices are settled then, so such a task finishes at the
// latest about 2*SliceTimeout+1s after its slice was posted.
func (t *Transport) expireSlices() {
	limit := nanotime() - int64(t.cfg.SliceTimeout)
	var kill []*endpoint
	var peers []*peer
	t.slab.each(func(i int32, s *slice) {
		if s.state.Load() != slicePosted || s.postedAt.Load() > limit {
			return
		}
		if !s.state.CompareAndSwap(slicePosted, sliceExpiring) {
			return
		}
		// The poller does not touch an expiring slice, and its task
		// cannot finish while the slice is pending.
		ts, ep := s.task, s.ep
		t.nics[s.nic].inflightB.Add(-int64(s.length))
		t.nics[s.nic].m.failed.Inc()
		ts.abort(fmt.Errorf("%w after %s (%s -> %s)", ErrTimeout, t.cfg.SliceTimeout, ep.n.path, ep.peerPath))
		if p := ts.peer; p != nil && !containsPeer(peers, p) {
			peers = append(peers, p)
		}
		if !containsEndpoint(kill, ep) {
			kill = append(kill, ep)
		}
		if !s.state.CompareAndSwap(sliceExpiring, sliceOrphaned) {
			// Its completion came meanwhile (sliceLate).
			s.state.Store(sliceQueued)
			t.settleOrphan(i, s)
		}
	})
	if len(kill) == 0 {
		return
	}
	for _, ep := range kill {
		t.log.Warn("rdma: slice timed out; closing its endpoint to flush the work", "local", ep.n.path, "peer", ep.peerPath, "timeout", t.cfg.SliceTimeout)
		ep.kill(ErrTimeout)
	}
	// Queued and parked slices of the timed-out tasks are dropped.
	t.dropQueued(peers)
}

func containsEndpoint(eps []*endpoint, ep *endpoint) bool {
	for _, e := range eps {
		if e == ep {
			return true
		}
	}
	return false
}

// settleOrphan frees timed-out slice i, whose work request the device
// has returned (or can no longer execute), and counts it done for its
// task, which already holds its timeout error.
func (t *Transport) settleOrphan(i int32, s *slice) {
	ts, reg := s.task, s.reg
	t.slab.release(i)
	reg.inflight.Add(-1)
	ts.done(nil)
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
		ep.mu.Lock()
		stuck := ep.total
		ep.mu.Unlock()
		err := ep.destroy()
		switch {
		case err != nil && stuck > 0:
			t.log.Error("rdma: device never returned work requests and destroying their QPs failed; finishing their tasks anyway, the device may still access their memory",
				"local", ep.n.path, "peer", ep.peerPath, "work_requests", stuck, "err", err)
		case stuck > 0:
			t.log.Error("rdma: device never returned flushed work requests; QPs destroyed",
				"local", ep.n.path, "peer", ep.peerPath, "work_requests", stuck)
		}
		t.releaseOrphans(ep)
	}
}

// releaseOrphans settles the timed-out slices of a destroyed endpoint: no
// completion can come for them any more, and the device no longer
// executes them.
func (t *Transport) releaseOrphans(ep *endpoint) {
	t.slab.each(func(i int32, s *slice) {
		if s.state.Load() == sliceOrphaned && s.ep == ep && s.state.CompareAndSwap(sliceOrphaned, sliceQueued) {
			t.settleOrphan(i, s)
		}
	})
}
