package owner

import (
	"context"
	"time"
)

// Object is one stored object as reported to the master.
type Object struct {
	Tenant string
	Key    []byte
	Size   int64
}

// MountInfo is what the owner tells the master when it mounts.
type MountInfo struct {
	// OwnerID identifies this owner process (a fresh UUID per start).
	OwnerID string
	// RPCEndpoint is host:port of the owner's gRPC service.
	RPCEndpoint string
	// SegmentName is the owner engine's segment name.
	SegmentName string
	// Capacity is the configured byte capacity.
	Capacity int64
	// EnableOffloading accepts new objects (the write path).
	EnableOffloading bool
}

// Master is the part of the master's API the owner uses. Implementations
// bound every call by ctx. The gRPC client in this package implements it.
type Master interface {
	// Mount registers the owner; it is idempotent. ttl is the master's
	// client TTL (0 if unknown): the owner pings well within it.
	Mount(ctx context.Context, m MountInfo) (ttl time.Duration, err error)
	// Unmount deregisters the owner and drops its replicas.
	Unmount(ctx context.Context, ownerID string) error
	// Ping refreshes the owner's TTL. mounted is false when the master no
	// longer knows the owner; the owner must then mount and rescan.
	Ping(ctx context.Context, ownerID string) (mounted bool, err error)
	// NotifySuccess records objects now stored by the owner.
	NotifySuccess(ctx context.Context, ownerID string, objs []Object) error
	// NotifyFailure reports objects the owner failed to store.
	NotifyFailure(ctx context.Context, ownerID string, objs []Object) error
	// ReportCapacity tells the master the owner's capacity.
	ReportCapacity(ctx context.Context, ownerID string, capacity int64) error
}

// Engine is the part of the transfer engine the owner uses;
// *engine.Engine implements it.
type Engine interface {
	// Name is the engine's segment name, which requesters open.
	Name() string
	// RegisterMemory makes mem accessible to transfers (to peers when
	// remoteAccessible).
	RegisterMemory(mem []byte, location string, remoteAccessible bool) error
	// UnregisterMemory undoes RegisterMemory.
	UnregisterMemory(mem []byte) error
	// Serving reports whether a peer's request is moving bytes from or
	// to local memory [addr, addr+length) right now, as far as the
	// engine's transports can tell (*engine.Engine: TCP can, RDMA
	// cannot). An expired lease's slots are not reused while it is.
	Serving(addr, length uint64) bool
}
