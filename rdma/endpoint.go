package rdma

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/rdma/verbs"
)

// Endpoint states.
const (
	epNew        int32 = iota // QPs created, not connected
	epConnecting              // active handshake running
	epWaitAck                 // passive side connected, waiting for the ready ACK
	epConnected               // QPs in RTS, posting allowed
	epDead                    // torn down; drains, then its QPs are destroyed
)

var errPeerRestarted = errors.New("rdma: peer presented new QP numbers")

// endpoint is MC_NUM_QP_PER_EP RC QPs from one local NIC to one peer NIC.
type endpoint struct {
	t          *Transport
	n          *nic
	peerPath   string
	peerServer string // segment name the handshake is sent to
	qps        []verbs.QP
	qpNums     []uint32

	setupMu sync.Mutex // QP transitions
	qpInit  bool
	peerQPs []uint32

	state     atomic.Int32 // written under mu
	mu        sync.Mutex
	inflight  []int
	total     int
	pending   sliceList
	wrs       []verbs.WorkRequest
	rr        int
	since     time.Time // entered epWaitAck / epDead
	destroyed bool
	postErr   error
}

func (t *Transport) newEndpoint(n *nic, peerPath, peerServer string) (*endpoint, error) {
	ep := &endpoint{t: t, n: n, peerPath: peerPath, peerServer: peerServer, pending: newList(),
		inflight: make([]int, t.cfg.QPsPerEndpoint)}
	caps := n.cfg.QPCaps()
	for range t.cfg.QPsPerEndpoint {
		qp, err := n.pd.CreateQP(verbs.QPTypeRC, caps, n.cq, n.cq)
		if err != nil {
			ep.closeQPs()
			return nil, fmt.Errorf("rdma: create QP on %s: %w", n.name, err)
		}
		ep.qps = append(ep.qps, qp)
		ep.qpNums = append(ep.qpNums, qp.Num())
	}
	ep.wrs = make([]verbs.WorkRequest, min(n.cfg.MaxWR, 256))
	return ep, nil
}

func (ep *endpoint) closeQPs() error {
	var errs []error
	for _, qp := range ep.qps {
		errs = append(errs, qp.Close())
	}
	return errors.Join(errs...)
}

// lookupEndpoint returns the live endpoint of n towards peerPath,
// creating one when create is set. fresh reports a new endpoint.
func (t *Transport) lookupEndpoint(n *nic, peerPath, peerServer string) (*endpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep := n.eps[peerPath]; ep != nil && ep.state.Load() != epDead {
		return ep, nil
	}
	ep, err := t.newEndpoint(n, peerPath, peerServer)
	if err != nil {
		return nil, err
	}
	n.eps[peerPath] = ep
	return ep, nil
}

// establish brings the QPs to RTS against the peer's QPs. It is
// idempotent for the same peer QPs (simultaneous open) and fails with
// errPeerRestarted when the QPs are already connected to other numbers.
func (ep *endpoint) establish(gidText string, lid uint16, peerQPs []uint32) error {
	ep.setupMu.Lock()
	defer ep.setupMu.Unlock()
	if len(peerQPs) != len(ep.qps) {
		return fmt.Errorf("%w: peer has %d QPs per endpoint, local %d (MC_NUM_QP_PER_EP)", ErrQPCountMismatch, len(peerQPs), len(ep.qps))
	}
	if ep.peerQPs != nil {
		if slices.Equal(ep.peerQPs, peerQPs) {
			return nil
		}
		return errPeerRestarted
	}
	var gid verbs.GID
	if gidText != "" {
		g, err := parseGID(gidText)
		if err != nil {
			return fmt.Errorf("%w: peer GID: %v", ErrBadHandshake, err)
		}
		gid = g
	}
	if err := ep.initLocked(); err != nil {
		return err
	}
	n := ep.n
	for i, qp := range ep.qps {
		a := verbs.DefaultRTRAttr()
		a.Port, a.PathMTU, a.DestQPNum, a.DGID, a.SGIDIndex, a.DLID = n.port, n.mtu, peerQPs[i], gid, uint8(n.gidIndex), lid
		if n.cfg.ServiceLevel >= 0 {
			a.SL = uint8(n.cfg.ServiceLevel)
		}
		if n.cfg.TrafficClass >= 0 {
			a.TrafficClass = uint8(n.cfg.TrafficClass)
		}
		if err := qp.ToRTR(a); err != nil {
			return fmt.Errorf("rdma: QP %d to RTR on %s: %w", qp.Num(), n.name, err)
		}
		if err := qp.ToRTS(verbs.DefaultRTSAttr()); err != nil {
			return fmt.Errorf("rdma: QP %d to RTS on %s: %w", qp.Num(), n.name, err)
		}
	}
	ep.peerQPs = slices.Clone(peerQPs)
	return nil
}

