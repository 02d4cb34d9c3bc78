package rdma

import (
	"context"
	"fmt"

	"github.com/ferrylabs/ferry/rdma/topology"
	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/transport"
)

// Submit slices every task and queues the slices on endpoints; posting
// happens here for connected endpoints and after the handshake for new
// ones. It never waits for the network. A task that cannot start is
// finished with an error; Submit itself fails only on a closed transport.
func (t *Transport) Submit(tasks []*transport.Task) error {
	if t.closed.Load() {
		return ErrClosedTransport
	}
	tp := t.scratch.Get().(*[]*endpoint)
	touched := (*tp)[:0]
	for _, task := range tasks {
		touched = t.submitOne(task, touched, false)
	}
	t.postAll(touched)
	clear(touched)
	*tp = touched[:0]
	t.scratch.Put(tp)
	return nil
}

// submitOne slices one task. Slices are created eagerly; each is routed
// and queued on its endpoint, which is added to touched. resumed marks a
// task coming back from a descriptor refetch (tracked as parked).
func (t *Transport) submitOne(task *transport.Task, touched []*endpoint, resumed bool) []*endpoint {
	n := task.Length()
	if n == 0 {
		t.finishEarly(task, resumed, nil)
		return touched
	}
	reg := t.findRegion(task.LocalAddr, n)
	if reg == nil {
		t.finishEarly(task, resumed, fmt.Errorf("rdma: local range [%#x,+%d): %w", task.LocalAddr, n, transport.ErrAddressNotRegistered))
		return touched
	}
	if task.Target == nil {
		t.finishEarly(task, resumed, fmt.Errorf("rdma: task without target segment: %w", transport.ErrAddressNotRegistered))
		return touched
	}
	var op verbs.Op
	switch task.Op {
	case transport.Read:
		op = verbs.OpRead
	case transport.Write:
		op = verbs.OpWrite
	default:
		t.finishEarly(task, resumed, fmt.Errorf("rdma: invalid opcode %d: %w", task.Op, ErrTransferFailed))
		return touched
	}
	p := t.peerFor(task.Target)
	v := p.currentView()
	if len(v.paths) == 0 {
		t.finishEarly(task, resumed, fmt.Errorf("rdma: segment %s publishes no RDMA devices: %w", task.Target.Name, ErrNotSupported))
		return touched
	}
	if !v.covers(task.TargetAddr, n) {
		// The peer may have registered the buffer after we fetched its
		// descriptor: refetch once, in the background, then retry.
		t.live.park(task)
		if !t.spawn(func() { t.refreshAndResubmit(task) }) {
			t.finishEarly(task, true, ErrClosedTransport)
		}
		return touched
	}
	ts := newTaskState(task, &t.live)
	ts.peer = p
	if !t.live.start(task, ts, resumed) {
		// Cancelled while its descriptor was refetched.
		ts.t, ts.peer, ts.live = nil, nil, nil
		taskPool.Put(ts)
		return touched
	}
	sb := t.slab
	frag := t.cfg.SliceSize / t.cfg.FragmentRatio
	for off := uint64(0); off < n; {
		laddr, raddr, rem := task.LocalAddr+off, task.TargetAddr+off, n-off
		bi := v.find(raddr)
		if bi < 0 { // cannot happen after covers; be safe
			ts.done(fmt.Errorf("rdma: remote %#x: %w", raddr, transport.ErrAddressNotRegistered))
			break
		}
		rb := &v.bufs[bi]
		lim := min(reg.end()-laddr, rb.Addr+rb.Length-raddr, rem)
		l := min(t.cfg.SliceSize, lim)
		if rem > l && rem-l <= frag && rem <= lim {
			l = rem // merge the tail
		}
		i, ok := sb.alloc()
		if !ok {
			ts.pending.Add(1)
			ts.done(fmt.Errorf("%w: more than %d slices in flight", ErrTooLarge, t.cfg.MaxSlices))
			break
		}
		s := sb.get(i)
		s.task, s.reg, s.local, s.remote, s.length, s.op = ts, reg, laddr, raddr, uint32(l), op
		s.retries, s.next, s.avoid = 0, -1, -1
		ts.pending.Add(1)
		reg.inflight.Add(1)
		touched = t.dispatch(i, s, -1, touched)
		off += l
	}
	ts.done(nil) // release the guard
	return touched
}

// finishEarly finishes a task that was never sliced. A resumed (parked)
// task is finished only if Cancel has not finished it already.
func (t *Transport) finishEarly(task *transport.Task, resumed bool, err error) {
	if resumed && !t.live.claim(task) {
		return
	}
	task.Finish(err)
}

