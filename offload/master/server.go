package master

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// Config configures a Server.
type Config struct {
	Options
	// Addr is the gRPC listen address ("0.0.0.0:50051"; port 0 picks one).
	Addr string
	// MetricsAddr, when not empty, serves /metrics over HTTP there.
	MetricsAddr string
	// Registry holds the metrics served on /metrics. nil means a new
	// registry with the Go and process collectors. Options.Registerer is
	// ignored: the service registers with Registry.
	Registry *prometheus.Registry
	// SweepInterval is the expiry sweeper's period. 0 means a quarter of
	// the client TTL, at most one second.
	SweepInterval time.Duration
	// ShutdownGrace bounds how long Close waits for RPCs in flight. 0
	// means 5 s.
	ShutdownGrace time.Duration
}

// Server runs a Service over gRPC, its sweeper, and the metrics endpoint.
type Server struct {
	cfg  Config
	svc  *Service
	reg  *prometheus.Registry
	grpc *grpc.Server
	rpc  *prometheus.HistogramVec
	// standby makes every RPC answer UNAVAILABLE (HA: not the leader).
	standby atomic.Bool

	mu      sync.Mutex
	started bool
	closed  bool
	lis     net.Listener
	httpSrv *http.Server
	httpLis net.Listener
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewServer validates cfg and builds the server. Nothing listens until
// Start.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		return nil, fmt.Errorf("%w: empty listen address", ErrInvalidOptions)
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	cfg.Registerer = reg
	svc, err := NewService(cfg.Options)
	if err != nil {
		return nil, err
	}
	cfg.Options = svc.opts
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = min(cfg.ClientTTL/4, time.Second)
	}
	s := &Server{cfg: cfg, svc: svc, reg: reg, stop: make(chan struct{})}
	s.rpc = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ferry_master_rpc_duration_seconds",
		Help:    "Time the master spent on each RPC, by method.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 4, 10),
	}, []string{"method"})
	if err := reg.Register(s.rpc); err != nil {
		return nil, fmt.Errorf("master: register metrics: %w", err)
	}
	// Batches of many keys can exceed gRPC's 4 MiB default.
	s.grpc = grpc.NewServer(grpc.ChainUnaryInterceptor(s.observe), grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize))
	offloadv1.RegisterMasterServiceServer(s.grpc, svc)
	return s, nil
}

// errStandby is what a standby master answers to every RPC.
var errStandby = status.Error(codes.Unavailable, "master: standby, not the elected leader")

func (s *Server) observe(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if s.standby.Load() {
		return nil, errStandby
	}
	t := time.Now()
	resp, err := h(ctx, req)
	m := info.FullMethod
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	s.rpc.WithLabelValues(m).Observe(time.Since(t).Seconds())
	return resp, err
}

// Service returns the server's service (for in-process use and tests).
func (s *Server) Service() *Service { return s.svc }

// Start listens on Addr (and MetricsAddr) and serves in the background
// until Close. It fails with ErrStarted or ErrClosed when called twice or
// after Close.
func (s *Server) Start() error { return s.start(false) }

// StartStandby is Start for a high-availability standby: the server
// listens (so its address is known) but every RPC answers gRPC
// UNAVAILABLE until RunHA promotes it. /metrics and /health are served.
func (s *Server) StartStandby() error { return s.start(true) }

// Leading reports whether the server answers RPCs: true after Start, or
// after StartStandby once RunHA won the election and until it lost or
// gave up leadership.
func (s *Server) Leading() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started && !s.closed && !s.standby.Load()
}

func (s *Server) start(standby bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.started:
		return ErrStarted
	}
	lis, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("master: listen on %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.MetricsAddr != "" {
		hl, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			lis.Close()
			return fmt.Errorf("master: metrics listen on %s: %w", s.cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK\n")) })
		s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.httpLis = hl
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.httpSrv.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.svc.log.Error("master: metrics server stopped", "err", err)
			}
		}()
	}
	s.lis = lis
	s.started = true
	s.standby.Store(standby)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(lis); err != nil {
			s.svc.log.Error("master: gRPC server stopped", "err", err)
		}
	}()
	go s.sweep()
	s.svc.log.Info("master: listening", "standby", standby, "addr", lis.Addr().String(), "metrics", s.cfg.MetricsAddr,
		"enable_offload", s.cfg.EnableOffload, "client_ttl", s.cfg.ClientTTL)
	return nil
}

func (s *Server) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.svc.Sweep(now)
		}
	}
}

// Addr is the gRPC listen address, nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return nil
	}
	return s.lis.Addr()
}

// MetricsAddr is the metrics listen address, nil when not serving.
func (s *Server) MetricsAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLis == nil {
		return nil
	}
	return s.httpLis.Addr()
}

// Close stops serving: RPCs in flight get ShutdownGrace to finish, then
// are cancelled. It waits for every goroutine the server started and is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	close(s.stop)
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	timer := time.NewTimer(s.cfg.ShutdownGrace)
	select {
	case <-done:
	case <-timer.C:
		s.grpc.Stop()
		<-done
	}
	timer.Stop()
	var err error
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
		err = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	s.wg.Wait()
	return err
}