func (ep *endpoint) initLocked() error {
	if ep.qpInit {
		return nil
	}
	for _, qp := range ep.qps {
		if err := qp.ToInit(verbs.InitAttr{Port: ep.n.port, PKeyIndex: ep.n.cfg.PKeyIndex, Access: verbs.QPAccessDefault}); err != nil {
			return fmt.Errorf("rdma: QP %d to INIT on %s: %w", qp.Num(), ep.n.name, err)
		}
	}
	ep.qpInit = true
	return nil
}

// localDesc is this endpoint's half of the handshake.
func (ep *endpoint) localDesc() metadata.HandshakeDesc {
	return metadata.HandshakeDesc{LocalNICPath: ep.n.path, PeerNICPath: ep.peerPath,
		LocalGID: ep.n.gid.String(), LocalLID: ep.n.lid, QPNum: slices.Clone(ep.qpNums)}
}

// startConnect runs the active handshake in the background if the
// endpoint has not started one.
func (ep *endpoint) startConnect() {
	ep.mu.Lock()
	if ep.state.Load() != epNew {
		ep.mu.Unlock()
		return
	}
	ep.state.Store(epConnecting)
	ep.mu.Unlock()
	if !ep.t.spawn(ep.connect) {
		ep.kill(ErrClosedTransport)
	}
}

// connect is the active side (Mooncake's setupConnectionsByActive).
func (ep *endpoint) connect() {
	t := ep.t
	err := ep.activeHandshake()
	if err != nil {
		t.metrics.hsFail.Inc()
		t.log.Warn("rdma: connection handshake failed", "local", ep.n.path, "peer", ep.peerPath, "err", err)
		ep.kill(err)
		return
	}
	ep.mu.Lock()
	if ep.state.Load() == epConnecting {
		ep.state.Store(epConnected)
	}
	redo := ep.postLocked()
	ep.mu.Unlock()
	t.redispatchList(redo)
}

func (ep *endpoint) activeHandshake() error {
	t := ep.t
	ep.setupMu.Lock()
	err := ep.initLocked()
	ep.setupMu.Unlock()
	if err != nil {
		return err
	}
	req := ep.localDesc()
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	body, err := t.host.Call(ctx, ep.peerServer, metadata.FrameConnection, EncodeHandshake(&req))
	if err != nil {
		return fmt.Errorf("%w: %s -> %s: %w", ErrHandshake, ep.n.path, ep.peerPath, err)
	}
	reply, err := DecodeHandshake(body)
	if err != nil {
		return err
	}
	if reply.ReplyMsg != "" {
		return fmt.Errorf("%w: rejected by %s: %s", ErrHandshake, ep.peerPath, reply.ReplyMsg)
	}
	if reply.LocalNICPath != ep.peerPath || reply.PeerNICPath != ep.n.path {
		return fmt.Errorf("%w: reply paths %q/%q do not match %q/%q", ErrHandshake,
			reply.LocalNICPath, reply.PeerNICPath, ep.peerPath, ep.n.path)
	}
	if err := ep.establish(reply.LocalGID, reply.LocalLID, reply.QPNum); err != nil {
		return err
	}
	if reply.ReadyAck {
		ack := ep.localDesc()
		ack.ReadyAck = true
		if _, err := t.host.Call(ctx, ep.peerServer, metadata.FrameConnection, EncodeHandshake(&ack)); err != nil {
			return fmt.Errorf("%w: ready ack to %s: %w", ErrHandshake, ep.peerPath, err)
		}
	}
	return nil
}

