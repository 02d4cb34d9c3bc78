package fakeverbs

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

type qp struct {
	life
	pd         *pd
	dev        *device
	send, recv *cq
	num        uint32
	caps       verbs.QPCaps

	state atomic.Uint32 // verbs.QPState; written under dev.mu

	// Written under dev.mu; atomic because the peer's worker reads them.
	access  atomic.Uint32 // verbs.Access
	destQPN atomic.Uint32

	// Guarded by dev.mu.
	port        uint8
	dgid        verbs.GID
	dlid        uint16
	outstanding int                 // posted, not yet completed
	parked      []verbs.WorkRequest // lost completions, flushed on ERR
}

func (p *pd) CreateQP(typ verbs.QPType, caps verbs.QPCaps, send, recv verbs.CQ) (verbs.QP, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if typ != verbs.QPTypeRC {
		return nil, fmt.Errorf("%w: QP type %d (only RC is supported)", verbs.ErrInvalidArgument, typ)
	}
	a := p.dev.nic.cfg.Attr
	if caps.MaxSendWR == 0 || caps.MaxSGE == 0 || int(caps.MaxSendWR) > a.MaxQPWR ||
		int(caps.MaxRecvWR) > a.MaxQPWR || int(caps.MaxSGE) > a.MaxSGE {
		return nil, fmt.Errorf("%w: QP caps %+v (max_wr 1..%d, max_sge 1..%d)", verbs.ErrInvalidArgument, caps, a.MaxQPWR, a.MaxSGE)
	}
	sc, ok1 := send.(*cq)
	rc, ok2 := recv.(*cq)
	if !ok1 || !ok2 || sc.dev != p.dev || rc.dev != p.dev {
		return nil, fmt.Errorf("%w: CQs must come from the PD's device", verbs.ErrInvalidArgument)
	}
	if err := sc.check(); err != nil {
		return nil, err
	}
	if err := rc.check(); err != nil {
		return nil, err
	}
	q := &qp{life: newLife(), pd: p, dev: p.dev, send: sc, recv: rc, caps: caps}
	p.dev.nic.fabric.addQP(q)
	p.children.Add(1)
	sc.children.Add(1)
	rc.children.Add(1)
	return q, nil
}

func (q *qp) Num() uint32        { return q.num }
func (q *qp) Caps() verbs.QPCaps { return q.caps }

func (q *qp) State() (verbs.QPState, error) {
	if err := q.check(); err != nil {
		return 0, err
	}
	return verbs.QPState(q.state.Load()), nil
}

func (q *qp) transition(from, to verbs.QPState, apply func() error) error {
	if err := q.check(); err != nil {
		return err
	}
	q.dev.mu.Lock()
	defer q.dev.mu.Unlock()
	if s := verbs.QPState(q.state.Load()); s != from {
		return fmt.Errorf("%w: QP %d is %v, %v->%v needs %v: %w", verbs.ErrQPState, q.num, s, from, to, from, syscall.EINVAL)
	}
	if err := apply(); err != nil {
		return err
	}
	q.state.Store(uint32(to))
	return nil
}

func (q *qp) ToInit(a verbs.InitAttr) error {
	return q.transition(verbs.QPStateReset, verbs.QPStateInit, func() error {
		if a.Port != 1 {
			return fmt.Errorf("%w: INIT port %d (the fake NIC has port 1)", verbs.ErrInvalidArgument, a.Port)
		}
		if a.PKeyIndex != 0 {
			return fmt.Errorf("%w: pkey index %d (table has 1 entry)", verbs.ErrInvalidArgument, a.PKeyIndex)
		}
		q.port = a.Port
		q.access.Store(uint32(a.Access))
		return nil
	})
}

func (q *qp) ToRTR(a verbs.RTRAttr) error {
	return q.transition(verbs.QPStateInit, verbs.QPStateRTR, func() error {
		if a.Port != 1 || a.PathMTU.Bytes() == 0 || a.DestQPNum == 0 || a.DestQPNum >= 1<<24 {
			return fmt.Errorf("%w: RTR port %d, MTU %v, dest QP %d", verbs.ErrInvalidArgument, a.Port, a.PathMTU, a.DestQPNum)
		}
		if !a.DGID.IsZero() && int(a.SGIDIndex) >= len(q.dev.nic.cfg.GIDs) {
			// ibv_modify_qp fails with EINVAL on a bad source GID index.
			return fmt.Errorf("%w: RTR source GID index %d (table has %d entries): %w", verbs.ErrQPState, a.SGIDIndex, len(q.dev.nic.cfg.GIDs), syscall.EINVAL)
		}
		q.destQPN.Store(a.DestQPNum)
		q.dgid, q.dlid = a.DGID, a.DLID
		return nil
	})
}

