package tcp

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults and limits of the tunables.
const (
	// DefaultLanes is the lanes per peer on a host with at least as
	// many cores (GOMAXPROCS); with fewer, the default is one lane per
	// core, since each busy lane keeps about a core copying and more
	// lanes than cores only add context switches.
	DefaultLanes         = 4
	MaxLanes             = 16
	DefaultStatusTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long a peer may go without requests
	// before its connections are closed and its lanes dropped.
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultDialTimeout      = 5 * time.Second
	DefaultChunkSize        = 1 << 20
	MinChunkSize            = 4 << 10
	DefaultInflightPerLane  = 64
	DefaultInflightBytes    = 4 << 20
	MaxInflightPerLane      = 4096
	DefaultMinPort          = 15000
	DefaultMaxPort          = 17000
	maxBindAttempts         = 64
	defaultProtoVersion     = 2
	protoVersionV1          = 1
	inflightPerLaneEnv      = "FERRY_TCP_INFLIGHT_PER_LANE"
	inflightBytesEnv        = "FERRY_TCP_INFLIGHT_BYTES_PER_LANE"
	idleTimeoutEnv          = "FERRY_TCP_IDLE_TIMEOUT_SEC"
	chunkSizeEnv            = "FERRY_TCP_CHUNK_BYTES"
	maxWriteBatch           = 16
	clientReadBufferSize    = 4 << 10
	defaultListenAllAddress = ""
)

type config struct {
	proto         int
	lanes         int
	statusTimeout time.Duration
	dialTimeout   time.Duration
	idleTimeout   time.Duration // 0: peers are never dropped
	chunkSize     int
	inflight      int
	inflightBytes int
	minPort       int
	maxPort       int
	listenHost    *string
	reg           prometheus.Registerer
}

// Option changes a setting of New. Options override the environment.
type Option func(*config)

// WithRegisterer registers the transport's metrics with r. Without it the
// metrics are kept but not exported.
func WithRegisterer(r prometheus.Registerer) Option { return func(c *config) { c.reg = r } }

// WithLanes sets the most connections opened to one peer (clamped to
// 1..MaxLanes).
func WithLanes(n int) Option { return func(c *config) { c.lanes = clampInt(n, 1, MaxLanes) } }

// WithStatusTimeout sets how long a peer may stay silent while a request to
// it is outstanding before the request fails with ErrPeerUnreachable. It
// also bounds every socket write and the dial.
func WithStatusTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.statusTimeout = d
			if c.dialTimeout > d {
				c.dialTimeout = d
			}
		}
	}
}

// WithIdleTimeout sets how long a peer may go without requests before
// its connections are closed and its lanes (and their goroutines)
// dropped; the next request to it dials again. 0 keeps peers forever.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) { c.idleTimeout = max(d, 0) }
}

// WithChunkSize sets the size above which a request is split into pieces
// spread over the lanes (at least MinChunkSize).
func WithChunkSize(n int) Option {
	return func(c *config) { c.chunkSize = max(n, MinChunkSize) }
}

// WithInflightPerLane bounds the requests written but not yet answered on
// one lane (clamped to 1..MaxInflightPerLane).
func WithInflightPerLane(n int) Option {
	return func(c *config) { c.inflight = clampInt(n, 1, MaxInflightPerLane) }
}

// WithInflightBytesPerLane bounds the payload bytes written but not yet
// answered on one lane (a larger single request still goes, alone). Deep
// queues fill the socket buffers and cost cache misses, so a few MiB is
// enough; raise it for long fat networks.
func WithInflightBytesPerLane(n int) Option {
	return func(c *config) { c.inflightBytes = max(n, 1) }
}

// WithProtoVersion forces the client framing: 1 (no status frames) or 2.
func WithProtoVersion(v int) Option {
	return func(c *config) {
		if v == protoVersionV1 || v == defaultProtoVersion {
			c.proto = v
		}
	}
}

// WithPortRange sets the range the data port is picked from (inclusive).
// min == max pins the port.
func WithPortRange(min, max int) Option {
	return func(c *config) {
		if min > 0 && max >= min && max < 65536 {
			c.minPort, c.maxPort = min, max
		}
	}
}

// WithListenHost sets the address the data port binds to. The default is
// the host's LocalHost when it is an IP address, else every address.
func WithListenHost(h string) Option { return func(c *config) { c.listenHost = &h } }

// defaultLanes is DefaultLanes, or GOMAXPROCS when that is smaller.
func defaultLanes() int { return clampInt(runtime.GOMAXPROCS(0), 1, DefaultLanes) }

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

// loadConfig reads the environment, warning about and ignoring bad values.
func loadConfig(log *slog.Logger) config {
	c := config{
		proto:         defaultProtoVersion,
		lanes:         defaultLanes(),
		statusTimeout: DefaultStatusTimeout,
		dialTimeout:   DefaultDialTimeout,
		idleTimeout:   DefaultIdleTimeout,
		chunkSize:     DefaultChunkSize,
		inflight:      DefaultInflightPerLane,
		inflightBytes: DefaultInflightBytes,
		minPort:       DefaultMinPort,
		maxPort:       DefaultMaxPort,
	}
	if v, ok := envInt(log, "MC_TCP_PROTO"); ok {
		if v == protoVersionV1 || v == defaultProtoVersion {
			c.proto = v
		} else {
			log.Warn("MC_TCP_PROTO must be 1 or 2; using 2", "value", v)
		}
	}
	if v, ok := envInt(log, "MC_TCP_LANES_PER_PEER"); ok {
		if v < 1 || v > MaxLanes {
			log.Warn("MC_TCP_LANES_PER_PEER out of range 1..16; clamping", "value", v)
		}
		c.lanes = clampInt(v, 1, MaxLanes)
	}
	if v, ok := envInt(log, "MC_TCP_STATUS_TIMEOUT_SEC"); ok {
		if v > 0 {
			c.statusTimeout = time.Duration(v) * time.Second
		} else {
			log.Warn("MC_TCP_STATUS_TIMEOUT_SEC must be positive; using the default", "value", v)
		}
	}
	if v, ok := envInt(log, idleTimeoutEnv); ok {
		if v >= 0 {
			c.idleTimeout = time.Duration(v) * time.Second
		} else {
			log.Warn(idleTimeoutEnv+" must be 0 (never) or positive; using the default", "value", v)
		}
	}
	if v, ok := envInt(log, chunkSizeEnv); ok {
		c.chunkSize = max(v, MinChunkSize)
	}
	if v, ok := envInt(log, inflightPerLaneEnv); ok {
		c.inflight = clampInt(v, 1, MaxInflightPerLane)
	}
	if v, ok := envInt(log, inflightBytesEnv); ok {
		c.inflightBytes = max(v, 1)
	}
	lo, okLo := envInt(log, "MC_MIN_RPC_PORT")
	hi, okHi := envInt(log, "MC_MAX_RPC_PORT")
	if okLo || okHi {
		if !okLo {
			lo = c.minPort
		}
		if !okHi {
			hi = c.maxPort
		}
		if lo > 0 && hi >= lo && hi < 65536 {
			c.minPort, c.maxPort = lo, hi
		} else {
			log.Warn("MC_MIN_RPC_PORT/MC_MAX_RPC_PORT invalid; using 15000..17000", "min", lo, "max", hi)
		}
	}
	return c
}

func envInt(log *slog.Logger, name string) (int, bool) {
	s, ok := os.LookupEnv(name)
	if !ok || s == "" {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		log.Warn("ignoring non-integer environment value", "name", name, "value", s)
		return 0, false
	}
	return v, true
}
