package metadata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"time"
)

// Defaults of the handshake daemon, from Mooncake's config (MC_*).
const (
	DefaultMinRPCPort     = 15000
	DefaultMaxRPCPort     = 17000
	DefaultListenBacklog  = 128
	DefaultRecvTimeout    = 5 * time.Second
	DefaultLingerTimeout  = 2 * time.Second
	DefaultMaxConns       = 64
	DefaultConnectTimeout = 5 * time.Second
	DefaultReadTimeout    = 300 * time.Second
	maxPortTries          = 500
)

// ConnectionFunc answers one Connection frame body (the RDMA QP
// handshake) with a reply body. body is owned by the callee.
type ConnectionFunc func(ctx context.Context, body []byte) ([]byte, error)

// DaemonConfig configures a P2PHANDSHAKE daemon. Zero fields take the
// defaults above.
type DaemonConfig struct {
	// BindHost is the IP address to bind; "" binds every IPv4 address.
	BindHost string
	// MinPort and MaxPort bound the random port choice (inclusive).
	MinPort, MaxPort int
	// Backlog is the listen backlog (MC_HANDSHAKE_LISTEN_BACKLOG).
	Backlog int
	// MaxFrameLength caps request frames (MC_HANDSHAKE_MAX_LENGTH).
	MaxFrameLength uint64
	// RecvTimeout bounds reading a request and writing its reply.
	RecvTimeout time.Duration
	// LingerTimeout bounds the wait for the client to close after the
	// reply and shutdown(SHUT_WR).
	LingerTimeout time.Duration
	// MaxConns bounds the connections served at once; further clients
	// wait in the backlog.
	MaxConns int
	// Describe returns the Metadata reply body: the local segment
	// descriptor, freshly encoded (see AppendDesc). Required.
	Describe func() []byte
	// OnNotify receives every Notify request. It must not block for long.
	OnNotify func(Notify)
	// Logger receives debug logs of rejected requests; nil discards.
	Logger *slog.Logger
}

// Daemon is a running P2PHANDSHAKE daemon: it answers Metadata, Notify,
// Probe and Connection frames, one request and one reply per connection,
// serving up to MaxConns connections concurrently.
type Daemon struct {
	cfg    DaemonConfig
	ln     net.Listener
	port   int
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{}

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	connFn  ConnectionFunc
	closed  bool
	closeMu sync.Once
}

