package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestValidateNamesTheBadFlag(t *testing.T) {
	cases := map[string]func(*Config){
		"--mode":            func(c *Config) { c.Mode = "both" },
		"--operation":       func(c *Config) { c.Operation = "copy" },
		"--protocol":        func(c *Config) { c.Protocol = "efa" },
		"--metadata_server": func(c *Config) { c.MetadataServer = "zk://10.0.0.1:2181" },
		"--batch_size":      func(c *Config) { c.BatchSize = 0 },
		"--threads":         func(c *Config) { c.Threads = 0 },
		"--report_unit":     func(c *Config) { c.ReportUnit = "PB" },
		"--buffer_size":     func(c *Config) { c.BufferSize = 1 << 20 },
	}
	for flag, mutate := range cases {
		c := Defaults()
		mutate(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v", flag, err)
		}
	}
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"65536": 65536, "64KiB": 64 << 10, "1MiB": 1 << 20, "1GiB": 1 << 30, "2G": 2 << 30, "4k": 4096, "1 MB": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "1.5G", "-1", "99999999999999999999", "16777216TiB"} {
		if _, err := ParseSize(in); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseSize(%q) accepted: %v", in, err)
		}
	}
}

func TestResultLine(t *testing.T) {
	r := &Result{Duration: 10 * time.Second, Batches: 1000, BatchSize: 128, BlockSize: 65536}
	c := Defaults()
	if got, want := r.Line(c), "Test completed: duration 10.00, batch count 1000, throughput 0.84 GB/s"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	c.ReportUnit, c.ReportPrecision = "Gb", 3
	if got := r.Line(c); !strings.HasSuffix(got, "throughput 6.711 Gb/s") {
		t.Fatalf("bits: %q", got)
	}
}

// TestLoopbackRun runs the workload between two real engines over TCP and
// checks the bytes landed where the workload says they go.
func TestLoopbackRun(t *testing.T) {
	cfg := Defaults()
	cfg.Protocol = "tcp"
	cfg.BufferSize = 4 << 20
	cfg.BlockSize = 4096
	cfg.BatchSize = 8
	cfg.Threads = 3
	cfg.Duration = 300 * time.Millisecond
	cfg.Operation = "write"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	target, err := StartNode(cfg, quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	ini, err := StartNode(cfg, quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ini.Close()
	ctx := context.Background()
	seg, err := ini.Engine.OpenSegment(ctx, target.Name())
	if err != nil {
		t.Fatal(err)
	}
	span := int(cfg.BlockSize) * cfg.BatchSize * cfg.Threads
	for i := range span {
		ini.Buf.Bytes[i] = byte(i*13 + 1)
	}
	var live Counters
	res, err := RunInitiator(ctx, ini.Engine, seg, ini.Buf.Bytes, cfg, &live)
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches == 0 || live.Batches.Load() != res.Batches || live.Bytes.Load() != res.Bytes() {
		t.Fatalf("batches %d, live %d/%d bytes", res.Batches, live.Batches.Load(), live.Bytes.Load())
	}
	if len(res.Latencies) != int(res.Batches) || res.Percentile(0.5) <= 0 || res.Percentile(0.999) < res.Percentile(0.5) {
		t.Fatalf("latencies: %d samples, p50 %v p999 %v", len(res.Latencies), res.Percentile(0.5), res.Percentile(0.999))
	}
	// Read back what the writes put on the target through the engine, so
	// the comparison is ordered after the peer's writes.
	check := make([]byte, span)
	copy(check, ini.Buf.Bytes[:span])
	clear(ini.Buf.Bytes[:span])
	if err := ini.Engine.Transfer(ctx, []engine.Request{{Op: 0, Local: engine.Addr(ini.Buf.Bytes), Target: seg,
		TargetAddr: engine.Addr(target.Buf.Bytes), Length: uint64(span)}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ini.Buf.Bytes[:span], check) {
		t.Fatal("target buffer does not hold the written blocks")
	}
	if !regexp.MustCompile(`^Test completed: duration 0\.\d\d, batch count \d+, throughput \d+\.\d\d GB/s$`).MatchString(res.Line(cfg)) {
		t.Fatalf("line %q", res.Line(cfg))
	}
	var tbl bytes.Buffer
	if err := WriteTable(&tbl, cfg, []Row{{Result: res, Baseline: 1e9}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "4KiB") || !strings.Contains(tbl.String(), "p999") || !strings.Contains(tbl.String(), "%") {
		t.Fatalf("table:\n%s", tbl.String())
	}
}

func TestRDMAUnavailableSaysSo(t *testing.T) {
	cfg := Defaults()
	cfg.BufferSize = 1 << 20
	n, err := StartNode(cfg, quiet(), nil)
	if err == nil {
		n.Close()
		t.Skip("this machine has an RDMA device")
	}
	if !errors.Is(err, ErrProtocolUnavailable) || !strings.Contains(err.Error(), "--protocol=tcp") {
		t.Fatalf("rdma on a machine without RDMA: %v", err)
	}
}

func TestRawTCP(t *testing.T) {
	for _, write := range []bool{true, false} {
		bps, err := RawTCP(context.Background(), write, 64<<10, 2, 4, 200*time.Millisecond)
		if err != nil || bps <= 0 {
			t.Fatalf("write=%v: %v B/s, %v", write, bps, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RawTCP(ctx, true, 4096, 1, 1, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled baseline: %v", err)
	}
}
