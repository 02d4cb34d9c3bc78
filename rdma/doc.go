// Package rdma is Ferry's RDMA transport: one-sided RC READ/WRITE over
// every local NIC, wire-compatible with Mooncake's Transfer Engine.
//
// A Transport opens every NIC of the topology (rdma/topology) through a
// verbs.Provider (rdma/verbs on hardware, rdma/fakeverbs in tests),
// registers every region on every NIC and publishes the keys, devices and
// priority matrix in the segment descriptor. Each task is cut into slices
// (MC_SLICE_SIZE, clipped at buffer edges on both sides, with the tail
// merged under MC_FRAGMENT_RATIO); each slice is sprayed over the local
// NICs by an EWMA- and NUMA-weighted score, and over the peer's NICs by
// the peer's priority matrix. Endpoints (MC_NUM_QP_PER_EP RC QPs towards
// one peer NIC) are created on first use with Mooncake's JSON Connection
// handshake. One completion goroutine per CQ, locked to its OS thread,
// busy-polls and then sleeps on the completion channel.
//
// A slice that fails is retried on another rail (up to MC_RETRY_CNT
// attempts), a failing peer NIC is paused for MC_RDMA_RAIL_PAUSE_SECONDS,
// and the peer's descriptor is refetched. A task that RDMA cannot finish
// fails with an error wrapping ErrTransferFailed (and, where it applies,
// a transport sentinel), so the engine can fail it over to TCP. A slice
// whose completion does not come within MC_SLICE_TIMEOUT fails its task
// with ErrTimeout, but the task finishes only once the device can no
// longer touch its memory (see Config.SliceTimeout).
package rdma

import (
	"errors"
	"fmt"

	"github.com/ferrylabs/ferry/transport"
)

// Sentinel errors.
var (
	// ErrNotSupported means RDMA cannot run here (no device, no verbs
	// support). It wraps transport.ErrNotSupported.
	ErrNotSupported = fmt.Errorf("rdma: %w", transport.ErrNotSupported)
	// ErrTransferFailed means RDMA could not complete a task (retries
	// exhausted, no usable rail, handshake failures). The engine may
	// fail the task over to another transport.
	ErrTransferFailed = errors.New("rdma: transfer failed")
	// ErrTimeout means a slice did not complete within the slice
	// timeout (a lost completion or a stuck peer). It wraps
	// ErrTransferFailed.
	ErrTimeout = fmt.Errorf("%w: slice timed out", ErrTransferFailed)
	// ErrHandshake means an RDMA connection handshake failed or was
	// rejected by the peer.
	ErrHandshake = errors.New("rdma: connection handshake failed")
	// ErrQPCountMismatch means the peer uses a different
	// MC_NUM_QP_PER_EP. It wraps ErrHandshake.
	ErrQPCountMismatch = fmt.Errorf("%w: QP count mismatch", ErrHandshake)
	// ErrBadHandshake means a Connection frame body is malformed. It
	// wraps ErrHandshake.
	ErrBadHandshake = fmt.Errorf("%w: malformed handshake", ErrHandshake)
	// ErrTooLarge means a task needs more slices than the slab may hold.
	ErrTooLarge = errors.New("rdma: request too large")
)

var errNICDown = fmt.Errorf("%w: local NIC went down", ErrTransferFailed)

var errQPFlushed = fmt.Errorf("%w: QP entered the error state", ErrTransferFailed)