func (q *qp) ToRTS(a verbs.RTSAttr) error {
	return q.transition(verbs.QPStateRTR, verbs.QPStateRTS, func() error {
		if a.RetryCount > 7 || a.RNRRetry > 7 || a.Timeout > 31 || a.SQPSN >= 1<<24 {
			return fmt.Errorf("%w: RTS %+v (retry and rnr <= 7, timeout <= 31, psn < 2^24)", verbs.ErrInvalidArgument, a)
		}
		return nil
	})
}

// ToError moves the QP to ERR from any state and flushes its outstanding
// work requests, oldest first.
func (q *qp) ToError() error {
	if err := q.check(); err != nil {
		return err
	}
	q.dev.mu.Lock()
	defer q.dev.mu.Unlock()
	q.enterErrLocked()
	return nil
}

// ToReset moves the QP to RESET and discards outstanding work requests
// without completions, as verbs does.
func (q *qp) ToReset() error {
	if err := q.check(); err != nil {
		return err
	}
	q.dev.mu.Lock()
	defer q.dev.mu.Unlock()
	q.dev.forEachQueuedLocked(q, func(it *item) { it.q = nil })
	q.parked = q.parked[:0]
	q.outstanding = 0
	q.state.Store(uint32(verbs.QPStateReset))
	return nil
}

// enterErrLocked moves q to ERR and flushes everything outstanding: the
// parked (lost) work requests, then the queued ones. dev.mu is held.
func (q *qp) enterErrLocked() {
	q.state.Store(uint32(verbs.QPStateErr))
	for i := range q.parked {
		q.completeLocked(&q.parked[i], verbs.StatusWRFlushErr)
	}
	q.parked = q.parked[:0]
	q.dev.forEachQueuedLocked(q, func(it *item) {
		if it.held {
			return // already in the device: it runs when due
		}
		it.q = nil
		q.completeLocked(&it.wr, verbs.StatusWRFlushErr)
	})
}

// completeLocked delivers the completion of wr and frees its slot.
func (q *qp) completeLocked(wr *verbs.WorkRequest, st verbs.Status) {
	q.outstanding--
	c := verbs.Completion{WRID: wr.WRID, Status: st, QPNum: q.num}
	if st == verbs.StatusSuccess {
		c.ByteLen = wr.Length
		c.Opcode = verbs.WCRDMAWrite
		if wr.Op == verbs.OpRead {
			c.Opcode = verbs.WCRDMARead
		}
	}
	q.send.push(c)
}

// PostRW queues the chain for the device worker. In ERR the requests are
// flushed at once (WR_FLUSH_ERR), as verbs does.
func (q *qp) PostRW(wrs []verbs.WorkRequest) (int, error) {
	if len(wrs) == 0 {
		return 0, nil
	}
	if err := q.check(); err != nil {
		return 0, err
	}
	good, verr := verbs.CheckWorkRequests(wrs)
	var due int64
	if d := q.dev.nic.completionDelay(); d > 0 {
		due = time.Now().Add(d).UnixNano()
	}
	q.dev.mu.Lock()
	defer q.dev.mu.Unlock()
	st := verbs.QPState(q.state.Load())
	if st != verbs.QPStateRTS && st != verbs.QPStateErr {
		return 0, fmt.Errorf("%w: post on QP %d in %v", verbs.ErrQPState, q.num, st)
	}
	nic := q.dev.nic
	instant := nic.instant.Load()
	n := 0
	for ; n < good; n++ {
		if q.outstanding >= int(q.caps.MaxSendWR) {
			if n > 0 {
				q.dev.wake()
			}
			return n, fmt.Errorf("%w: QP %d has %d outstanding (max_send_wr %d)", verbs.ErrQueueFull, q.num, q.outstanding, q.caps.MaxSendWR)
		}
		q.outstanding++
		if st == verbs.QPStateErr {
			q.completeLocked(&wrs[n], verbs.StatusWRFlushErr)
			continue
		}
		if instant {
			nic.wrs.Add(1)
			q.completeLocked(&wrs[n], verbs.StatusSuccess)
			continue
		}
		if h := nic.takeHold(); h > 0 {
			q.dev.enqueueLocked(q, &wrs[n], time.Now().Add(h).UnixNano(), true)
			continue
		}
		q.dev.enqueueLocked(q, &wrs[n], due, false)
	}
	if n > 0 {
		q.dev.wake()
	}
	return n, verr
}

