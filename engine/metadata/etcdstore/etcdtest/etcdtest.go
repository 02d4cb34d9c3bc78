// Package etcdtest starts a real single-member etcd server, embedded in
// the test process, for tests of code that talks to etcd.
package etcdtest

import (
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 30 * time.Second

// Server is a running embedded etcd server.
type Server struct {
	e        *embed.Etcd
	endpoint string
	once     sync.Once
}

// Start starts an embedded etcd server on 127.0.0.1 (kernel-chosen
// ports, data in t.TempDir()) and returns its client endpoint
// "127.0.0.1:port". The server is stopped by t.Cleanup. A server that
// fails to start fails the test.
func Start(t testing.TB) (endpoint string) {
	t.Helper()
	return StartServer(t).Endpoint()
}

// StartServer is Start returning the Server, so a test can Stop it early
// (to test behaviour against a dead server). t.Cleanup still stops it.
func StartServer(t testing.TB) *Server {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "ferry-test"
	cfg.Dir = t.TempDir()
	// Port 0 lets the kernel choose free ports; the peer URL is only
	// advertised, never dialled, in a one-member cluster.
	lc := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	lp := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{lc}
	cfg.AdvertiseClientUrls = []url.URL{lc}
	cfg.ListenPeerUrls = []url.URL{lp}
	cfg.AdvertisePeerUrls = []url.URL{lp}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.EnableGRPCGateway = false
	// Test data need not survive a crash; fsync makes start-up and
	// every write slower on a busy disk.
	cfg.UnsafeNoFsync = true

	start := time.Now()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("etcdtest: start embedded etcd: %v", err)
	}
	s := &Server{e: e}
	t.Cleanup(s.Stop)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcdtest: embedded etcd failed while starting: %v", err)
	case <-time.After(startTimeout):
		t.Fatalf("etcdtest: embedded etcd not ready after %v", startTimeout)
	}
	if len(e.Clients) == 0 {
		t.Fatal("etcdtest: embedded etcd has no client listener")
	}
	s.endpoint = e.Clients[0].Addr().String()
	t.Logf("etcdtest: embedded etcd at %s ready in %v", s.endpoint, time.Since(start).Round(time.Millisecond))
	return s
}

// Endpoint is the server's client endpoint "127.0.0.1:port".
func (s *Server) Endpoint() string { return s.endpoint }

// Stop stops the server and waits until its goroutines are gone. It is
// idempotent; afterwards nothing listens on the endpoint.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.e.Close()
		<-s.e.Server.StopNotify()
	})
}
