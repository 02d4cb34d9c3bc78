package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
	"github.com/prometheus/client_golang/prometheus"
)

// MetadataP2P is the metadata mode without a metadata service:
// descriptors are fetched from each peer's handshake daemon.
const MetadataP2P = metadata.P2PHandshake

// Config configures an Engine. Zero values take Mooncake's defaults.
type Config struct {
	// LocalServerName is "host[:port]". The port is ignored, as in
	// Mooncake: the engine binds a random handshake port and names
	// itself "host:<port>". host is also what peers dial.
	LocalServerName string
	// MetadataServer selects the metadata mode: "P2PHANDSHAKE" (or "")
	// or a central store, as Mooncake writes it: "etcd://h:p[,h:p]" (or a
	// bare "h:p"), "redis://h:p", "http://h:p/path". With a central
	// store the segment is named LocalServerName verbatim, and the engine
	// publishes where its handshake daemon listens (rpc_meta) and its
	// segment descriptor (ram), rewriting the descriptor at every
	// RegisterMemory and UnregisterMemory and deleting both at Close.
	MetadataServer string
	// MetadataStore, when set, is the central store to use instead of
	// opening MetadataServer (MetadataServer then only names it in logs;
	// it must not be P2PHANDSHAKE). The caller owns it: Close does not
	// close it.
	MetadataStore metadata.Store
	// MetadataClusterID namespaces the keys of a central store
	// (MC_METADATA_CLUSTER_ID): "mooncake/<id>/...".
	MetadataClusterID string
	// RPCHost is the address published for this engine in a central
	// store (MC_TCP_BIND_ADDRESS). "" means the first up, running,
	// non-loopback IPv4 address. Unused in P2PHANDSHAKE mode, where the
	// host of LocalServerName is what peers dial.
	RPCHost string
	// Protocol restricts the engine to the transport of that name ("tcp",
	// "rdma"); "" installs every transport that works here, in
	// Transports order, the first being preferred.
	Protocol string
	// Transports are the transport constructors; nil means
	// DefaultTransports().
	Transports []transport.Factory
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the engine's metrics; nil registers nothing.
	Registerer prometheus.Registerer

	// MinRPCPort and MaxRPCPort bound the handshake port
	// (MC_MIN_RPC_PORT, MC_MAX_RPC_PORT; 15000..17000).
	MinRPCPort, MaxRPCPort int
	// HandshakeConnectTimeout bounds dials to peers' daemons
	// (MC_HANDSHAKE_CONNECT_TIMEOUT, 5 s).
	HandshakeConnectTimeout time.Duration
	// HandshakeListenBacklog is the daemon's backlog
	// (MC_HANDSHAKE_LISTEN_BACKLOG, 128).
	HandshakeListenBacklog int
	// HandshakeMaxLength caps handshake frames (MC_HANDSHAKE_MAX_LENGTH,
	// 1 MiB, 1 B..128 MiB).
	HandshakeMaxLength uint64
	// HandshakeMaxConns bounds the daemon's concurrent connections (64).
	HandshakeMaxConns int
	// DisableMetaCache refetches a descriptor at every lookup
	// (MC_DISABLE_METACACHE).
	DisableMetaCache bool
	// MetadataRefreshInterval, when positive, refetches every open
	// segment's descriptor at that period
	// (MC_TE_METADATA_REFRESH_INTERVAL_SECONDS; 0 = off). A descriptor
	// that changed (ignoring its timestamp) replaces the cached one.
	MetadataRefreshInterval time.Duration
	// BindHost is the IP the handshake daemon binds. "" binds the host of
	// LocalServerName when it is an IP address, otherwise every address.
	BindHost string
}

// p2p reports whether the engine runs without a central store.
func (c *Config) p2p() bool { return c.MetadataStore == nil && c.MetadataServer == MetadataP2P }

