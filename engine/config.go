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

// MetadataP2P is the only metadata mode implemented: no metadata service,
// descriptors are fetched from each peer's handshake daemon.
const MetadataP2P = "P2PHANDSHAKE"

// Config configures an Engine. Zero values take Mooncake's defaults.
type Config struct {
	// LocalServerName is "host[:port]". The port is ignored, as in
	// Mooncake: the engine binds a random handshake port and names
	// itself "host:<port>". host is also what peers dial.
	LocalServerName string
	// MetadataServer selects the metadata mode; only "P2PHANDSHAKE" (or
	// "") is implemented, others fail with ErrNotImplemented.
	MetadataServer string
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
	if c.MetadataServer == "" {
		c.MetadataServer = MetadataP2P
	}
	if !strings.EqualFold(c.MetadataServer, MetadataP2P) {
		return fmt.Errorf("%w: metadata server %q (only %s)", ErrNotImplemented, c.MetadataServer, MetadataP2P)
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