// postLocked posts queued slices as chains, at most max_wr in flight per
// QP and max_cqe outstanding on the CQ. Slices that could not be posted
// and must go elsewhere are returned. ep.mu is held.
func (ep *endpoint) postLocked() sliceList {
	redo := newList()
	if ep.state.Load() != epConnected || ep.destroyed {
		return redo
	}
	sb := ep.t.slab
	n := ep.n
	maxWR := int(n.cfg.MaxWR)
	for ep.pending.n > 0 {
		q := ep.rr % len(ep.qps)
		for j := range ep.qps {
			if ep.inflight[j] < ep.inflight[q] {
				q = j
			}
		}
		ep.rr++
		k := min(maxWR-ep.inflight[q], ep.pending.n, len(ep.wrs))
		k = n.reserveCQ(k)
		if k <= 0 {
			break
		}
		now := nanotime()
		for j := 0; j < k; j++ {
			i, _ := ep.pending.pop(sb)
			s := sb.get(i)
			for s.task.canceled.Load() {
				// Cancelled: requeue drops it, outside ep.mu.
				s.state.Store(sliceQueued)
				redo.push(sb, i)
				if i, _ = ep.pending.pop(sb); i < 0 {
					break
				}
				s = sb.get(i)
			}
			if i < 0 {
				n.cqOut.Add(int32(j - k)) // give back the unused reservation
				k = j
				break
			}
			s.qp = int16(q)
			ep.wrs[j] = verbs.WorkRequest{WRID: uint64(i), LocalAddr: s.local, RemoteAddr: s.remote,
				Length: s.length, LKey: s.reg.lkeys[n.idx], RKey: s.rkey, Op: s.op}
			s.postedAt.Store(now)
			s.state.Store(slicePosted)
		}
		if k == 0 {
			continue
		}
		posted, err := ep.qps[q].PostRW(ep.wrs[:k])
		ep.inflight[q] += posted
		ep.total += posted
		if err == nil {
			continue
		}
		n.cqOut.Add(int32(posted - k))
		for j := k - 1; j > posted; j-- {
			i := int32(ep.wrs[j].WRID)
			sb.get(i).state.Store(sliceQueued)
			ep.pending.pushFront(sb, i)
		}
		rej := int32(ep.wrs[posted].WRID)
		sb.get(rej).state.Store(sliceQueued)
		if errors.Is(err, verbs.ErrQueueFull) {
			ep.pending.pushFront(sb, rej)
			break
		}
		redo.push(sb, rej)
		ep.postErr = err
		break
	}
	return redo
}

// reserveCQ reserves up to k CQ entries and returns how many it got.
func (n *nic) reserveCQ(k int) int {
	for {
		cur := n.cqOut.Load()
		room := int(n.cqCap - cur)
		if room <= 0 || k <= 0 {
			return 0
		}
		got := min(k, room)
		if n.cqOut.CompareAndSwap(cur, cur+int32(got)) {
			return got
		}
	}
}

// kill tears the endpoint down: it leaves the caches, its QPs go to ERR
// so posted work flushes back, and queued slices are dispatched again.
// The QPs are destroyed once nothing is in flight.
func (ep *endpoint) kill(cause error) {
	t := ep.t
	ep.mu.Lock()
	if ep.state.Load() == epDead {
		ep.mu.Unlock()
		return
	}
	ep.state.Store(epDead)
	ep.since = time.Now()
	pend := ep.pending.take()
	idle := ep.total == 0
	ep.mu.Unlock()

	n := ep.n
	n.mu.Lock()
	if n.eps[ep.peerPath] == ep {
		delete(n.eps, ep.peerPath)
	}
	n.mu.Unlock()
	t.forgetEndpoint(ep)
	for _, qp := range ep.qps {
		_ = qp.ToError()
	}
	if idle {
		ep.destroy()
	} else {
		t.deadMu.Lock()
		t.dead = append(t.dead, ep)
		t.deadMu.Unlock()
	}
	t.log.Debug("rdma: endpoint closed", "local", n.path, "peer", ep.peerPath, "cause", cause)
	t.requeue(pend, errors.Is(cause, ErrHandshake))
}

// destroy closes the QPs once; only the first call returns (and logs) a
// failure. Callers make sure nothing is in flight, or that what is in
// flight will never complete.
func (ep *endpoint) destroy() error {
	ep.mu.Lock()
	if ep.destroyed {
		ep.mu.Unlock()
		return nil
	}
	ep.destroyed = true
	ep.mu.Unlock()
	err := ep.closeQPs()
	if err != nil {
		ep.t.log.Warn("rdma: destroying QPs", "peer", ep.peerPath, "err", err)
	}
	return err
}
