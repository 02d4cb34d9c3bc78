package fakeverbs

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

var liveHandles atomic.Int64

// LiveHandles returns how many fake handles (devices, PDs, MRs, CQs,
// channels, QPs) are open in this process. Tests check it is zero at the
// end to catch leaks.
func LiveHandles() int { return int(liveHandles.Load()) }

// Fabric connects fake NICs. Create one per test with NewFabric and Close
// it at the end: Close stops every device worker that is still running.
type Fabric struct {
	// mem guards every MR table: registration and deregistration write,
	// work-request execution reads (and copies) under it.
	mem sync.RWMutex

	mu      sync.Mutex
	hosts   int
	nics    []*NIC
	qps     map[uint32]*qp // by QP number, fabric-wide
	nextQPN uint32
	nextKey uint32
	closed  bool
	devs    map[*device]struct{}
}

// NewFabric returns an empty fabric.
func NewFabric() *Fabric {
	return &Fabric{qps: make(map[uint32]*qp), nextQPN: 0x100, nextKey: 0x1000, devs: make(map[*device]struct{})}
}

// NICConfig describes one fake NIC. Zero fields get defaults.
type NICConfig struct {
	// Name defaults to "mlx5_<i>" (i = index on the host).
	Name string
	// NodeGUID defaults to a fabric-unique value.
	NodeGUID uint64
	// NumaNode defaults to 0; use -1 for unknown.
	NumaNode int
	// LID defaults to a fabric-unique value.
	LID uint16
	// GIDs is the port-1 GID table. By default it is the usual RoCE table
	// of four entries: RoCEv1 and RoCEv2 link-local (fe80::), then RoCEv1
	// and RoCEv2 IPv4-mapped 10.<host>.<nic>.1 (index 3 is RoCEv2 IPv4).
	// Entries' Index fields are set from their position.
	GIDs []verbs.GIDEntry
	// LinkLayer defaults to Ethernet.
	LinkLayer verbs.LinkLayer
	// ActiveMTU defaults to 4096.
	ActiveMTU verbs.MTU
	// Attr holds device limits; zero fields default to MaxQPWR 32768,
	// MaxSGE 30, MaxCQE 4194303, MaxQP 131072, MaxMRSize 2^40.
	Attr verbs.DeviceAttr
}

// NIC is one fake NIC: its configuration, fault controls and counters.
type NIC struct {
	fabric *Fabric
	cfg    NICConfig

	mu    sync.Mutex
	port  verbs.PortState
	devs  map[*device]struct{} // open contexts, for async events
	fault Fault
	nfail int
	delay time.Duration

	holdFor time.Duration // guarded by mu
	holdN   atomic.Int64  // HoldNext credits left
	instant atomic.Bool   // SetInstant

	bytesRead, bytesWritten, wrs, errs atomic.Uint64
	servedRead, servedWritten          atomic.Uint64
}

// Fault is an injectable work-request failure.
type Fault int

// Faults for NIC.FailNext.
const (
	FaultNone Fault = iota
	// FaultRemoteAccess completes the work request with REM_ACCESS_ERR
	// without touching memory; its QP enters ERR.
	FaultRemoteAccess
	// FaultRetryExceeded completes it with RETRY_EXC_ERR; its QP enters ERR.
	FaultRetryExceeded
	// FaultLoseCompletion never completes it: it stays outstanding (using a
	// send-queue slot) until its QP enters ERR and it is flushed, as a hung
	// work request would.
	FaultLoseCompletion
	// FaultCQOverrun overruns its send CQ: polls then fail with
	// verbs.ErrCQOverrun and the device gets a CQ_ERR event.
	FaultCQOverrun
)

// Stats are a NIC's counters.
type Stats struct {
	// BytesRead and BytesWritten count successful READ and WRITE bytes.
	BytesRead, BytesWritten uint64
	// WorkRequests counts executed work requests, Errors those that failed
	// (flushes excluded).
	WorkRequests, Errors uint64
	// ServedRead and ServedWritten count bytes this NIC served as the
	// responder: read from and written into its MRs by peers.
	ServedRead, ServedWritten uint64
}

// Provider is one host's view of the fabric: the NICs it owns.
type Provider struct {
	fabric *Fabric
	nics   []*NIC
}

var _ verbs.Provider = (*Provider)(nil)

