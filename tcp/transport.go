package tcp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// Name is the protocol name the transport publishes.
const Name = "tcp"

// refreshTimeout bounds the descriptor refetch done when a remote address
// is not covered by the cached descriptor.
const refreshTimeout = 5 * time.Second

// Transport is the TCP data path. It implements transport.Transport and is
// safe for concurrent use.
type Transport struct {
	host transport.Host
	log  *slog.Logger
	cfg  config
	m    *metrics

	regions transport.Regions
	memMu   sync.RWMutex
	srv     *server

	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool
	once   sync.Once
	wg     sync.WaitGroup // lane goroutines and descriptor refreshes

	mu    sync.RWMutex
	peers map[peerKey]*peer

	// refreshing holds the tasks waiting for a descriptor refetch before
	// they are launched; Cancel takes them out.
	refMu      sync.Mutex
	refreshing map[*transport.Task]struct{}

	ops opPool
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Canceler  = (*Transport)(nil)
)

// errCanceled is the error of a task ended by Cancel.
var errCanceled = fmt.Errorf("tcp: %w", transport.ErrCanceled)

// New starts a TCP transport for the engine behind h: it binds the data
// port (at random in [MC_MIN_RPC_PORT, MC_MAX_RPC_PORT]) and starts
// serving it. Call Close to stop it.
func New(h transport.Host, opts ...Option) (*Transport, error) {
	if h == nil {
		return nil, fmt.Errorf("tcp: New: nil Host")
	}
	log := h.Logger()
	if log == nil {
		log = slog.Default()
	}
	cfg := loadConfig(log)
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.dialTimeout > cfg.statusTimeout {
		cfg.dialTimeout = cfg.statusTimeout
	}
	m, err := newMetrics(cfg.reg)
	if err != nil {
		return nil, fmt.Errorf("tcp: registering metrics: %w", err)
	}
	lh := defaultListenAllAddress
	if cfg.listenHost != nil {
		lh = *cfg.listenHost
	} else if ip := net.ParseIP(h.LocalHost()); ip != nil {
		lh = ip.String()
	}
	ln, port, err := listen(lh, cfg.minPort, cfg.maxPort)
	if err != nil {
		return nil, err
	}
	t := &Transport{host: h, log: log, cfg: cfg, m: m, peers: make(map[peerKey]*peer),
		refreshing: make(map[*transport.Task]struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.srv = &server{ln: ln, port: port, regions: &t.regions, memMu: &t.memMu, m: m, log: log,
		timeout: cfg.statusTimeout, conns: make(map[net.Conn]*session)}
	t.srv.start()
	if cfg.idleTimeout > 0 {
		t.wg.Add(1)
		go t.dropIdlePeers(cfg.idleTimeout)
	}
	log.Debug("tcp: data port listening", "addr", ln.Addr().String(), "proto", cfg.proto, "lanes", cfg.lanes)
	return t, nil
}

// Name returns "tcp".
func (t *Transport) Name() string { return Name }

// Port returns the data port the transport listens on.
func (t *Transport) Port() int { return t.srv.port }

// Serving reports whether the server is moving bytes between a peer's
// connection and any part of local memory [addr, addr+length) right now.
// A false answer covers requests that have started; a request that
// arrives later is checked against the registered regions only.
func (t *Transport) Serving(addr, length uint64) bool { return t.srv.serving(addr, length) }

// Register makes r available: local tasks may use it, and when
// r.RemoteAccessible peers may read and write it through the data port.
// The memory must stay valid until Unregister returns.
func (t *Transport) Register(r transport.Region) error {
	if t.closed.Load() {
		return transport.ErrClosed
	}
	if len(r.Mem) == 0 {
		return fmt.Errorf("tcp: Register: empty region at %#x", r.Addr)
	}
	if err := t.regions.Add(r); err != nil {
		return fmt.Errorf("tcp: Register: %w", err)
	}
	return nil
}

// Unregister removes the region starting at addr. Peer requests already
// touching it finish first; later ones are refused. Local tasks using the
// region must have finished before the caller unregisters it.
func (t *Transport) Unregister(addr uint64) error {
	if _, ok := t.regions.Remove(addr); !ok {
		return fmt.Errorf("tcp: Unregister %#x: %w", addr, transport.ErrAddressNotRegistered)
	}
	t.memMu.Lock()
	t.memMu.Unlock() //nolint:staticcheck // waits for requests in progress
	return nil
}

// Describe publishes the data port and protocol version 2.
func (t *Transport) Describe(d *metadata.SegmentDesc) {
	d.TCPDataPort = t.srv.port
	d.TCPProtoVersion = defaultProtoVersion
}

// Reaches reports whether d publishes a TCP data port.
func (t *Transport) Reaches(d *metadata.SegmentDesc) bool {
	return d != nil && d.TCPDataPort > 0 && d.TCPDataPort < 65536
}

// Submit starts every task. Tasks that cannot start (no data port, local
// or remote range not registered) are finished with an error wrapping
// transport.ErrNotSupported or transport.ErrAddressNotRegistered; a peer
// that cannot be reached or stops answering fails its tasks with an error
// wrapping transport.ErrPeerUnreachable; a bad opcode gives ErrBadTask.
// The transport reads (Write) or fills (Read) task.Local until it finishes
// the task; the caller must leave that memory alone until then. Submit
// returns ErrClosed, having finished nothing, after Close.
func (t *Transport) Submit(tasks []*transport.Task) error {
	if t.closed.Load() {
		return transport.ErrClosed
	}
	for _, task := range tasks {
		t.start(task)
	}
	return nil
}

func (t *Transport) start(task *transport.Task) {
	if task.Op != transport.Read && task.Op != transport.Write {
		t.reject(task, fmt.Errorf("%w: opcode %d", ErrBadTask, task.Op))
		return
	}
	seg := task.Target
	if seg == nil {
		t.reject(task, fmt.Errorf("tcp: task has no target segment: %w", transport.ErrNotSupported))
		return
	}
	d := seg.Desc()
	if !t.Reaches(d) {
		t.reject(task, fmt.Errorf("tcp: segment %q publishes no tcp_data_port: %w", seg.Name, transport.ErrNotSupported))
		return
	}
	n := task.Length()
	if _, ok := t.regions.Find(task.LocalAddr, n); !ok {
		t.reject(task, fmt.Errorf("tcp: local range [%#x, +%d) is not in a registered region: %w",
			task.LocalAddr, n, transport.ErrAddressNotRegistered))
		return
	}
	if !covered(d, task.TargetAddr, n) {
		t.refMu.Lock()
		t.refreshing[task] = struct{}{}
		t.refMu.Unlock()
		t.wg.Add(1)
		go t.refreshAndStart(task, seg)
		return
	}
	t.launch(task, seg, d)
}

// covered reports whether [addr, addr+n) lies inside one buffer of d.
func covered(d *metadata.SegmentDesc, addr, n uint64) bool {
	for i := range d.Buffers {
		b := &d.Buffers[i]
		if addr >= b.Addr && n <= b.Length && addr-b.Addr <= b.Length-n {
			return true
		}
	}
	return false
}

// refreshAndStart refetches the descriptor of seg once and starts task if
// its remote range is then covered.
func (t *Transport) refreshAndStart(task *transport.Task, seg *transport.Segment) {
	defer t.wg.Done()
	ctx, cancel := context.WithTimeout(t.ctx, refreshTimeout)
	err := t.host.Refresh(ctx, seg)
	cancel()
	d := seg.Desc()
	// Launch under refMu, so that Cancel either finds the task here or
	// on a lane.
	t.refMu.Lock()
	defer t.refMu.Unlock()
	if _, ok := t.refreshing[task]; !ok {
		return // cancelled meanwhile
	}
	delete(t.refreshing, task)
	switch {
	case t.closed.Load():
		t.reject(task, transport.ErrClosed)
	case err == nil && t.Reaches(d) && covered(d, task.TargetAddr, task.Length()):
		t.launch(task, seg, d)
	case err != nil:
		t.reject(task, fmt.Errorf("tcp: remote range [%#x, +%d) of %q not in its cached descriptor, and refreshing it failed (%v): %w",
			task.TargetAddr, task.Length(), seg.Name, err, transport.ErrAddressNotRegistered))
	default:
		t.reject(task, fmt.Errorf("tcp: remote range [%#x, +%d) is not in a buffer of segment %q: %w",
			task.TargetAddr, task.Length(), seg.Name, transport.ErrAddressNotRegistered))
	}
}

func (t *Transport) reject(task *transport.Task, err error) {
	t.m.failures[roleClient][opIndex(task.Op == transport.Write)].Inc()
	task.Finish(err)
}

// launch splits task into pieces and queues them on the peer's lanes.
func (t *Transport) launch(task *transport.Task, seg *transport.Segment, d *metadata.SegmentDesc) {
	host := seg.Host()
	if host == "" {
		host = hostOf(seg.Name)
	}
	k := peerKey{host: host, port: d.TCPDataPort, v2: t.cfg.proto >= 2 && d.TCPProtoVersion >= 2}
	p := t.peerFor(k)
	if p == nil {
		t.reject(task, transport.ErrClosed)
		return
	}
	n := uint64(len(task.Local))
	chunk := uint64(t.cfg.chunkSize)
	size := max(n, 1)
	pieces := uint64(1)
	if n > chunk {
		size = (n + (n+chunk-1)/chunk - 1) / ((n + chunk - 1) / chunk)
		pieces = (n + size - 1) / size
	}
	write := task.Op == transport.Write
	o := t.ops.get(t)
	o.task = task
	o.write = write
	o.start = time.Now()
	o.remaining.Store(int32(pieces))
	t.m.inflight.Inc()
	for off := uint64(0); ; off += size {
		end := min(off+size, n)
		pc := piece{op: o, task: task, buf: task.Local[off:end:end], n: end - off, addr: task.TargetAddr + off, write: write}
		// A peer dropped for idleness meanwhile refuses the piece:
		// take the peer that replaced it.
		for !p.send(pc) {
			if t.closed.Load() {
				o.done(0, transport.ErrClosed)
				break
			}
			if p = t.peerFor(k); p == nil {
				o.done(0, transport.ErrClosed)
				break
			}
		}
		if end >= n {
			break
		}
	}
}

// Cancel implements transport.Canceler. Queued pieces of the tasks are
// dropped; for a piece whose request is already on the wire the lane
// still consumes the response, draining a READ's data instead of storing
// it, and a WRITE whose header is out sends the rest of its payload from
// zeros, so the connection stays in sync and the other tasks on it go on.
// A copy in progress into or out of the tasks' memory is woken through
// the socket deadline and waited for. The tasks finish with an error
// wrapping transport.ErrCanceled before Cancel returns, except a
// protocol-v1 WRITE caught while being written, which finishes (without
// touching its memory again) when the write ends, at most the status
// timeout later.
func (t *Transport) Cancel(tasks []*transport.Task) {
	if len(tasks) == 0 {
		return
	}
	set := make(map[*transport.Task]struct{}, len(tasks))
	for _, task := range tasks {
		set[task] = struct{}{}
	}
	var waiting []*transport.Task
	t.refMu.Lock()
	for task := range set {
		if _, ok := t.refreshing[task]; ok {
			delete(t.refreshing, task)
			waiting = append(waiting, task)
		}
	}
	t.refMu.Unlock()
	for _, task := range waiting {
		t.reject(task, errCanceled)
	}
	t.mu.RLock()
	peers := make([]*peer, 0, len(t.peers))
	for _, p := range t.peers {
		peers = append(peers, p)
	}
	t.mu.RUnlock()
	var ops []*op
	for _, p := range peers {
		p.mu.Lock()
		lanes := p.lanes
		n := p.n
		p.mu.Unlock()
		for i := range n {
			ops = lanes[i].cancel(set, ops)
		}
	}
	for _, o := range ops {
		o.done(0, errCanceled)
	}
}

// idleSweeps is how many sweeps a peer must stay idle to be dropped; the
// sweep period is the idle timeout divided by it.
const idleSweeps = 4

// dropIdlePeers drops, until the transport closes, every peer that went
// a whole idle timeout without a request: its connections close and its
// lanes' goroutines end. The next request to it makes a new peer.
func (t *Transport) dropIdlePeers(timeout time.Duration) {
	defer t.wg.Done()
	tick := time.NewTicker(max(timeout/idleSweeps, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		var gone []*peer
		t.mu.Lock()
		for k, p := range t.peers {
			if p.dropIfIdle(idleSweeps) {
				delete(t.peers, k)
				gone = append(gone, p)
			}
		}
		t.mu.Unlock()
		for _, p := range gone {
			p.shutdown()
			t.log.Debug("tcp: dropped an idle peer", "peer", p.addr)
		}
	}
}

func (t *Transport) peerFor(k peerKey) *peer {
	t.mu.RLock()
	p := t.peers[k]
	t.mu.RUnlock()
	if p != nil {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil
	}
	if p = t.peers[k]; p == nil {
		p = newPeer(t, k)
		t.peers[k] = p
	}
	return p
}

// Close stops the data port, fails every task in flight with
// transport.ErrClosed and waits for the transport's goroutines. It is
// idempotent.
func (t *Transport) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed.Store(true)
		peers := make([]*peer, 0, len(t.peers))
		for _, p := range t.peers {
			peers = append(peers, p)
		}
		t.mu.Unlock()
		t.cancel()
		t.srv.close()
		for _, p := range peers {
			p.shutdown()
		}
		t.wg.Wait()
		for _, p := range peers {
			p.drain(transport.ErrClosed)
		}
	})
	return nil
}
