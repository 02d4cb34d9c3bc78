package verbs

import "context"

// Provider lists and opens RDMA devices. System returns the libibverbs
// provider; rdma/fakeverbs provides an in-process one for tests. A Provider
// is safe for concurrent use.
type Provider interface {
	// Devices lists the devices. With no device (or no kernel support) it
	// returns an error matching ErrNoDevice (and so ErrNotSupported).
	Devices() ([]DeviceInfo, error)
	// Open opens the named device. An unknown name gives ErrDeviceNotFound.
	// The caller must Close the Device.
	Open(name string) (Device, error)
}

// DeviceInfo describes a device before it is opened.
type DeviceInfo struct {
	// Name is the kernel name, e.g. "mlx5_0".
	Name string
	// NodeGUID is the node GUID in host byte order.
	NodeGUID uint64
	// NumaNode is the device's NUMA node, or -1 if unknown.
	NumaNode int
}

// DeviceAttr holds the device limits Ferry clamps its configuration to.
type DeviceAttr struct {
	FirmwareVersion string
	NodeGUID        uint64
	VendorID        uint32
	VendorPartID    uint32
	MaxMRSize       uint64
	MaxQP           int
	MaxQPWR         int
	MaxSGE          int
	MaxCQ           int
	MaxCQE          int
	MaxMR           int
	MaxPD           int
	MaxQPRdAtom     int
	MaxQPInitRdAtom int
	PhysPortCount   int
}

// PortAttr holds what Ferry needs from ibv_query_port.
type PortAttr struct {
	State        PortState
	MaxMTU       MTU
	ActiveMTU    MTU
	LID          uint16
	SMLID        uint16
	GIDTableLen  int
	PKeyTableLen int
	LinkLayer    LinkLayer
	// ActiveWidth and ActiveSpeed are the raw IB encodings.
	ActiveWidth uint8
	ActiveSpeed uint8
}

// GIDEntry is one GID table entry, as ibv_query_gid_ex reports it. An
// empty table slot is returned as an entry with a zero GID and a nil error.
type GIDEntry struct {
	GID   GID
	Index int
	Port  uint8
	Type  GIDType
	// NetdevIndex is the ifindex of the netdev behind a RoCE GID, or 0.
	NetdevIndex int
}

// AsyncEvent is an asynchronous device event, already acknowledged.
type AsyncEvent struct {
	Type AsyncEventType
	// Port is set for port events (PORT_ACTIVE, PORT_ERR, LID_CHANGE,
	// GID_CHANGE, ...).
	Port uint8
	// QPNum is set for QP events (QP_FATAL, QP_REQ_ERR, ...).
	QPNum uint32
}

// Device is an open RDMA device (an ibv_context). Safe for concurrent use.
type Device interface {
	// Info returns what Devices reported for this device.
	Info() DeviceInfo
	// Query returns the device limits.
	Query() (DeviceAttr, error)
	// QueryPort returns the attributes of port (1-based).
	QueryPort(port uint8) (PortAttr, error)
	// QueryGID returns GID table entry index of port. An index past the
	// table gives ErrInvalidArgument.
	QueryGID(port uint8, index int) (GIDEntry, error)
	// AllocPD allocates a protection domain.
	AllocPD() (PD, error)
	// CreateCompChannel creates a completion channel whose fd wakes a
	// completion loop through the Go netpoller.
	CreateCompChannel() (CompChannel, error)
	// CreateCQ creates a completion queue of at least depth entries
	// (depth >= 1). ch may be nil (poll-only CQ); otherwise it must come
	// from this device.
	CreateCQ(depth int, ch CompChannel) (CQ, error)
	// AsyncEvents blocks until at least one asynchronous event is
	// available, fills out (len(out) >= 1) and returns how many it wrote.
	// It returns ctx.Err() when ctx ends first and ErrClosed after Close.
	AsyncEvents(ctx context.Context, out []AsyncEvent) (int, error)
	// Close releases the device. It fails with ErrBusy while PDs, CQs or
	// channels are open, and is a no-op when called again.
	Close() error
}

// PD is a protection domain. Safe for concurrent use.
type PD interface {
	// RegMR registers mem (len(mem) > 0) with the given access. mem must not
	// be Go heap memory (see the package doc); the caller keeps it mapped
	// until the MR is closed. Remote access flags require
	// AccessLocalWrite, as in verbs.
	RegMR(mem []byte, access Access) (MR, error)
	// CreateQP creates a queue pair of type typ (only QPTypeRC) in RESET
	// state, sending completions to send and receive completions to recv
	// (both from this device; they may be the same CQ).
	CreateQP(typ QPType, caps QPCaps, send, recv CQ) (QP, error)
	// Close deallocates the PD; ErrBusy while MRs or QPs remain.
	Close() error
}

// MR is a registered memory region.
type MR interface {
	// LKey is the key local work requests use.
	LKey() uint32
	// RKey is the key a peer uses to access the region.
	RKey() uint32
	// Addr is the address of the region's first byte.
	Addr() uint64
	// Len is the region's length in bytes.
	Len() uint64
	// Access is what the region was registered with.
	Access() Access
	// Close deregisters the region. The memory stays the caller's; it may
	// be reused or unmapped once Close returns and no posted work request
	// still refers to it.
	Close() error
}

// QPCaps are queue pair capacities. After CreateQP, QP.Caps reports the
// values the device actually granted (at least the requested ones).
type QPCaps struct {
	MaxSendWR uint32
	MaxRecvWR uint32
	MaxSGE    uint32
	MaxInline uint32
}

// InitAttr are the RESET->INIT attributes.
type InitAttr struct {
	Port      uint8
	PKeyIndex uint16
	Access    Access
}

