package master

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type harness struct {
	srv *Server
	reg *prometheus.Registry
	c   offloadv1.MasterServiceClient
	ctx context.Context
}

// start runs a real server on loopback and returns a client connected to
// it over gRPC.
func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("passthrough:///"+srv.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(func() {
		cancel()
		conn.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &harness{srv: srv, reg: cfg.Registry, c: offloadv1.NewMasterServiceClient(conn), ctx: ctx}
}

func (h *harness) mount(t *testing.T, id string, capacity uint64, enable bool) {
	t.Helper()
	r, err := h.c.MountLocalDiskSegment(h.ctx, &offloadv1.MountLocalDiskSegmentRequest{
		OwnerId: id, EnableOffloading: enable, RpcEndpoint: "127.0.0.1:" + portFor(id), SegmentName: "seg-" + id, CapacityBytes: capacity,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != codeOK {
		t.Fatalf("mount %s: %v %s", id, r.Code, r.Message)
	}
}

func portFor(id string) string {
	p := 20000
	for _, c := range id {
		p += int(c)
	}
	return strconv.Itoa(p)
}

func (h *harness) notify(t *testing.T, owner, tenant string, size uint64, keys ...string) {
	t.Helper()
	var items []*offloadv1.OffloadItem
	for _, k := range keys {
		items = append(items, &offloadv1.OffloadItem{Tenant: tenant, Key: []byte(k), Size: size})
	}
	r, err := h.c.NotifyOffloadSuccess(h.ctx, &offloadv1.NotifyOffloadSuccessRequest{OwnerId: owner, Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != codeOK {
		t.Fatalf("notify %s: %v %s", owner, r.Code, r.Message)
	}
}

func (h *harness) get(t *testing.T, tenant string, keys ...string) []*offloadv1.KeyReplicas {
	t.Helper()
	var bk [][]byte
	for _, k := range keys {
		bk = append(bk, []byte(k))
	}
	r, err := h.c.BatchGetReplicaList(h.ctx, &offloadv1.BatchGetReplicaListRequest{Tenant: tenant, Keys: bk})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != codeOK {
		t.Fatalf("get: %v %s", r.Code, r.Message)
	}
	if len(r.Results) != len(keys) {
		t.Fatalf("get: %d results for %d keys", len(r.Results), len(keys))
	}
	return r.Results
}

func (h *harness) metric(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var v float64
			for _, m := range mf.GetMetric() {
				switch {
				case m.GetCounter() != nil:
					v += m.GetCounter().GetValue()
				case m.GetGauge() != nil:
					v += m.GetGauge().GetValue()
				}
			}
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
