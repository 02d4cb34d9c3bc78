package bench

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// ErrConfig is wrapped by every validation error of Config.
var ErrConfig = errors.New("bench: invalid configuration")

// Config is the benchmark's settings, named after transfer_engine_bench's
// gflags.
type Config struct {
	Mode            string        // "initiator" or "target"
	Operation       string        // "read" or "write"
	Protocol        string        // "tcp" or "rdma"
	MetadataServer  string        // "P2PHANDSHAKE" or a central store (etcd://, redis://, http://)
	LocalServerName string        // "host[:port]"; the port is ignored
	SegmentID       string        // the target's segment name (initiator)
	BatchSize       int           // requests per batch
	BlockSize       uint64        // bytes per request
	Threads         int           // initiator threads
	Duration        time.Duration // initiator run time
	BufferSize      uint64        // registered buffer per engine
	ReportUnit      string        // GB, GiB, Gb, MB, MiB, Mb, KB, KiB, Kb
	ReportPrecision int           // digits after the point
}

// Defaults returns Mooncake's defaults (except Protocol, which the caller
// must choose, and MetadataServer, which defaults to P2PHANDSHAKE).
func Defaults() Config {
	return Config{
		Mode: "initiator", Operation: "read", Protocol: "rdma", MetadataServer: "P2PHANDSHAKE",
		LocalServerName: "127.0.0.1", BatchSize: 128, BlockSize: 65536, Threads: 12,
		Duration: 10 * time.Second, BufferSize: 1 << 30, ReportUnit: "GB", ReportPrecision: 2,
	}
}

// units maps a report unit to bytes per unit (bit units count 1/8 byte).
var units = map[string]float64{
	"GB": 1e9, "GiB": 1 << 30, "Gb": 1e9 / 8,
	"MB": 1e6, "MiB": 1 << 20, "Mb": 1e6 / 8,
	"KB": 1e3, "KiB": 1 << 10, "Kb": 1e3 / 8,
}

// UnitBytes is the number of bytes in one ReportUnit.
func (c *Config) UnitBytes() float64 { return units[c.ReportUnit] }

// Validate checks the settings and names the first bad one.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	switch c.Mode {
	case "initiator", "target":
	default:
		return bad("--mode=%q: want initiator or target", c.Mode)
	}
	switch c.Operation {
	case "read", "write":
	default:
		return bad("--operation=%q: want read or write", c.Operation)
	}
	switch c.Protocol {
	case "tcp", "rdma":
	default:
		return bad("--protocol=%q: want tcp or rdma", c.Protocol)
	}
	if _, err := metadata.ParseServer(c.MetadataServer); err != nil {
		return bad("--metadata_server: %v", err)
	}
	if c.LocalServerName == "" {
		return bad("--local_server_name is empty")
	}
	if c.BatchSize < 1 || c.BatchSize > 1<<20 {
		return bad("--batch_size=%d: want 1..1048576", c.BatchSize)
	}
	if c.BlockSize < 1 {
		return bad("--block_size=%d: want at least 1", c.BlockSize)
	}
	if c.Threads < 1 || c.Threads > 1024 {
		return bad("--threads=%d: want 1..1024", c.Threads)
	}
	if c.Duration <= 0 {
		return bad("--duration=%v: want a positive number of seconds", c.Duration)
	}
	if _, ok := units[c.ReportUnit]; !ok {
		return bad("--report_unit=%q: want GB, GiB, Gb, MB, MiB, Mb, KB, KiB or Kb", c.ReportUnit)
	}
	if c.ReportPrecision < 0 || c.ReportPrecision > 9 {
		return bad("--report_precision=%d: want 0..9", c.ReportPrecision)
	}
	if c.BufferSize == 0 {
		return bad("--buffer_size is 0")
	}
	if c.Mode == "initiator" {
		need := c.BlockSize * uint64(c.BatchSize) * uint64(c.Threads)
		if c.BlockSize > math.MaxUint64/uint64(c.BatchSize)/uint64(c.Threads) || need > c.BufferSize {
			return bad("--block_size × --batch_size × --threads = %d bytes does not fit in --buffer_size=%d", need, c.BufferSize)
		}
	}
	return nil
}

// ParseSize reads a byte count: a plain integer or one with a K, M, G or T
// suffix (powers of 1024, optionally followed by "iB" or "B").
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	u := strings.ToUpper(t)
	for _, suf := range []struct {
		s string
		m uint64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if strings.HasSuffix(u, suf.s) {
			mult, t = suf.m, strings.TrimSpace(t[:len(t)-len(suf.s)])
			break
		}
	}
	var n uint64
	if _, err := fmt.Sscanf(t, "%d", &n); err != nil || fmt.Sprint(n) != t {
		return 0, fmt.Errorf("%w: size %q: want a byte count like 65536, 64KiB or 1GiB", ErrConfig, s)
	}
	if n > math.MaxUint64/mult {
		return 0, fmt.Errorf("%w: size %q overflows", ErrConfig, s)
	}
	return n * mult, nil
}
