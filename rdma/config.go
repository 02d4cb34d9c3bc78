package rdma

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ferrylabs/ferry/rdma/topology"
	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the transport's tunables. ConfigFromEnv reads them from
// Mooncake's variables; DefaultConfig has Mooncake's defaults.
type Config struct {
	// SliceSize is MC_SLICE_SIZE (bytes, default 65536).
	SliceSize uint64
	// FragmentRatio is MC_FRAGMENT_RATIO: a tail of at most
	// SliceSize/FragmentRatio bytes is merged into the previous slice
	// (default 4, i.e. 16 KiB).
	FragmentRatio uint64
	// RetryCount is MC_RETRY_CNT, attempts per slice (default 9).
	RetryCount int
	// QPsPerEndpoint is MC_NUM_QP_PER_EP (default 2); peers must agree.
	QPsPerEndpoint int
	// RailPause is MC_RDMA_RAIL_PAUSE_SECONDS (default 30 s).
	RailPause time.Duration
	// SliceTimeout fails a slice whose completion has not arrived after
	// this long (MC_SLICE_TIMEOUT seconds; default 30 s here, because a
	// lost completion must end the task). The task fails with ErrTimeout,
	// but only once the device can no longer touch its memory: the QPs
	// carrying the slice are moved to ERR and the task finishes when the
	// work request is flushed back, or, if the device never returns it,
	// when those QPs are destroyed SliceTimeout+1s later (logged as an
	// error).
	SliceTimeout time.Duration
	// ReadyAckTimeout deletes a passive endpoint whose ready ACK did not
	// come (default 10 s).
	ReadyAckTimeout time.Duration
	// HandshakeTimeout bounds one Connection exchange (default 5 s).
	HandshakeTimeout time.Duration
	// MaxSlices caps the slice slab (default 1<<20 slices in flight).
	MaxSlices int
	// BusyPoll is how long a completion loop spins on an empty CQ before
	// it sleeps on the channel (default 50 µs).
	BusyPoll time.Duration
	// DestDeviceAffinity is MC_ENABLE_DEST_DEVICE_AFFINITY: a slice's
	// first attempt goes to the peer NIC named like the local NIC that
	// sends it, when the peer's matrix lists it for the buffer
	// (rail-aligned fabrics).
	DestDeviceAffinity bool
	// PeerAffinity is MC_NIC_PEER_AFFINITY ("local=peer[,peer];..."),
	// used when MC_ENABLE_HCA_PEER_AFFINITY is on: for a local NIC, the
	// peer NICs a slice's first attempt goes to. Setting both switches
	// turns both off, as Mooncake does.
	PeerAffinity map[string][]string
	// Verbs holds the verbs tunables (MC_IB_PORT, MC_GID_INDEX, MC_MTU,
	// MC_MAX_WR, MC_MAX_CQE_PER_CTX, ...).
	Verbs verbs.Config
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		SliceSize: 65536, FragmentRatio: 4, RetryCount: 9, QPsPerEndpoint: 2,
		RailPause: 30 * time.Second, SliceTimeout: 30 * time.Second,
		ReadyAckTimeout: 10 * time.Second, HandshakeTimeout: 5 * time.Second,
		MaxSlices: 1 << 20, BusyPoll: 50 * time.Microsecond, Verbs: verbs.DefaultConfig(),
	}
}

// ConfigFromEnv reads the MC_* variables through lookup. Invalid values
// are logged and the default is kept.
func ConfigFromEnv(lookup func(string) (string, bool), log *slog.Logger) Config {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := DefaultConfig()
	c.Verbs = verbs.ConfigFromEnv(lookup, log)
	get := func(name string, lo, hi int) (int, bool) {
		s, ok := lookup(name)
		s = strings.TrimSpace(s)
		if !ok || s == "" {
			return 0, false
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			log.Warn("rdma: ignoring invalid environment value", "var", name, "value", s, "min", lo, "max", hi)
			return 0, false
		}
		return v, true
	}
	if v, ok := get("MC_SLICE_SIZE", 4096, 1<<30); ok {
		c.SliceSize = uint64(v)
	}
	if v, ok := get("MC_FRAGMENT_RATIO", 1, 1<<20); ok {
		c.FragmentRatio = uint64(v)
	}
	if v, ok := get("MC_RETRY_CNT", 1, 1000); ok {
		c.RetryCount = v
	}
	if v, ok := get("MC_NUM_QP_PER_EP", 1, 64); ok {
		c.QPsPerEndpoint = v
	}
	if v, ok := get("MC_RDMA_RAIL_PAUSE_SECONDS", 0, 86400); ok {
		c.RailPause = time.Duration(v) * time.Second
	}
	if v, ok := get("MC_SLICE_TIMEOUT", 1, 86400); ok {
		c.SliceTimeout = time.Duration(v) * time.Second
	}
	dest := envBool(lookup, log, "MC_ENABLE_DEST_DEVICE_AFFINITY")
	hca := envBool(lookup, log, "MC_ENABLE_HCA_PEER_AFFINITY")
	switch {
	case dest && hca:
		log.Error("rdma: MC_ENABLE_DEST_DEVICE_AFFINITY and MC_ENABLE_HCA_PEER_AFFINITY are both set; using neither")
	case dest:
		c.DestDeviceAffinity = true
	case hca:
		s, _ := lookup("MC_NIC_PEER_AFFINITY")
		c.PeerAffinity = ParsePeerAffinity(s, log)
		if len(c.PeerAffinity) == 0 {
			log.Warn("rdma: MC_ENABLE_HCA_PEER_AFFINITY is set but MC_NIC_PEER_AFFINITY has no rule")
		}
	}
	return c
}

