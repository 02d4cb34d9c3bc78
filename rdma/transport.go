package rdma

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/rdma/topology"
	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/transport"
)

// ErrClosedTransport is the error slices and tasks fail with when the
// transport closes under them. It wraps transport.ErrClosed.
var ErrClosedTransport = fmt.Errorf("rdma: %w", transport.ErrClosed)

// Transport is the RDMA transport. It implements transport.Transport and
// transport.ConnectionHandler. Create it with New.
type Transport struct {
	host     transport.Host
	log      *slog.Logger
	cfg      Config
	topo     *topology.Topology
	nics     []*nic
	localRes *topology.Resolved
	server   string
	pubSrv   bool
	metrics  *metrics

	regMu sync.Mutex
	regs  atomic.Pointer[[]*region]

	slab  *slab
	picks atomic.Uint64

	peersMu sync.Mutex
	peers   map[*transport.Segment]*peer

	live liveSet // tasks held, for Cancel

	deadMu sync.Mutex
	dead   []*endpoint

	ctx        context.Context
	cancel     context.CancelFunc
	pollCtx    context.Context
	pollCancel context.CancelFunc
	spawnMu    sync.Mutex
	stopping   bool
	wg         sync.WaitGroup
	pollWG     sync.WaitGroup
	closed     atomic.Bool
	closeOnce  sync.Once
	closeErr   error
	scratch    sync.Pool // *[]*endpoint
}

var (
	_ transport.Transport         = (*Transport)(nil)
	_ transport.ConnectionHandler = (*Transport)(nil)
)

// New discovers the NICs (rdma/topology), opens every one of them through
// the verbs provider and starts one completion goroutine per NIC. The
// configuration comes from the MC_* environment unless WithConfig is
// given. On a machine without a usable RDMA device it fails with an error
// wrapping ErrNotSupported (and transport.ErrNotSupported). The caller
// must Close the transport.
func New(h transport.Host, opts ...Option) (*Transport, error) {
	log := h.Logger()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := options{cfg: ConfigFromEnv(envLookup, log)}
	for _, f := range opts {
		f(&o)
	}
	if err := o.cfg.validate(); err != nil {
		return nil, err
	}
	if o.provider == nil {
		o.provider = verbs.System()
	}
	topo := o.topo
	if topo == nil {
		src := o.source
		if src == nil {
			src = topology.System(log)
		}
		tcfg := topology.ConfigFromEnv(os.Getenv, log)
		if o.topoCfg != nil {
			tcfg = *o.topoCfg
		}
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		topo, err = topology.Discover(ctx, src, tcfg)
		cancel()
		if errors.Is(err, topology.ErrNoDevices) {
			return nil, fmt.Errorf("%w: %w", ErrNotSupported, err)
		}
		if err != nil {
			return nil, fmt.Errorf("rdma: %w", err)
		}
	}
	m, err := newMetrics(o.reg)
	if err != nil {
		return nil, fmt.Errorf("rdma: metrics: %w", err)
	}
	t := &Transport{host: h, log: log, cfg: o.cfg, topo: topo, metrics: m, slab: newSlab(o.cfg.MaxSlices),
		peers: map[*transport.Segment]*peer{}, server: o.server, pubSrv: o.server != ""}
	if t.server == "" {
		t.server = h.LocalName()
	}
	empty := []*region{}
	t.regs.Store(&empty)
	t.live.init()
	t.scratch.New = func() any { s := make([]*endpoint, 0, 16); return &s }
	open := 0
	for i, tn := range topo.NICs {
		n, err := openNIC(o.provider, i, tn, o.cfg.Verbs, t.server, m)
		if err != nil {
			log.Warn("rdma: NIC unusable", "nic", tn.Name, "err", err)
		} else {
			open++
		}
		t.nics = append(t.nics, n)
	}
	if open == 0 {
		for _, n := range t.nics {
			_ = n.closeHandles()
		}
		return nil, fmt.Errorf("%w: none of %d NICs could be opened", ErrNotSupported, len(topo.NICs))
	}
	t.localRes = topo.Matrix.Resolve(topo.HCAs())
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.pollCtx, t.pollCancel = context.WithCancel(context.Background())
	for _, n := range t.nics {
		if n.open {
			t.pollWG.Add(1)
			go t.pollLoop(n)
			t.spawn(func() { t.eventLoop(n) })
		}
	}
	t.spawn(t.janitor)
	return t, nil
}

func (c Config) validate() error {
	switch {
	case c.SliceSize < 1 || c.SliceSize > 1<<30:
		return fmt.Errorf("rdma: slice size %d out of range [1, 1 GiB]", c.SliceSize)
	case c.FragmentRatio < 1:
		return fmt.Errorf("rdma: fragment ratio %d must be >= 1", c.FragmentRatio)
	case c.RetryCount < 1:
		return fmt.Errorf("rdma: retry count %d must be >= 1", c.RetryCount)
	case c.QPsPerEndpoint < 1 || c.QPsPerEndpoint > maxQPsInHandshake:
		return fmt.Errorf("rdma: QPs per endpoint %d out of range", c.QPsPerEndpoint)
	case c.SliceTimeout <= 0 || c.HandshakeTimeout <= 0 || c.ReadyAckTimeout <= 0:
		return fmt.Errorf("rdma: timeouts must be positive")
	case c.MaxSlices < 1:
		return fmt.Errorf("rdma: MaxSlices %d must be >= 1", c.MaxSlices)
	}
	return nil
}

