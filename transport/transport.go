// Package transport defines the interface every Ferry data path implements
// (TCP, RDMA) and the types the engine and the transports share.
//
// The engine owns every Task. A transport receives tasks through Submit,
// moves the bytes, and reports the outcome exactly once per task with
// Task.Finish. Between Submit and Finish the transport may read the task's
// fields and call AddTransferred; after Finish it must not touch the task,
// because the engine reuses it.
package transport

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// Opcode is the direction of a transfer, with Mooncake's numbering.
type Opcode uint8

const (
	// Read copies remote memory into local memory.
	Read Opcode = 0
	// Write copies local memory into remote memory.
	Write Opcode = 1
)

func (o Opcode) String() string {
	switch o {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "invalid"
}

// Sentinel errors shared by transports. Transports wrap them with %w so the
// engine can map them to its own error codes.
var (
	// ErrClosed is returned by calls on a closed transport.
	ErrClosed = errors.New("transport closed")
	// ErrAddressNotRegistered means an address range lies outside every
	// registered region (locally, or as the peer reported it).
	ErrAddressNotRegistered = errors.New("address not registered")
	// ErrPeerUnreachable means the peer could not be reached or stopped
	// answering within the transport's deadline.
	ErrPeerUnreachable = errors.New("peer unreachable")
	// ErrNotSupported means the transport cannot work on this machine (for
	// RDMA: no device, no uverbs) or cannot reach the given segment.
	ErrNotSupported = errors.New("not supported")
	// ErrCanceled is the error (wrapped) of a task that Canceler.Cancel
	// ended before it completed. Its local memory may hold partial data
	// (Read) and the remote range may hold partial data (Write).
	ErrCanceled = errors.New("transfer canceled")
)

// Host is what the engine offers a transport: its identity, the handshake
// channel to peers and the segment cache.
type Host interface {
	// LocalName is the local segment name ("host:port" in P2PHANDSHAKE mode).
	LocalName() string
	// LocalHost is the host part of LocalName, the address peers dial.
	LocalHost() string
	// Call sends one frame of type typ with body to the handshake daemon
	// of the segment named peer and returns the reply body. body is not
	// retained.
	Call(ctx context.Context, peer string, typ metadata.FrameType, body []byte) ([]byte, error)
	// Refresh refetches the descriptor of seg from its owner and replaces
	// the cached one. Transports call it when an address is not covered by
	// any cached buffer, or after a transport error.
	Refresh(ctx context.Context, seg *Segment) error
	// Logger is the engine's logger.
	Logger() *slog.Logger
}

// Transport is one data path. Implementations must be safe for concurrent
// use.
type Transport interface {
	// Name is the protocol name published in segment descriptors ("tcp",
	// "rdma").
	Name() string
	// Register makes r available to the transport (and, when
	// r.RemoteAccessible, to peers). The engine has checked that r is not
	// empty and overlaps no other region.
	Register(r Region) error
	// Unregister removes the region that starts at addr. Requests in
	// flight on it complete or fail before Unregister returns.
	Unregister(addr uint64) error
	// Describe adds this transport's fields to the local segment
	// descriptor d. The engine has filled Name and Buffers (one entry per
	// registered region, in address order) before it calls Describe.
	Describe(d *metadata.SegmentDesc)
	// Reaches reports whether the transport can move bytes to and from
	// the segment described by d.
	Reaches(d *metadata.SegmentDesc) bool
	// Submit starts every task in tasks. It must not block on the network
	// for longer than it takes to queue the work. A task that cannot be
	// started is finished with an error; Submit returns an error only
	// when no task was accepted at all, in which case none were finished.
	Submit(tasks []*Task) error
	// Close stops the transport, fails tasks in flight with ErrClosed and
	// releases its resources. It is idempotent.
	Close() error
}

// ServingReporter is implemented by transports whose server side moves
// the bytes of peers' requests itself (TCP) and so can tell whether a
// peer's request is using a range of local memory. One-sided transports
// (RDMA: the NIC serves peers' reads and writes) cannot, and do not
// implement it.
type ServingReporter interface {
	// Serving reports whether a peer's request is moving bytes from or
	// to any part of [addr, addr+length) right now.
	Serving(addr, length uint64) bool
}

// Canceler is implemented by transports that can abandon tasks in flight
// without waiting for the peer.
type Canceler interface {
	// Cancel ends every task of tasks that this transport has been given
	// and not yet finished. When Cancel returns, no goroutine of the
	// transport reads (Write) or writes (Read) those tasks' Local memory
	// any more, and each of them has been finished (or will be, without
	// touching Local again) with an error wrapping ErrCanceled, or with
	// its real outcome if it ended first. Tasks the transport does not
	// hold (never submitted to it, or already finished) are ignored;
	// the caller must not resubmit or reuse any task of tasks until
	// Cancel returns. Cancel waits at most the transport's own dead-peer
	// timeout, and tasks sharing a connection with the cancelled ones go
	// on unaffected where the transport can manage it. tasks is not
	// retained.
	Cancel(tasks []*Task)
}

// ConnectionHandler is implemented by transports that accept Connection
// frames (the RDMA QP handshake) on the engine's handshake daemon.
type ConnectionHandler interface {
	// HandleConnection answers one Connection frame body with a reply
	// body.
	HandleConnection(ctx context.Context, body []byte) ([]byte, error)
}