// AddHost adds a host with the given NICs (at least one) and returns its
// provider. Names must be unique on the host, GIDs across the fabric.
func (f *Fabric) AddHost(cfgs ...NICConfig) (*Provider, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("%w: a host needs at least one NIC", verbs.ErrInvalidArgument)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts++
	host := f.hosts
	p := &Provider{fabric: f}
	names := make(map[string]bool)
	for i, c := range cfgs {
		if c.Name == "" {
			c.Name = fmt.Sprintf("mlx5_%d", i)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("%w: duplicate NIC name %q", verbs.ErrInvalidArgument, c.Name)
		}
		names[c.Name] = true
		serial := len(f.nics) + 1
		if c.NodeGUID == 0 {
			c.NodeGUID = 0xfe00_0000_0000_0000 | uint64(serial)
		}
		if c.LID == 0 {
			c.LID = uint16(serial)
		}
		if c.GIDs == nil {
			c.GIDs = defaultGIDs(host, i)
		} else {
			c.GIDs = append([]verbs.GIDEntry(nil), c.GIDs...)
		}
		for j := range c.GIDs {
			c.GIDs[j].Index = j
			c.GIDs[j].Port = 1
			if g := c.GIDs[j].GID; !g.IsZero() && f.nicByGIDLocked(g) != nil {
				return nil, fmt.Errorf("%w: GID %s already on the fabric", verbs.ErrInvalidArgument, g)
			}
		}
		if c.LinkLayer == 0 {
			c.LinkLayer = verbs.LinkLayerEthernet
		}
		if c.ActiveMTU == 0 {
			c.ActiveMTU = verbs.MTU4096
		}
		a := &c.Attr
		def := func(v *int, d int) {
			if *v == 0 {
				*v = d
			}
		}
		def(&a.MaxQPWR, 32768)
		def(&a.MaxSGE, 30)
		def(&a.MaxCQE, 4194303)
		def(&a.MaxQP, 131072)
		def(&a.MaxCQ, 16777216)
		def(&a.MaxMR, 16777216)
		def(&a.MaxPD, 16777216)
		def(&a.MaxQPRdAtom, 16)
		def(&a.MaxQPInitRdAtom, 16)
		a.PhysPortCount = 1
		if a.MaxMRSize == 0 {
			a.MaxMRSize = 1 << 40
		}
		if a.FirmwareVersion == "" {
			a.FirmwareVersion = "fake-1.0"
		}
		a.NodeGUID = c.NodeGUID
		n := &NIC{fabric: f, cfg: c, port: verbs.PortActive, devs: make(map[*device]struct{})}
		f.nics = append(f.nics, n)
		p.nics = append(p.nics, n)
	}
	return p, nil
}

func defaultGIDs(host, nic int) []verbs.GIDEntry {
	ll := verbs.GIDFromAddr(netip.AddrFrom16([16]byte{0: 0xfe, 1: 0x80, 13: byte(host), 14: byte(nic), 15: 1}))
	v4 := verbs.GIDFromAddr(netip.AddrFrom4([4]byte{10, byte(host), byte(nic), 1}))
	return []verbs.GIDEntry{
		{GID: ll, Type: verbs.GIDTypeRoCEv1},
		{GID: ll, Type: verbs.GIDTypeRoCEv2},
		{GID: v4, Type: verbs.GIDTypeRoCEv1},
		{GID: v4, Type: verbs.GIDTypeRoCEv2},
	}
}

func (f *Fabric) nicByGIDLocked(g verbs.GID) *NIC {
	for _, n := range f.nics {
		if n.hasGID(g) {
			return n
		}
	}
	return nil
}

// Close stops the workers of devices that are still open and marks the
// fabric closed; later Opens fail with verbs.ErrClosed. Idempotent.
func (f *Fabric) Close() error {
	f.mu.Lock()
	f.closed = true
	devs := make([]*device, 0, len(f.devs))
	for d := range f.devs {
		devs = append(devs, d)
	}
	f.mu.Unlock()
	for _, d := range devs {
		d.stopWorker()
	}
	return nil
}

// NICs returns the host's NICs in configuration order.
func (p *Provider) NICs() []*NIC { return append([]*NIC(nil), p.nics...) }

// NIC returns the host's NIC called name, or nil.
func (p *Provider) NIC(name string) *NIC {
	for _, n := range p.nics {
		if n.cfg.Name == name {
			return n
		}
	}
	return nil
}

// Devices implements verbs.Provider.
func (p *Provider) Devices() ([]verbs.DeviceInfo, error) {
	out := make([]verbs.DeviceInfo, len(p.nics))
	for i, n := range p.nics {
		out[i] = n.Info()
	}
	return out, nil
}

