package rdma

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/rdma/topology"
	"github.com/ferrylabs/ferry/transport"
)

// peerView is what the data path needs from one version of a peer's
// descriptor. It is immutable.
type peerView struct {
	desc   *metadata.SegmentDesc
	server string
	paths  []string // NIC path per peer device
	gids   []string
	lids   []uint16
	res    *topology.Resolved
	bufs   []metadata.BufferDesc // sorted by Addr, only RDMA-keyed ones
	devIdx map[string]int        // peer NIC name -> device index
}

func newPeerView(d *metadata.SegmentDesc) *peerView {
	v := &peerView{desc: d, server: d.RDMAServerName}
	if v.server == "" {
		v.server = d.Name
	}
	names := make([]string, len(d.Devices))
	v.devIdx = make(map[string]int, len(d.Devices))
	for i, dev := range d.Devices {
		names[i] = dev.Name
		v.devIdx[dev.Name] = i
		v.paths = append(v.paths, NICPath(v.server, dev.Name))
		v.gids = append(v.gids, dev.GID)
		v.lids = append(v.lids, dev.LID)
	}
	v.res = topology.Matrix(d.PriorityMatrix).Resolve(names)
	for _, b := range d.Buffers {
		if len(b.RKey) == len(d.Devices) && len(d.Devices) > 0 && b.Length > 0 {
			v.bufs = append(v.bufs, b)
		}
	}
	sort.Slice(v.bufs, func(i, j int) bool { return v.bufs[i].Addr < v.bufs[j].Addr })
	return v
}

// find returns the index of the buffer holding addr, or -1.
func (v *peerView) find(addr uint64) int {
	i := sort.Search(len(v.bufs), func(i int) bool { return v.bufs[i].Addr > addr }) - 1
	if i < 0 || addr-v.bufs[i].Addr >= v.bufs[i].Length {
		return -1
	}
	return i
}

// covers reports whether [addr, addr+n) lies in buffers of the view
// (adjacent buffers may split it).
func (v *peerView) covers(addr, n uint64) bool {
	for n > 0 {
		i := v.find(addr)
		if i < 0 {
			return false
		}
		end := v.bufs[i].Addr + v.bufs[i].Length
		if end-addr >= n {
			return true
		}
		n -= end - addr
		addr = end
	}
	return true
}

// peer is the transport's state for one remote segment: the current
// view, endpoint cache, rail health and slices parked for a refresh.
type peer struct {
	seg  *transport.Segment
	view atomic.Pointer[peerView]
	rr   atomic.Uint32

	mu          sync.Mutex
	eps         [][]*endpoint // [local NIC][peer device]
	railPause   []int64       // unix ns until which a peer device is paused
	railErrs    [][]int64     // recent error times per peer device
	refreshing  bool
	parked      sliceList
	refreshFail int64 // unix ns of the last failed refresh
}

// currentView returns the view of the segment's current descriptor,
// rebuilding it when the descriptor was replaced.
func (p *peer) currentView() *peerView {
	d := p.seg.Desc()
	if v := p.view.Load(); v != nil && v.desc == d {
		return v
	}
	v := newPeerView(d)
	p.mu.Lock()
	if old := p.view.Load(); old == nil || len(old.paths) != len(v.paths) || old.server != v.server {
		p.eps = nil
		p.railPause = make([]int64, len(v.paths))
		p.railErrs = make([][]int64, len(v.paths))
	}
	p.view.Store(v)
	p.mu.Unlock()
	return v
}

// paused reports whether peer device dev is paused at now (p.mu held).
func (p *peer) pausedLocked(dev int, now int64) bool {
	return dev < len(p.railPause) && p.railPause[dev] > now
}

// railError records an error on peer device dev. It pauses the rail when
// immediate is set or after 5 errors within 5 s, provided another rail is
// usable. It reports whether the rail got paused.
func (p *peer) railError(dev int, immediate bool, pause time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dev >= len(p.railPause) {
		return false
	}
	now := time.Now().UnixNano()
	errs := p.railErrs[dev]
	k := 0
	for _, e := range errs {
		if now-e < int64(5*time.Second) {
			errs[k] = e
			k++
		}
	}
	errs = append(errs[:k], now)
	p.railErrs[dev] = errs
	if !immediate && len(errs) < 5 {
		return false
	}
	alt := false
	for d := range p.railPause {
		if d != dev && p.railPause[d] <= now {
			alt = true
		}
	}
	if !alt {
		return false
	}
	p.railPause[dev] = now + int64(pause)
	p.railErrs[dev] = errs[:0]
	return true
}

// peerFor returns the state of seg, creating it on first use.
func (t *Transport) peerFor(seg *transport.Segment) *peer {
	t.peersMu.Lock()
	p, ok := t.peers[seg]
	if !ok {
		p = &peer{seg: seg, parked: newList()}
		t.peers[seg] = p
	}
	t.peersMu.Unlock()
	return p
}
