package master

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

func TestMetricsEndpoint(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}, MetricsAddr: "127.0.0.1:0"})
	h.mount(t, "a", 4096, true)
	h.notify(t, "a", "", 100, "k")
	h.get(t, "", "k", "missing")
	resp, err := http.Get("http://" + h.srv.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"ferry_master_owners 1", "ferry_master_keys 1", "ferry_master_offload_used_bytes 100",
		"ferry_master_offload_capacity_bytes 4096", "ferry_master_replica_hits_total 1", "ferry_master_replica_misses_total 1",
		`ferry_master_rpc_duration_seconds_count{method="BatchGetReplicaList"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestServerLifecycle(t *testing.T) {
	if _, err := NewServer(Config{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("empty address: %v", err)
	}
	if _, err := NewServer(Config{Addr: "127.0.0.1:0", Options: Options{ClientTTL: -1}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative ttl: %v", err)
	}
	s, err := NewServer(Config{Addr: "127.0.0.1:0", Registry: prometheus.NewRegistry(), Options: Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // before Start
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}

	s, err = NewServer(Config{Addr: "127.0.0.1:0", Registry: prometheus.NewRegistry(), Options: Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	// A second server on the same port fails with a clear error.
	s2, err := NewServer(Config{Addr: s.Addr().String(), Registry: prometheus.NewRegistry(), Options: Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); err == nil || !strings.Contains(err.Error(), s.Addr().String()) {
		t.Fatalf("port in use: %v", err)
	}
	_ = s2.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestServiceInProcess(t *testing.T) {
	// The service works without a server, e.g. embedded in a test harness.
	svc, err := NewService(Options{EnableOffload: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := svc.MountLocalDiskSegment(t.Context(), &offloadv1.MountLocalDiskSegmentRequest{OwnerId: "a", RpcEndpoint: "h:1", SegmentName: "s", CapacityBytes: 10})
	if r.Code != codeOK || r.ClientTtlMs != uint64(DefaultClientTTL.Milliseconds()) {
		t.Fatalf("mount: %v", r)
	}
}