func (c *DaemonConfig) fill() error {
	if c.MinPort == 0 {
		c.MinPort = DefaultMinRPCPort
	}
	if c.MaxPort == 0 {
		c.MaxPort = DefaultMaxRPCPort
	}
	if c.MinPort < 1 || c.MaxPort > 65535 || c.MinPort > c.MaxPort {
		return fmt.Errorf("%w: port range [%d, %d]", ErrNoPort, c.MinPort, c.MaxPort)
	}
	if c.Backlog <= 0 {
		c.Backlog = DefaultListenBacklog
	}
	if c.MaxFrameLength == 0 {
		c.MaxFrameLength = DefaultMaxFrameLength
	}
	if c.RecvTimeout <= 0 {
		c.RecvTimeout = DefaultRecvTimeout
	}
	if c.LingerTimeout <= 0 {
		c.LingerTimeout = DefaultLingerTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.Describe == nil {
		return errors.New("metadata: DaemonConfig.Describe is required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Listen binds a random free port in [MinPort, MaxPort] (up to 500 tries)
// and starts serving. Close stops it.
func Listen(cfg DaemonConfig) (*Daemon, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	var ln net.Listener
	var port int
	var lastErr error
	span := cfg.MaxPort - cfg.MinPort + 1
	for try := 0; try < maxPortTries; try++ {
		port = cfg.MinPort + rand.IntN(span)
		l, err := listenTCP(cfg.BindHost, port, cfg.Backlog)
		if err == nil {
			ln = l
			break
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) && !errors.Is(err, syscall.EACCES) {
			return nil, err
		}
	}
	if ln == nil {
		return nil, fmt.Errorf("%w [%d, %d] after %d tries: %w", ErrNoPort, cfg.MinPort, cfg.MaxPort, maxPortTries, lastErr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{
		cfg:    cfg,
		ln:     ln,
		port:   port,
		ctx:    ctx,
		cancel: cancel,
		sem:    make(chan struct{}, cfg.MaxConns),
		conns:  make(map[net.Conn]struct{}),
	}
	d.wg.Add(1)
	go d.acceptLoop()
	return d, nil
}

// Port is the bound handshake port.
func (d *Daemon) Port() int { return d.port }

// SetConnectionHandler installs the handler of Connection frames (nil
// removes it). Without one, Connection requests are dropped.
func (d *Daemon) SetConnectionHandler(fn ConnectionFunc) {
	d.mu.Lock()
	d.connFn = fn
	d.mu.Unlock()
}

// Close stops accepting, closes the connections being served and waits
// for their goroutines. It is idempotent.
func (d *Daemon) Close() error {
	d.closeMu.Do(func() {
		d.cancel()
		d.ln.Close()
		d.mu.Lock()
		d.closed = true
		for c := range d.conns {
			c.Close()
		}
		d.mu.Unlock()
		d.wg.Wait()
	})
	return nil
}

func (d *Daemon) acceptLoop() {
	defer d.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		select {
		case d.sem <- struct{}{}:
		case <-d.ctx.Done():
			return
		}
		c, err := d.ln.Accept()
		if err != nil {
			<-d.sem
			if d.ctx.Err() != nil {
				return
			}
			d.cfg.Logger.Warn("handshake accept failed", "err", err)
			select {
			case <-time.After(backoff):
			case <-d.ctx.Done():
				return
			}
			if backoff < time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 5 * time.Millisecond
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			c.Close()
			<-d.sem
			return
		}
		d.conns[c] = struct{}{}
		d.wg.Add(1)
		d.mu.Unlock()
		go d.serve(c)
	}
}

func (d *Daemon) serve(c net.Conn) {
	defer func() {
		d.mu.Lock()
		delete(d.conns, c)
		d.mu.Unlock()
		c.Close()
		<-d.sem
		d.wg.Done()
	}()
	log := d.cfg.Logger
	_ = c.SetDeadline(time.Now().Add(d.cfg.RecvTimeout))
	typ, body, err := ReadFrame(c, d.cfg.MaxFrameLength)
	if err != nil {
		log.Debug("handshake request dropped", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	reply, err := d.dispatch(typ, body)
	if err != nil {
		log.Debug("handshake request rejected", "remote", c.RemoteAddr().String(), "type", typ.String(), "err", err)
		return
	}
	_ = c.SetDeadline(time.Now().Add(d.cfg.RecvTimeout))
	if err := WriteFrame(c, typ, reply); err != nil {
		log.Debug("handshake reply failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	// Wait (bounded) for the client to close; discard anything it sends.
	_ = c.SetReadDeadline(time.Now().Add(d.cfg.LingerTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<16))
}

func (d *Daemon) dispatch(typ FrameType, body []byte) ([]byte, error) {
	switch typ {
	case FrameMetadata:
		// Like Mooncake, ignore the requester's descriptor.
		return d.cfg.Describe(), nil
	case FrameNotify:
		n, err := DecodeNotify(body)
		if err != nil {
			return nil, err
		}
		if d.cfg.OnNotify != nil {
			d.cfg.OnNotify(n)
		}
		return NotifyReplyBody, nil
	case FrameProbe:
		return ProbeReplyBody, nil
	case FrameConnection:
		d.mu.Lock()
		fn := d.connFn
		d.mu.Unlock()
		if fn == nil {
			return nil, ErrNoHandler
		}
		ctx, cancel := context.WithTimeout(d.ctx, d.cfg.RecvTimeout)
		defer cancel()
		return fn(ctx, body)
	}
	return nil, fmt.Errorf("%w: unknown type %d", ErrBadFrame, uint8(typ))
}