// RTRAttr are the INIT->RTR attributes. Start from DefaultRTRAttr.
type RTRAttr struct {
	// Port is the local port number of the address vector.
	Port uint8
	// PathMTU is min(active MTU, MC_MTU).
	PathMTU   MTU
	DestQPNum uint32
	// DGID is the peer GID. A zero DGID sends without a GRH (IB LID
	// routing); otherwise the GRH uses SGIDIndex, TrafficClass, HopLimit.
	DGID            GID
	SGIDIndex       uint8
	DLID            uint16
	SL              uint8
	TrafficClass    uint8
	HopLimit        uint8
	RQPSN           uint32
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
}

// RTSAttr are the RTR->RTS attributes. Start from DefaultRTSAttr.
type RTSAttr struct {
	Timeout     uint8
	RetryCount  uint8
	RNRRetry    uint8
	SQPSN       uint32
	MaxRdAtomic uint8
}

// DefaultRTRAttr returns Mooncake's INIT->RTR values: MTU 4096, hop limit
// 16, rq_psn 0, max_dest_rd_atomic 16, min_rnr_timer 12, port 1. The
// caller fills in the peer (DestQPNum, DGID, DLID) and SGIDIndex.
func DefaultRTRAttr() RTRAttr {
	return RTRAttr{Port: 1, PathMTU: MTU4096, HopLimit: 16, MaxDestRdAtomic: 16, MinRNRTimer: 12}
}

// DefaultRTSAttr returns Mooncake's RTR->RTS values: timeout 14 (about 67
// ms), retry 7, rnr retry 7, sq_psn 0, max_rd_atomic 16.
func DefaultRTSAttr() RTSAttr {
	return RTSAttr{Timeout: 14, RetryCount: 7, RNRRetry: 7, MaxRdAtomic: 16}
}

// WorkRequest is one signaled one-sided RDMA operation with a single SGE.
// It holds no pointers; its layout is shared with the C shim.
type WorkRequest struct {
	// WRID is returned in the Completion. Use a slot index into your own
	// table, never a pointer.
	WRID       uint64
	LocalAddr  uint64
	RemoteAddr uint64
	Length     uint32
	LKey       uint32
	RKey       uint32
	Op         Op
}

// Completion is one work completion. For a failed completion only WRID,
// Status, QPNum and VendorErr are meaningful. Its layout is shared with
// the C shim.
type Completion struct {
	WRID      uint64
	Status    Status
	Opcode    WCOpcode
	ByteLen   uint32
	QPNum     uint32
	VendorErr uint32
	_         uint32
}

// QP is a reliable-connected queue pair. Transitions and PostRW may be
// called from different goroutines, but PostRW on one QP must not race
// with itself (one poster per QP).
type QP interface {
	// Num is the QP number a peer connects to.
	Num() uint32
	// Caps reports the granted capacities.
	Caps() QPCaps
	// State queries the current state (a QP can enter ERR on its own).
	State() (QPState, error)
	// ToInit moves RESET->INIT.
	ToInit(InitAttr) error
	// ToRTR moves INIT->RTR towards the peer. A rejected transition (a
	// wrong state, or attributes the device refuses such as a bad source
	// GID index) matches ErrQPState and syscall.EINVAL; callers re-probe
	// the GID on EINVAL, as Mooncake does.
	ToRTR(RTRAttr) error
	// ToRTS moves RTR->RTS; only then PostRW is allowed.
	ToRTS(RTSAttr) error
	// ToError moves the QP to ERR: outstanding work requests complete with
	// StatusWRFlushErr.
	ToError() error
	// ToReset moves the QP back to RESET (from any state) so it can be
	// connected again.
	ToReset() error
	// PostRW posts wrs as one chain (one call into the provider). It
	// returns how many were posted: on error, wrs[:posted] are posted and
	// will complete, wrs[posted] was rejected and the rest were not tried.
	// ErrQueueFull means the send queue is full; ErrQPState that the QP is
	// not in RTS; ErrInvalidArgument a malformed request. wrs may be reused
	// as soon as PostRW returns.
	PostRW(wrs []WorkRequest) (posted int, err error)
	// Close destroys the QP. Idempotent.
	Close() error
}

// CQ is a completion queue.
type CQ interface {
	// Poll writes up to len(out) completions into out and returns how many
	// (0 when none is ready; it never blocks). Poll must not race with
	// itself.
	Poll(out []Completion) (n int, err error)
	// ReqNotify arms the CQ: the next completion raises an event on its
	// channel. Poll once more after arming to close the race.
	ReqNotify(solicitedOnly bool) error
	// AckEvents acknowledges n events that CompChannel.GetEvent returned
	// for this CQ. Close acknowledges any left over.
	AckEvents(n int)
	// Depth is the granted number of entries.
	Depth() int
	// Close destroys the CQ; ErrBusy while QPs use it.
	Close() error
}

// CompChannel is a completion channel: an fd that becomes readable when an
// armed CQ gets a completion.
type CompChannel interface {
	// Fd is the non-blocking channel fd, owned by the channel (do not
	// close it). Prefer Wait, which parks in the Go netpoller.
	Fd() int
	// Wait blocks until an event may be pending. It returns ctx.Err() when
	// ctx ends and ErrClosed once the channel is closed.
	Wait(ctx context.Context) error
	// GetEvent returns the CQ of the next pending event without blocking,
	// or ErrWouldBlock. Each event must be acknowledged with CQ.AckEvents.
	GetEvent() (CQ, error)
	// Close destroys the channel; ErrBusy while CQs use it.
	Close() error
}
