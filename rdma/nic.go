package rdma

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ferrylabs/ferry/rdma/topology"
	"github.com/ferrylabs/ferry/rdma/verbs"
)

// nominalBW is the bandwidth (bytes per ns) a NIC's EWMA starts from and
// is clamped around: 12.5 GB/s, a 100 Gb/s port.
const nominalBW = 12.5

// nic is one local RDMA device: PD, completion channel, one CQ, and the
// endpoints towards peer NICs. A NIC that failed to open stays as a
// closed placeholder so indices match the descriptor's key lists.
type nic struct {
	idx  int
	name string
	numa int
	path string // "<server>@<name>"
	open bool

	dev verbs.Device
	pd  verbs.PD
	ch  verbs.CompChannel
	cq  verbs.CQ

	cfg      verbs.Config
	port     uint8
	gid      verbs.GID
	gidIndex int
	lid      uint16
	mtu      verbs.MTU

	down      atomic.Bool  // deactivated after repeated local errors
	cqOut     atomic.Int32 // completions outstanding on cq
	cqCap     int32
	inflightB atomic.Int64  // bytes posted, not completed
	bw        atomic.Uint64 // EWMA bandwidth, float64 bits, bytes/ns
	localErrs atomic.Int32

	mu  sync.Mutex
	eps map[string]*endpoint // by peer NIC path

	m nicMetrics
}

func (n *nic) usable() bool { return n.open && !n.down.Load() }

func (n *nic) bandwidth() float64 { return math.Float64frombits(n.bw.Load()) }

// observe folds one completed slice into the EWMA bandwidth. Only the
// NIC's completion goroutine calls it.
func (n *nic) observe(bytes uint32, ns int64) {
	if ns <= 0 {
		ns = 1
	}
	sample := float64(bytes) / float64(ns)
	const alpha = 0.01
	v := n.bandwidth()*(1-alpha) + sample*alpha
	v = min(max(v, nominalBW*0.1), nominalBW*10)
	n.bw.Store(math.Float64bits(v))
}

// openNIC opens one device and its port, picks the GID and creates the
// PD, completion channel and CQ.
func openNIC(p verbs.Provider, idx int, tn topology.NIC, cfg verbs.Config, server string, m *metrics) (*nic, error) {
	n := &nic{idx: idx, name: tn.Name, numa: tn.NUMANode, path: server + "@" + tn.Name,
		eps: map[string]*endpoint{}, m: m.forNIC(tn.Name), port: cfg.IBPort}
	n.bw.Store(math.Float64bits(nominalBW))
	dev, err := p.Open(tn.Name)
	if err != nil {
		return n, fmt.Errorf("open %s: %w", tn.Name, err)
	}
	n.dev = dev
	fail := func(err error) (*nic, error) {
		n.closeHandles()
		return n, err
	}
	attr, err := dev.Query()
	if err != nil {
		return fail(fmt.Errorf("query %s: %w", tn.Name, err))
	}
	n.cfg = cfg.Clamp(attr)
	pa, err := dev.QueryPort(n.port)
	if err != nil {
		return fail(fmt.Errorf("query %s port %d: %w", tn.Name, n.port, err))
	}
	if pa.State != verbs.PortActive {
		return fail(fmt.Errorf("%s port %d is %s, not ACTIVE", tn.Name, n.port, pa.State))
	}
	n.lid, n.mtu = pa.LID, n.cfg.PathMTU(pa.ActiveMTU)
	if err := n.pickGID(pa, tn); err != nil {
		return fail(err)
	}
	if n.pd, err = dev.AllocPD(); err != nil {
		return fail(fmt.Errorf("alloc PD on %s: %w", tn.Name, err))
	}
	if n.ch, err = dev.CreateCompChannel(); err != nil {
		return fail(fmt.Errorf("completion channel on %s: %w", tn.Name, err))
	}
	if n.cq, err = dev.CreateCQ(n.cfg.MaxCQE, n.ch); err != nil {
		return fail(fmt.Errorf("CQ on %s: %w", tn.Name, err))
	}
	n.cqCap = int32(n.cq.Depth())
	n.open = true
	return n, nil
}

// pickGID uses MC_GID_INDEX if set, else the topology's choice if the
// device confirms it, else ranks the device's own GID table.
func (n *nic) pickGID(pa verbs.PortAttr, tn topology.NIC) error {
	try := func(idx int) bool {
		e, err := n.dev.QueryGID(n.port, idx)
		if err != nil || e.GID.IsZero() {
			return false
		}
		n.gid, n.gidIndex = e.GID, idx
		return true
	}
	if n.cfg.GIDIndex >= 0 {
		if try(n.cfg.GIDIndex) {
			return nil
		}
		return fmt.Errorf("%s: MC_GID_INDEX %d has no GID", n.name, n.cfg.GIDIndex)
	}
	if tn.GIDIndex >= 0 && try(tn.GIDIndex) {
		return nil
	}
	var table []topology.GIDEntry
	for i := 0; i < min(pa.GIDTableLen, 256); i++ {
		e, err := n.dev.QueryGID(n.port, i)
		if err != nil || e.GID.IsZero() {
			continue
		}
		te := topology.GIDEntry{Index: i, GID: e.GID}
		switch e.Type {
		case verbs.GIDTypeRoCEv2:
			te.Type = topology.GIDTypeRoCEv2
		default:
			te.Type = topology.GIDTypeIB
		}
		if e.NetdevIndex != 0 {
			te.Netdev = fmt.Sprintf("if%d", e.NetdevIndex)
		}
		table = append(table, te)
	}
	best, _, ok := topology.RankGIDs(table, pa.LinkLayer.String(), nil)
	if !ok {
		return fmt.Errorf("%s port %d: GID table is empty", n.name, n.port)
	}
	n.gid, n.gidIndex = best.GID, best.Index
	return nil
}

// closeHandles closes CQ, channel, PD and device (QPs and MRs must be
// gone).
func (n *nic) closeHandles() error {
	var errs []error
	if n.cq != nil {
		errs = append(errs, n.cq.Close())
	}
	if n.ch != nil {
		errs = append(errs, n.ch.Close())
	}
	if n.pd != nil {
		errs = append(errs, n.pd.Close())
	}
	if n.dev != nil {
		errs = append(errs, n.dev.Close())
	}
	n.open = false
	return errors.Join(errs...)
}