// Open implements verbs.Provider.
func (p *Provider) Open(name string) (verbs.Device, error) {
	n := p.NIC(name)
	if n == nil {
		return nil, fmt.Errorf("%w: %q", verbs.ErrDeviceNotFound, name)
	}
	return p.fabric.open(n)
}

// Info returns what Devices reports for the NIC.
func (n *NIC) Info() verbs.DeviceInfo {
	return verbs.DeviceInfo{Name: n.cfg.Name, NodeGUID: n.cfg.NodeGUID, NumaNode: n.cfg.NumaNode}
}

// Config returns the NIC's configuration with defaults filled in.
func (n *NIC) Config() NICConfig {
	c := n.cfg
	c.GIDs = append([]verbs.GIDEntry(nil), c.GIDs...)
	return c
}

func (n *NIC) hasGID(g verbs.GID) bool {
	for _, e := range n.cfg.GIDs {
		if e.GID == g {
			return true
		}
	}
	return false
}

// FailNext makes the next count work requests this NIC executes as
// requester fail with f (FaultNone with any count clears it).
func (n *NIC) FailNext(f Fault, count int) {
	n.mu.Lock()
	n.fault, n.nfail = f, count
	if f == FaultNone {
		n.nfail = 0
	}
	n.mu.Unlock()
}

// takeFault consumes one injected fault, if any.
func (n *NIC) takeFault() Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nfail <= 0 {
		return FaultNone
	}
	n.nfail--
	return n.fault
}

// SetCompletionDelay delays the execution (and so the completion) of each
// work request posted afterwards by d.
func (n *NIC) SetCompletionDelay(d time.Duration) {
	n.mu.Lock()
	n.delay = d
	n.mu.Unlock()
}

func (n *NIC) completionDelay() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.delay
}

// SetPortState sets the state of port 1 (verbs.PortDown or
// verbs.PortActive, usually). Every open context of the NIC gets a
// PORT_ERR event when the port leaves ACTIVE and PORT_ACTIVE when it comes
// back. While the port is not ACTIVE, work requests executed by this NIC
// or aimed at it complete with RETRY_EXC_ERR and their QP enters ERR.
func (n *NIC) SetPortState(s verbs.PortState) {
	n.mu.Lock()
	old := n.port
	n.port = s
	devs := make([]*device, 0, len(n.devs))
	for d := range n.devs {
		devs = append(devs, d)
	}
	n.mu.Unlock()
	if (old == verbs.PortActive) == (s == verbs.PortActive) {
		return
	}
	ev := verbs.AsyncEvent{Type: verbs.EventPortErr, Port: 1}
	if s == verbs.PortActive {
		ev.Type = verbs.EventPortActive
	}
	for _, d := range devs {
		d.pushAsync(ev)
	}
}

func (n *NIC) portActive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.port == verbs.PortActive
}

func (n *NIC) portState() verbs.PortState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.port
}

// Stats returns the NIC's counters.
func (n *NIC) Stats() Stats {
	return Stats{BytesRead: n.bytesRead.Load(), BytesWritten: n.bytesWritten.Load(),
		WorkRequests: n.wrs.Load(), Errors: n.errs.Load(),
		ServedRead: n.servedRead.Load(), ServedWritten: n.servedWritten.Load()}
}

func (f *Fabric) open(n *NIC) (*device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("fakeverbs: fabric: %w", verbs.ErrClosed)
	}
	d, err := newDevice(n)
	if err != nil {
		return nil, err
	}
	f.devs[d] = struct{}{}
	n.mu.Lock()
	n.devs[d] = struct{}{}
	n.mu.Unlock()
	return d, nil
}

func (f *Fabric) forget(d *device) {
	f.mu.Lock()
	delete(f.devs, d)
	f.mu.Unlock()
	d.nic.mu.Lock()
	delete(d.nic.devs, d)
	d.nic.mu.Unlock()
}

func (f *Fabric) newKeyPair() (uint32, uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextKey += 2
	return f.nextKey, f.nextKey + 1
}

func (f *Fabric) addQP(q *qp) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextQPN++
	q.num = f.nextQPN
	f.qps[q.num] = q
}

func (f *Fabric) removeQP(q *qp) {
	f.mu.Lock()
	delete(f.qps, q.num)
	f.mu.Unlock()
}

func (f *Fabric) lookupQP(num uint32) *qp {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.qps[num]
}
