package client

import (
	"context"
	"time"

	"github.com/ferrylabs/ferry/engine"
)

// Replica is where the master says a key lives.
type Replica struct {
	// OwnerID is the owner's id.
	OwnerID string
	// Endpoint is the owner's RPC host:port.
	Endpoint string
	// Segment is the owner engine's segment name.
	Segment string
	// Size is the object's size in bytes.
	Size int64
	// Err is non-nil (wrapping ErrNotFound for a missing key) when the
	// key has no usable replica; the other fields are then empty.
	Err error
}

// Master is the part of the master's API the requester uses. The gRPC
// client in this package implements it.
type Master interface {
	// Lookup returns one Replica per key, in order.
	Lookup(ctx context.Context, tenant string, keys [][]byte) ([]Replica, error)
	// Place chooses an owner for each new key (BatchPutStart); a
	// Replica's Size is the requested size.
	Place(ctx context.Context, tenant string, keys [][]byte, sizes []int64) ([]Replica, error)
	// List returns the keys of tenant starting with prefix, with sizes,
	// or an error wrapping errors.ErrUnsupported if the master cannot.
	List(ctx context.Context, tenant string, prefix []byte) ([]Listed, error)
}

// Listed is one key returned by List.
type Listed struct {
	Key  []byte
	Size int64
}

// OwnerBatch is an owner's answer to a get or put start.
type OwnerBatch struct {
	ID      uint64
	Addrs   []uint64
	Segment string
	Lease   time.Duration
}

// Owner is one owner's RPC surface. Errors from Get and PutStart wrap
// ErrStagingExhausted when the owner's staging is full, ErrNotFound when
// a key is missing, and ErrOwner otherwise.
type Owner interface {
	Get(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (OwnerBatch, error)
	Release(ctx context.Context, id uint64) error
	PutStart(ctx context.Context, tenant string, keys [][]byte, sizes []int64) (OwnerBatch, error)
	// PutCommit returns one error per key.
	PutCommit(ctx context.Context, id uint64) ([]error, error)
}

// Engine is the part of the transfer engine the requester uses;
// *engine.Engine implements it.
type Engine interface {
	OpenSegment(ctx context.Context, name string) (engine.SegmentID, error)
	AllocateBatch(capacity int) (*engine.Batch, error)
}
