package engine

import (
	"github.com/ferrylabs/ferry/tcp"
	"github.com/ferrylabs/ferry/transport"
)

// DefaultTransports is the transport list used when Config.Transports is
// nil, in order of preference: RDMA first once it is wired here, then TCP.
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
	return []transport.Factory{
		func(h transport.Host) (transport.Transport, error) { return tcp.New(h, tcpOpts...) },
	}
}