// spawn runs f in a tracked goroutine unless the transport is closing.
func (t *Transport) spawn(f func()) bool {
	t.spawnMu.Lock()
	defer t.spawnMu.Unlock()
	if t.stopping {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}

// Name returns "rdma".
func (t *Transport) Name() string { return "rdma" }

// Topology returns the topology the transport runs on. It must not be
// modified.
func (t *Transport) Topology() *topology.Topology { return t.topo }

// Describe publishes the devices (name, LID, GID in HCA order), the
// priority matrix, rdma_server_name when one was set, and per buffer the
// location as name and one lkey/rkey per device (rkey empty for regions
// that are not remote-accessible).
func (t *Transport) Describe(d *metadata.SegmentDesc) {
	d.Devices = d.Devices[:0]
	for _, n := range t.nics {
		d.Devices = append(d.Devices, metadata.DeviceDesc{Name: n.name, LID: n.lid, GID: n.gid.String()})
	}
	d.PriorityMatrix = t.topo.Matrix
	if t.pubSrv {
		d.RDMAServerName = t.server
	}
	regs := *t.regs.Load()
	for i := range d.Buffers {
		b := &d.Buffers[i]
		j, ok := slices.BinarySearchFunc(regs, b.Addr, func(r *region, a uint64) int {
			switch {
			case r.r.Addr < a:
				return -1
			case r.r.Addr > a:
				return 1
			}
			return 0
		})
		if !ok {
			continue
		}
		rg := regs[j]
		if rg.r.Location != "" {
			b.Name = rg.r.Location
		}
		b.LKey = slices.Clone(rg.lkeys)
		if rg.r.RemoteAccessible {
			b.RKey = slices.Clone(rg.rkeys)
		} else {
			b.RKey = nil
		}
	}
}

// Reaches reports whether d publishes RDMA devices and at least one
// buffer with one rkey per device, and this transport has a usable NIC.
func (t *Transport) Reaches(d *metadata.SegmentDesc) bool {
	if d == nil || len(d.Devices) == 0 || t.closed.Load() {
		return false
	}
	usable := false
	for _, n := range t.nics {
		usable = usable || n.usable()
	}
	if !usable {
		return false
	}
	for _, b := range d.Buffers {
		if len(b.RKey) == len(d.Devices) {
			return true
		}
	}
	return false
}

// Close fails queued and in-flight work with ErrClosedTransport, stops the
// completion goroutines and releases every verbs handle. It is
// idempotent.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.close() })
	return t.closeErr
}

func (t *Transport) close() error {
	t.closed.Store(true)
	t.cancel()
	for _, ep := range t.allEndpoints() {
		ep.kill(ErrClosedTransport)
	}
	t.spawnMu.Lock()
	t.stopping = true
	t.spawnMu.Unlock()
	t.wg.Wait()
	// Let the pollers drain the flushed completions.
	deadline := time.Now().Add(2 * time.Second)
	for t.slab.inUse.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	t.pollCancel()
	t.pollWG.Wait()
	// Destroy the QPs first, so the device executes none of the work
	// left; only then is that work's memory handed back.
	t.deadMu.Lock()
	dead := t.dead
	t.dead = nil
	t.deadMu.Unlock()
	for _, ep := range dead {
		_ = ep.destroy()
	}
	// Whatever is left lost its completion: fail it.
	t.slab.each(func(i int32, s *slice) {
		if s.state.CompareAndSwap(slicePosted, sliceQueued) || s.state.CompareAndSwap(sliceQueued, sliceQueued) {
			if ts := s.task; ts != nil {
				s.reg.inflight.Add(-1)
				s.task = nil
				ts.done(ErrClosedTransport)
			}
			t.slab.release(i)
		} else if s.state.CompareAndSwap(sliceOrphaned, sliceQueued) {
			t.settleOrphan(i, s)
		}
	})
	var errs []error
	regs := *t.regs.Load()
	for _, rg := range regs {
		errs = append(errs, rg.close())
	}
	for _, n := range t.nics {
		if n.open {
			errs = append(errs, n.closeHandles())
		}
	}
	return errors.Join(errs...)
}

func (t *Transport) allEndpoints() []*endpoint {
	var out []*endpoint
	for _, n := range t.nics {
		n.mu.Lock()
		for _, ep := range n.eps {
			out = append(out, ep)
		}
		n.mu.Unlock()
	}
	return out
}

func nanotime() int64 { return time.Now().UnixNano() }