// executeLocked runs one work request as the NIC would; dev.mu is held.
func (d *device) executeLocked(q *qp, wr *verbs.WorkRequest) {
	if verbs.QPState(q.state.Load()) == verbs.QPStateErr {
		q.completeLocked(wr, verbs.StatusWRFlushErr)
		return
	}
	nic := d.nic
	nic.wrs.Add(1)
	st := d.statusLocked(q, wr)
	switch st {
	case statusLost:
		q.parked = append(q.parked, *wr)
		return
	case statusOverrun:
		q.outstanding--
		q.send.setOverrun()
		q.enterErrLocked()
		return
	case verbs.StatusSuccess:
		if wr.Op == verbs.OpRead {
			nic.bytesRead.Add(uint64(wr.Length))
		} else {
			nic.bytesWritten.Add(uint64(wr.Length))
		}
		q.completeLocked(wr, st)
		return
	}
	nic.errs.Add(1)
	q.completeLocked(wr, st)
	q.enterErrLocked()
}

// executeHeldLocked runs a held work request (NIC.HoldNext): it transfers
// even if its QP entered ERR meanwhile, then completes. dev.mu is held.
func (d *device) executeHeldLocked(q *qp, wr *verbs.WorkRequest) {
	nic := d.nic
	nic.wrs.Add(1)
	st := d.transferLocked(q, wr)
	switch st {
	case verbs.StatusSuccess:
		if wr.Op == verbs.OpRead {
			nic.bytesRead.Add(uint64(wr.Length))
		} else {
			nic.bytesWritten.Add(uint64(wr.Length))
		}
	default:
		nic.errs.Add(1)
	}
	q.completeLocked(wr, st)
	if st != verbs.StatusSuccess {
		q.enterErrLocked()
	}
}

// Pseudo statuses for injected faults that produce no completion.
const (
	statusLost    verbs.Status = 1 << 30
	statusOverrun verbs.Status = 1<<30 + 1
)

// statusLocked checks and performs the transfer, returning its status.
func (d *device) statusLocked(q *qp, wr *verbs.WorkRequest) verbs.Status {
	switch d.nic.takeFault() {
	case FaultRemoteAccess:
		return verbs.StatusRemAccessErr
	case FaultRetryExceeded:
		return verbs.StatusRetryExcErr
	case FaultLoseCompletion:
		return statusLost
	case FaultCQOverrun:
		return statusOverrun
	}
	return d.transferLocked(q, wr)
}

// transferLocked checks the path, keys and bounds of wr and moves its
// bytes, returning its status. dev.mu is held.
func (d *device) transferLocked(q *qp, wr *verbs.WorkRequest) verbs.Status {
	if !d.nic.portActive() {
		return verbs.StatusRetryExcErr
	}
	if wr.Length > 1<<31 {
		return verbs.StatusLocLenErr
	}
	f := d.nic.fabric
	r := f.lookupQP(q.destQPN.Load())
	if r == nil || r.destQPN.Load() != q.num || !r.dev.nic.portActive() {
		return verbs.StatusRetryExcErr
	}
	if rs := verbs.QPState(r.state.Load()); rs != verbs.QPStateRTR && rs != verbs.QPStateRTS {
		return verbs.StatusRetryExcErr
	}
	if q.dgid.IsZero() {
		if r.dev.nic.cfg.LID != q.dlid {
			return verbs.StatusRetryExcErr
		}
	} else if !r.dev.nic.hasGID(q.dgid) {
		return verbs.StatusRetryExcErr
	}
	f.mem.RLock()
	defer f.mem.RUnlock()
	lm := q.pd.lkeys[wr.LKey]
	if lm == nil {
		return verbs.StatusLocProtErr
	}
	local := lm.span(wr.LocalAddr, wr.Length)
	if local == nil || (wr.Op == verbs.OpRead && !lm.access.Has(verbs.AccessLocalWrite)) {
		return verbs.StatusLocProtErr
	}
	need := verbs.AccessRemoteWrite
	if wr.Op == verbs.OpRead {
		need = verbs.AccessRemoteRead
	}
	rm := r.pd.rkeys[wr.RKey]
	if rm == nil || !verbs.Access(r.access.Load()).Has(need) || !rm.access.Has(need) {
		return verbs.StatusRemAccessErr
	}
	remote := rm.span(wr.RemoteAddr, wr.Length)
	if remote == nil {
		return verbs.StatusRemAccessErr
	}
	if wr.Op == verbs.OpRead {
		copy(local, remote)
		r.dev.nic.servedRead.Add(uint64(wr.Length))
	} else {
		copy(remote, local)
		r.dev.nic.servedWritten.Add(uint64(wr.Length))
	}
	return verbs.StatusSuccess
}

func (q *qp) Close() error {
	if done, err := q.begin(); done {
		return err
	}
	q.dev.mu.Lock()
	q.dev.forEachQueuedLocked(q, func(it *item) { it.q = nil })
	q.parked = nil
	q.outstanding = 0
	q.state.Store(uint32(verbs.QPStateReset))
	q.dev.mu.Unlock()
	q.dev.nic.fabric.removeQP(q)
	q.pd.children.Add(-1)
	q.send.children.Add(-1)
	q.recv.children.Add(-1)
	q.end()
	return nil
}