// ConfigFromEnv reads the MC_* variables the engine understands, with
// Mooncake's defaults and rules: a value that does not parse or is out of
// range is logged (slog.Default) and ignored. MC_FORCE_TCP sets Protocol
// to "tcp"; MC_FORCE_HCA to "rdma"; both set is an error. MC_USE_TENT is
// not implemented (error). LocalServerName and MetadataServer are left
// for the caller (they are flags in Mooncake's tools).
func ConfigFromEnv() (Config, error) {
	var cfg Config
	log := slog.Default()
	intVar := func(name string, lo, hi int, dst *int) {
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			log.Warn("ignoring invalid environment value", "var", name, "value", v, "min", lo, "max", hi)
			return
		}
		*dst = n
	}
	intVar("MC_MIN_RPC_PORT", 1, 65535, &cfg.MinRPCPort)
	intVar("MC_MAX_RPC_PORT", 1, 65535, &cfg.MaxRPCPort)
	minP, maxP := cfg.MinRPCPort, cfg.MaxRPCPort
	if minP == 0 {
		minP = metadata.DefaultMinRPCPort
	}
	if maxP == 0 {
		maxP = metadata.DefaultMaxRPCPort
	}
	if minP > maxP {
		log.Warn("ignoring inverted RPC port range", "MC_MIN_RPC_PORT", minP, "MC_MAX_RPC_PORT", maxP)
		cfg.MinRPCPort, cfg.MaxRPCPort = 0, 0
	}
	var secs int
	intVar("MC_HANDSHAKE_CONNECT_TIMEOUT", 1, 3600, &secs)
	cfg.HandshakeConnectTimeout = time.Duration(secs) * time.Second
	intVar("MC_HANDSHAKE_LISTEN_BACKLOG", 1, 65535, &cfg.HandshakeListenBacklog)
	var maxLen int
	intVar("MC_HANDSHAKE_MAX_LENGTH", int(metadata.MinMaxFrameLength), int(metadata.MaxMaxFrameLength), &maxLen)
	cfg.HandshakeMaxLength = uint64(maxLen)
	var refresh int
	intVar("MC_TE_METADATA_REFRESH_INTERVAL_SECONDS", 0, 86400, &refresh)
	cfg.MetadataRefreshInterval = time.Duration(refresh) * time.Second
	cfg.MetadataClusterID = strings.TrimSpace(os.Getenv("MC_METADATA_CLUSTER_ID"))
	cfg.RPCHost = strings.TrimSpace(os.Getenv("MC_TCP_BIND_ADDRESS"))
	if _, ok := os.LookupEnv("MC_DISABLE_METACACHE"); ok {
		cfg.DisableMetaCache = true
	}
	_, forceTCP := os.LookupEnv("MC_FORCE_TCP")
	_, forceHCA := os.LookupEnv("MC_FORCE_HCA")
	var errs []error
	switch {
	case forceTCP && forceHCA:
		errs = append(errs, fmt.Errorf("%w: MC_FORCE_TCP and MC_FORCE_HCA are both set", ErrInvalidArgument))
	case forceTCP:
		cfg.Protocol = metadata.ProtocolTCP
	case forceHCA:
		cfg.Protocol = metadata.ProtocolRDMA
	}
	for _, v := range []string{"MC_USE_TENT", "MC_USE_TEV1"} {
		if s := os.Getenv(v); s != "" && s != "0" {
			errs = append(errs, fmt.Errorf("%w: %s (TENT)", ErrNotImplemented, v))
		}
	}
	return cfg, errors.Join(errs...)
}

// fill applies defaults and validates cfg.
func (c *Config) fill() error {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MetadataServer == "" && c.MetadataStore == nil {
		c.MetadataServer = MetadataP2P
	}
	if strings.EqualFold(c.MetadataServer, MetadataP2P) {
		c.MetadataServer = MetadataP2P
		if c.MetadataStore != nil {
			return fmt.Errorf("%w: a MetadataStore with metadata server %s", ErrInvalidArgument, MetadataP2P)
		}
	} else if c.MetadataStore == nil {
		if _, err := metadata.ParseServer(c.MetadataServer); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
	}
	if c.LocalServerName == "" {
		return fmt.Errorf("%w: empty LocalServerName", ErrInvalidArgument)
	}
	if c.HandshakeMaxLength != 0 && (c.HandshakeMaxLength < metadata.MinMaxFrameLength || c.HandshakeMaxLength > metadata.MaxMaxFrameLength) {
		return fmt.Errorf("%w: HandshakeMaxLength %d outside [%d, %d]", ErrInvalidArgument, c.HandshakeMaxLength, metadata.MinMaxFrameLength, metadata.MaxMaxFrameLength)
	}
	if c.HandshakeMaxLength == 0 {
		c.HandshakeMaxLength = metadata.DefaultMaxFrameLength
	}
	if c.HandshakeConnectTimeout <= 0 {
		c.HandshakeConnectTimeout = metadata.DefaultConnectTimeout
	}
	if c.Transports == nil {
		c.Transports = defaultTransports(c)
	}
	return nil
}
