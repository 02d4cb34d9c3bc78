package bench

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/engine"
)

// ErrProtocolUnavailable means the engine could not install the transport
// named by --protocol on this machine.
var ErrProtocolUnavailable = errors.New("bench: protocol not available")

// Node is an engine with the benchmark buffer registered in it.
type Node struct {
	Engine *engine.Engine
	Buf    *Buffer
}

// StartNode starts an engine restricted to cfg.Protocol and registers a
// cfg.BufferSize buffer with it (remote-accessible). reg may be nil.
func StartNode(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Node, error) {
	ecfg, err := engine.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	ecfg.LocalServerName = cfg.LocalServerName
	ecfg.MetadataServer = cfg.MetadataServer
	ecfg.Protocol = cfg.Protocol
	ecfg.Logger = log
	ecfg.Registerer = reg
	e, err := engine.New(ecfg)
	if err != nil {
		if errors.Is(err, engine.ErrNoTransport) {
			hint := ""
			if cfg.Protocol == "rdma" {
				hint = "; use --protocol=tcp"
			}
			return nil, fmt.Errorf("%w: cannot install %s here (%v)%s", ErrProtocolUnavailable, cfg.Protocol, err, hint)
		}
		return nil, err
	}
	buf, err := NewBuffer(cfg.BufferSize, log)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("bench: allocating a %d-byte buffer: %w", cfg.BufferSize, err)
	}
	if err := e.RegisterMemory(buf.Bytes, "cpu:0", true); err != nil {
		e.Close()
		buf.Close()
		return nil, fmt.Errorf("bench: registering the buffer: %w", err)
	}
	return &Node{Engine: e, Buf: buf}, nil
}

// Name is the segment name peers connect to.
func (n *Node) Name() string { return n.Engine.Name() }

// Close stops the engine and unmaps the buffer.
func (n *Node) Close() error {
	err := n.Engine.Close()
	return errors.Join(err, n.Buf.Close())
}