// refreshAndResubmit refetches the target's descriptor and submits the
// task again, or fails it if the remote range is still not registered.
func (t *Transport) refreshAndResubmit(task *transport.Task) {
	ctx, cancel := context.WithTimeout(t.ctx, 2*t.cfg.HandshakeTimeout)
	err := t.host.Refresh(ctx, task.Target)
	cancel()
	if t.closed.Load() {
		t.finishEarly(task, true, ErrClosedTransport)
		return
	}
	if err != nil {
		t.finishEarly(task, true, fmt.Errorf("rdma: remote range [%#x,+%d) of %s not covered, refresh failed: %w: %w",
			task.TargetAddr, task.Length(), task.Target.Name, transport.ErrAddressNotRegistered, err))
		return
	}
	v := t.peerFor(task.Target).currentView()
	if !v.covers(task.TargetAddr, task.Length()) {
		t.finishEarly(task, true, fmt.Errorf("rdma: remote range [%#x,+%d) of %s: %w", task.TargetAddr, task.Length(),
			task.Target.Name, transport.ErrAddressNotRegistered))
		return
	}
	touched := t.submitOne(task, nil, true)
	t.postAll(touched)
}

// dispatch routes slice i to a (local NIC, peer NIC) pair and queues it on
// that endpoint. avoid is a local NIC to skip if another one is usable.
func (t *Transport) dispatch(i int32, s *slice, avoid int, touched []*endpoint) []*endpoint {
	ts := s.task
	if ts.canceled.Load() {
		t.finishSlice(i, s, errCanceled)
		return touched
	}
	p := ts.peer
	for attempt := 0; attempt < 3; attempt++ {
		v := p.currentView()
		bi := v.find(s.remote)
		if bi < 0 || s.remote-v.bufs[bi].Addr > v.bufs[bi].Length-uint64(s.length) {
			t.finishSlice(i, s, fmt.Errorf("rdma: remote [%#x,+%d) of %s: %w", s.remote, s.length, p.seg.Name, transport.ErrAddressNotRegistered))
			return touched
		}
		rb := &v.bufs[bi]
		ni := t.pickLocal(s, avoid)
		if ni < 0 {
			t.finishSlice(i, s, fmt.Errorf("%w: no usable local NIC", ErrTransferFailed))
			return touched
		}
		n := t.nics[ni]
		dev := t.pickPeer(p, v, rb.Name, int(s.retries), n.name)
		ep, err := t.endpointFor(n, p, v, dev)
		if err != nil {
			t.finishSlice(i, s, fmt.Errorf("%w: %w", ErrTransferFailed, err))
			return touched
		}
		s.nic, s.peerDev, s.rkey = int16(ni), int16(dev), rb.RKey[dev]
		ep.mu.Lock()
		if ep.state.Load() == epDead {
			ep.mu.Unlock()
			continue
		}
		s.ep = ep
		s.state.Store(sliceQueued)
		ep.pending.push(t.slab, i)
		st := ep.state.Load()
		ep.mu.Unlock()
		n.inflightB.Add(int64(s.length))
		if st == epNew {
			ep.startConnect()
		}
		for _, e := range touched {
			if e == ep {
				return touched
			}
		}
		return append(touched, ep)
	}
	t.finishSlice(i, s, fmt.Errorf("%w: endpoints keep closing", ErrTransferFailed))
	return touched
}

// pickLocal scores usable NICs: (bytes queued + this slice) / EWMA
// bandwidth, times a NUMA penalty of 1 (preferred for the buffer's
// location), 5 (available) or 10 (other). Every 100th pick is a
// round-robin probe so idle NICs keep a fresh estimate.
func (t *Transport) pickLocal(s *slice, avoid int) int {
	c := t.localRes.Lookup(s.reg.r.Location)
	k := t.picks.Add(1)
	usable := 0
	for j, n := range t.nics {
		if n.usable() && j != avoid {
			usable++
		}
	}
	if usable == 0 {
		if avoid >= 0 && t.nics[avoid].usable() {
			return avoid
		}
		return -1
	}
	if k%100 == 0 {
		r := int(k/100) % usable
		for j, n := range t.nics {
			if n.usable() && j != avoid {
				if r == 0 {
					return j
				}
				r--
			}
		}
	}
	best, bestScore := -1, 0.0
	for j, n := range t.nics {
		if !n.usable() || j == avoid {
			continue
		}
		pen := 10.0
		for _, x := range c.Preferred {
			if x == j {
				pen = 1
			}
		}
		if pen > 1 {
			for _, x := range c.Available {
				if x == j {
					pen = 5
				}
			}
		}
		score := float64(n.inflightB.Load()+int64(s.length)) / n.bandwidth() * pen
		if best < 0 || score < bestScore {
			best, bestScore = j, score
		}
	}
	return best
}

