package engine

import "github.com/ferrylabs/ferry/transport"

// DefaultTransports is the transport list used when Config.Transports is
// nil, in order of preference (RDMA first once it exists, then TCP). It is
// the one place where transports are wired into the engine.
func DefaultTransports() []transport.Factory {
	// Wire the TCP transport here once it builds:
	//   func(h transport.Host) (transport.Transport, error) { return tcp.New(h) }
	return nil
}
