// Package engine is Ferry's transfer engine: a Go-shaped version of
// Mooncake's classic Transfer Engine API. An Engine names itself
// "host:port" after the handshake port its P2PHANDSHAKE daemon binds,
// registers local memory with every installed transport, opens remote
// segments by fetching their descriptors from the peers' daemons, and
// moves bytes in batches of requests that it routes to a transport by the
// target descriptor's protocol, failing over to another transport once
// per request when the first one fails.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// SegmentID is the engine's handle for a segment.
type SegmentID uint64

const (
	// LocalSegmentID is the engine's own segment.
	LocalSegmentID SegmentID = 0
	// InvalidSegmentID is never a valid handle.
	InvalidSegmentID SegmentID = math.MaxUint64
)

// Notify is an out-of-band notification: Name is the sender's choice
// (Mooncake puts the sender's segment name there), NotifyMsg the message.
type Notify = metadata.Notify

// Engine is a transfer engine. All methods are safe for concurrent use.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	host   string
	name   string
	daemon *metadata.Daemon
	client metadata.Client
	epoch  time.Time

	// Set once in New before started is stored; read-only afterwards.
	trs     []transport.Transport
	trNames []string
	tm      []*tmetrics
	started atomic.Bool
	metrics *metrics

	regions transport.Regions
	regMu   sync.Mutex // serializes Register/Unregister across transports

	central *central // nil in P2PHANDSHAKE mode

	segMu     sync.Mutex
	segByName map[string]*transport.Segment
	rpcAddrs  map[string]string                    // central mode: engine name -> its daemon's "host:port"
	failUntil map[uint64]time.Time                 // segment ID -> end of its refetch backoff
	segs      atomic.Pointer[[]*transport.Segment] // index is the SegmentID

	notifyMu sync.Mutex
	notifies []Notify

	ctx       context.Context
	cancel    context.CancelFunc
	lifeMu    sync.Mutex
	closed    bool
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New starts an engine: it binds the handshake daemon on a random port in
// [MinRPCPort, MaxRPCPort], names the segment "host:port" (with a central
// metadata store: LocalServerName, published with the daemon's address
// and the descriptor) and installs the transports. It fails with
// ErrInvalidArgument for a bad configuration (an unparsable metadata
// server, a name a running engine publishes), ErrMetadata when the
// central store cannot be reached or written, and ErrNoTransport when no
// transport (or not the one named by Config.Protocol) could be installed.
func New(cfg Config) (*Engine, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	host, err := metadata.ParseServerName(cfg.LocalServerName)
	if err != nil {
		return nil, fmt.Errorf("%w: LocalServerName: %w", ErrInvalidArgument, err)
	}
	if !cfg.p2p() {
		if host, err = rpcHost(&cfg); err != nil {
			return nil, err
		}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	cs, err := openCentral(&cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		cfg:       cfg,
		log:       cfg.Logger,
		host:      host,
		epoch:     time.Now(),
		metrics:   m,
		central:   cs,
		segByName: make(map[string]*transport.Segment),
		rpcAddrs:  make(map[string]string),
		failUntil: make(map[uint64]time.Time),
		ctx:       ctx,
		cancel:    cancel,
		client: metadata.Client{
			ConnectTimeout: cfg.HandshakeConnectTimeout,
			MaxFrameLength: cfg.HandshakeMaxLength,
		},
	}
	bind := cfg.BindHost
	if bind == "" && net.ParseIP(host) != nil {
		bind = host
	}
	e.daemon, err = metadata.Listen(metadata.DaemonConfig{
		BindHost:       bind,
		MinPort:        cfg.MinRPCPort,
		MaxPort:        cfg.MaxRPCPort,
		Backlog:        cfg.HandshakeListenBacklog,
		MaxFrameLength: cfg.HandshakeMaxLength,
		MaxConns:       cfg.HandshakeMaxConns,
		Describe:       e.encodeLocalDesc,
		OnNotify:       e.pushNotify,
		Logger:         e.log,
	})
	if err != nil {
		cancel()
		e.closeStore()
		return nil, fmt.Errorf("%w: handshake daemon: %w", ErrSocket, err)
	}
	e.name = metadata.SegmentName(host, e.daemon.Port())
	if cs != nil {
		e.name = strings.TrimSpace(cfg.LocalServerName)
	}
	if err := e.installTransports(); err != nil {
		e.daemon.Close()
		cancel()
		e.closeStore()
		return nil, err
	}
	local := transport.NewSegment(uint64(LocalSegmentID), e.name, e.localDesc())
	local.SetHost(host)
	segs := []*transport.Segment{local}
	e.segs.Store(&segs)
	e.started.Store(true)
	if cs != nil {
		err := e.claimName(context.Background())
		if err == nil {
			cs.claimed = true
			err = e.publishRPCMeta(context.Background())
		}
		if err == nil {
			err = e.publishDesc(context.Background())
		}
		if err != nil {
			e.Close()
			return nil, err
		}
	}
	if cfg.MetadataRefreshInterval > 0 {
		e.goTracked(func() { e.refreshLoop(cfg.MetadataRefreshInterval) })
	}
	e.log.Info("transfer engine started", "segment", e.name, "transports", strings.Join(e.trNames, ","))
	return e, nil
}

func (e *Engine) installTransports() error {
	h := &host{e: e}
	var errs, unsupported []error
	for _, f := range e.cfg.Transports {
		if f == nil {
			continue
		}
		t, err := f(h)
		if err != nil {
			if errors.Is(err, transport.ErrNotSupported) {
				// Not usable here (no RDMA device, or another protocol
				// was asked for): skip it. It matters only if nothing
				// else can be installed.
				e.log.Debug("transport not available", "err", err)
				unsupported = append(unsupported, err)
				continue
			}
			errs = append(errs, err)
			continue
		}
		if e.cfg.Protocol != "" && t.Name() != e.cfg.Protocol {
			t.Close()
			continue
		}
		e.trs = append(e.trs, t)
		e.trNames = append(e.trNames, t.Name())
		e.tm = append(e.tm, e.metrics.forTransport(t.Name()))
		if ch, ok := t.(transport.ConnectionHandler); ok {
			e.daemon.SetConnectionHandler(ch.HandleConnection)
		}
	}
	if len(e.trs) == 0 || len(errs) > 0 {
		for _, t := range e.trs {
			t.Close()
		}
		want := e.cfg.Protocol
		if want == "" {
			want = "any"
		}
		if len(errs) == 0 {
			errs = unsupported
		}
		return fmt.Errorf("%w: none could be installed (wanted %s): %w", ErrNoTransport, want, errors.Join(errs...))
	}
	return nil
}

// Name is the local segment name, "host:port" with the handshake port.
// Peers open the engine's segment by this name.
func (e *Engine) Name() string { return e.name }

// Transports lists the installed transports' names, preferred first.
func (e *Engine) Transports() []string { return append([]string(nil), e.trNames...) }

// isClosed reports whether Close has started.
func (e *Engine) isClosed() bool {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	return e.closed
}

// goTracked runs fn in a goroutine that Close waits for. It returns false
// (and runs nothing) once Close has started.
func (e *Engine) goTracked(fn func()) bool {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn()
	}()
	return true
}

