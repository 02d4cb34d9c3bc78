package engine

import (
	"os"

	"github.com/ferrylabs/ferry/rdma"
	"github.com/ferrylabs/ferry/tcp"
	"github.com/ferrylabs/ferry/transport"
)

// DefaultTransports is the transport list used when Config.Transports is
// nil, in order of preference: RDMA first, then TCP. RDMA reports
// transport.ErrNotSupported on machines without a usable NIC, and the
// engine then runs on TCP alone.
// It is the one place where transports are wired into the engine.
func DefaultTransports() []transport.Factory { return defaultTransports(&Config{}) }

// defaultTransports builds the default list with cfg's metrics registerer
// and RPC port range.
func defaultTransports(cfg *Config) []transport.Factory {
	tcpOpts := []tcp.Option{tcp.WithRegisterer(cfg.Registerer)}
	if cfg.MinRPCPort != 0 || cfg.MaxRPCPort != 0 {
		lo, hi := cfg.MinRPCPort, cfg.MaxRPCPort
		if lo == 0 {
			lo = 15000
		}
		if hi == 0 {
			hi = 17000
		}
		tcpOpts = append(tcpOpts, tcp.WithPortRange(lo, hi))
	}
	rdmaOpts := []rdma.Option{rdma.WithRegisterer(cfg.Registerer)}
	if addr := os.Getenv("MC_RDMA_BIND_ADDRESS"); addr != "" {
		rdmaOpts = append(rdmaOpts, rdma.WithServerName(addr))
	}
	return []transport.Factory{
		func(h transport.Host) (transport.Transport, error) {
			if cfg.Protocol == "tcp" {
				// Forced TCP (MC_FORCE_TCP, --protocol=tcp): do not
				// open RDMA devices at all.
				return nil, transport.ErrNotSupported
			}
			return rdma.New(h, rdmaOpts...)
		},
		func(h transport.Host) (transport.Transport, error) { return tcp.New(h, tcpOpts...) },
	}
}