// envBool reads a 0|1|true|false variable (case-insensitive); anything
// else is logged and read as false.
func envBool(lookup func(string) (string, bool), log *slog.Logger, name string) bool {
	s, ok := lookup(name)
	s = strings.TrimSpace(s)
	if !ok || s == "" {
		return false
	}
	switch strings.ToLower(s) {
	case "1", "true":
		return true
	case "0", "false":
		return false
	}
	log.Warn("rdma: ignoring invalid environment value; want 0, 1, true or false", "var", name, "value", s)
	return false
}

// ParsePeerAffinity parses MC_NIC_PEER_AFFINITY: rules separated by ";",
// each "local_nic=peer_nic[,peer_nic...]". A malformed rule is logged and
// skipped; a local NIC named twice keeps its last rule.
func ParsePeerAffinity(s string, log *slog.Logger) map[string][]string {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := map[string][]string{}
	for _, rule := range strings.Split(s, ";") {
		rule = strings.TrimSpace(rule)
		if rule == "" {
			continue
		}
		local, peers, ok := strings.Cut(rule, "=")
		local = strings.TrimSpace(local)
		if !ok || local == "" || strings.Contains(local, ",") {
			log.Warn("rdma: invalid MC_NIC_PEER_AFFINITY rule; want local_nic=peer_nic[,peer_nic]", "rule", rule)
			continue
		}
		var names []string
		for _, p := range strings.Split(peers, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.Contains(p, "=") {
				names = append(names, p)
			} else if p != "" {
				log.Warn("rdma: MC_NIC_PEER_AFFINITY: skipping a peer NIC name with '='", "rule", rule, "name", p)
			}
		}
		if len(names) == 0 {
			log.Warn("rdma: MC_NIC_PEER_AFFINITY rule names no peer NIC", "rule", rule)
			continue
		}
		out[local] = names
	}
	return out
}

type options struct {
	cfg      Config
	provider verbs.Provider
	source   topology.Source
	topo     *topology.Topology
	topoCfg  *topology.Config
	reg      prometheus.Registerer
	server   string
}

// Option configures New.
type Option func(*options)

// WithConfig replaces the configuration read from the environment.
func WithConfig(c Config) Option { return func(o *options) { o.cfg = c } }

// WithProvider sets the verbs provider (default verbs.System()).
func WithProvider(p verbs.Provider) Option { return func(o *options) { o.provider = p } }

// WithTopologySource sets where NICs are discovered (default
// topology.System).
func WithTopologySource(s topology.Source) Option { return func(o *options) { o.source = s } }

// WithTopology uses an already built topology instead of discovering one.
func WithTopology(t *topology.Topology) Option { return func(o *options) { o.topo = t } }

// WithTopologyConfig replaces the topology settings read from the
// environment (MC_TE_FILTERS, MC_CUSTOM_TOPO_JSON, MC_GID_INDEX).
func WithTopologyConfig(c topology.Config) Option { return func(o *options) { o.topoCfg = &c } }

// WithRegisterer registers the transport's metrics (default: none).
func WithRegisterer(r prometheus.Registerer) Option { return func(o *options) { o.reg = r } }

// WithServerName sets the server name of NIC paths ("<server>@<nic>")
// and publishes it as rdma_server_name (MC_RDMA_BIND_ADDRESS). The
// default is the host's segment name.
func WithServerName(s string) Option { return func(o *options) { o.server = s } }

func envLookup(name string) (string, bool) { return os.LookupEnv(name) }