// pickPeer takes the peer NICs the peer's matrix lists for the remote
// buffer's location, rotating per slice (and by retry), and skips paused
// rails; if all are paused it takes any unpaused device, else the first
// candidate. On a slice's first attempt the affinity settings come
// first: the peer NIC named like the local NIC local
// (MC_ENABLE_DEST_DEVICE_AFFINITY, when the matrix lists it for loc), or
// the peer NICs MC_NIC_PEER_AFFINITY maps local to, if not paused.
func (t *Transport) pickPeer(p *peer, v *peerView, loc string, retry int, local string) int {
	c := v.res.Lookup(loc)
	start := int(p.rr.Add(1)) + retry
	now := nanotime()
	p.mu.Lock()
	defer p.mu.Unlock()
	if retry == 0 {
		if t.cfg.DestDeviceAffinity {
			if d, ok := v.devIdx[local]; ok && listed(c, d) && !p.pausedLocked(d, now) {
				return d
			}
		}
		if names := t.cfg.PeerAffinity[local]; len(names) > 0 {
			for j := range names {
				if d, ok := v.devIdx[names[(start+j)%len(names)]]; ok && !p.pausedLocked(d, now) {
					return d
				}
			}
		}
	}
	np := len(c.Preferred)
	for j := 0; j < np; j++ {
		d := c.Preferred[(start+j)%np]
		if !p.pausedLocked(d, now) {
			return d
		}
	}
	na := len(c.Available)
	for j := 0; j < na; j++ {
		d := c.Available[(start+j)%na]
		if !p.pausedLocked(d, now) {
			return d
		}
	}
	for d := range v.paths {
		if !p.pausedLocked(d, now) {
			return d
		}
	}
	return c.At(start % c.Len())
}

// listed reports whether the matrix entry c lists device d.
func listed(c topology.Choice, d int) bool {
	for _, x := range c.Preferred {
		if x == d {
			return true
		}
	}
	for _, x := range c.Available {
		if x == d {
			return true
		}
	}
	return false
}

// endpointFor returns the endpoint from local NIC n to peer device dev,
// through the peer's cache.
func (t *Transport) endpointFor(n *nic, p *peer, v *peerView, dev int) (*endpoint, error) {
	p.mu.Lock()
	if len(p.eps) != len(t.nics) {
		p.eps = make([][]*endpoint, len(t.nics))
	}
	row := p.eps[n.idx]
	if len(row) != len(v.paths) {
		row = make([]*endpoint, len(v.paths))
		p.eps[n.idx] = row
	}
	ep := row[dev]
	p.mu.Unlock()
	if ep != nil && ep.state.Load() != epDead && ep.peerPath == v.paths[dev] {
		return ep, nil
	}
	ep, err := t.lookupEndpoint(n, v.paths[dev], p.seg.Name)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.eps) == len(t.nics) && len(p.eps[n.idx]) == len(v.paths) {
		p.eps[n.idx][dev] = ep
	}
	p.mu.Unlock()
	return ep, nil
}

// forgetEndpoint drops ep from every peer cache.
func (t *Transport) forgetEndpoint(ep *endpoint) {
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	for _, p := range t.peers {
		p.mu.Lock()
		if ep.n.idx < len(p.eps) {
			for d, e := range p.eps[ep.n.idx] {
				if e == ep {
					p.eps[ep.n.idx][d] = nil
				}
			}
		}
		p.mu.Unlock()
	}
}

// postAll posts the queued slices of every endpoint in eps.
func (t *Transport) postAll(eps []*endpoint) {
	for _, ep := range eps {
		ep.post()
	}
}

// post posts queued slices; a QP that refuses work kills the endpoint.
func (ep *endpoint) post() {
	ep.mu.Lock()
	redo := ep.postLocked()
	perr := ep.postErr
	ep.postErr = nil
	ep.mu.Unlock()
	if perr != nil {
		ep.kill(perr)
	}
	ep.t.redispatchList(redo)
}

// finishSlice ends slice i with err (nil: success) and frees its slot.
func (t *Transport) finishSlice(i int32, s *slice, err error) {
	ts, reg := s.task, s.reg
	n := t.nics[s.nic]
	if err == nil {
		n.m.ok.Inc()
	} else {
		n.m.failed.Inc()
	}
	t.slab.release(i)
	reg.inflight.Add(-1)
	ts.done(err)
}

// requeue dispatches the slices of l again (after their endpoint died).
// charge counts the attempt against the slice's retry budget.
func (t *Transport) requeue(l sliceList, charge bool) {
	var touched []*endpoint
	sb := t.slab
	for {
		i, ok := l.pop(sb)
		if !ok {
			break
		}
		s := sb.get(i)
		t.nics[s.nic].inflightB.Add(-int64(s.length))
		s.ep = nil
		if t.closed.Load() {
			t.finishSlice(i, s, ErrClosedTransport)
			continue
		}
		if s.task.canceled.Load() {
			t.finishSlice(i, s, errCanceled)
			continue
		}
		if charge {
			s.retries++
			if int(s.retries) >= t.cfg.RetryCount {
				t.finishSlice(i, s, fmt.Errorf("%w: %d attempts", ErrTransferFailed, s.retries))
				continue
			}
		}
		touched = t.dispatch(i, s, -1, touched)
	}
	t.postAll(touched)
}

// redispatchList re-routes slices a QP refused to take.
func (t *Transport) redispatchList(l sliceList) {
	if l.n > 0 {
		t.requeue(l, true)
	}
}