// Close stops the daemon and the transports (requests in flight fail with
// the transports' ErrClosed) and waits for the engine's goroutines. It is
// idempotent; calls on a closed engine fail with ErrClosed.
func (e *Engine) Close() error {
	var errs []error
	e.closeOnce.Do(func() {
		e.lifeMu.Lock()
		e.closed = true
		e.lifeMu.Unlock()
		e.cancel()
		if e.central != nil && e.central.claimed {
			if err := e.unpublish(); err != nil {
				e.log.Warn("removing the engine's keys from the metadata store failed", "segment", e.name, "err", err)
			}
		}
		errs = append(errs, e.daemon.Close())
		for _, t := range e.trs {
			errs = append(errs, t.Close())
		}
		e.wg.Wait()
		errs = append(errs, e.closeStore())
	})
	return errors.Join(errs...)
}

// closeStore closes a central store the engine opened.
func (e *Engine) closeStore() error {
	if e.central == nil || !e.central.owned {
		return nil
	}
	return e.central.store.Close()
}

// host is the engine as transports see it.
type host struct{ e *Engine }

func (h *host) LocalName() string    { return h.e.name }
func (h *host) LocalHost() string    { return h.e.host }
func (h *host) Logger() *slog.Logger { return h.e.log }
func (h *host) Call(ctx context.Context, peer string, typ metadata.FrameType, body []byte) ([]byte, error) {
	var reply []byte
	err := h.e.withRPCAddr(ctx, peer, func(addr string) (err error) {
		reply, err = h.e.client.Call(ctx, addr, typ, body)
		return err
	})
	return reply, err
}
func (h *host) Refresh(ctx context.Context, seg *transport.Segment) error {
	return h.e.refresh(ctx, seg)
}
