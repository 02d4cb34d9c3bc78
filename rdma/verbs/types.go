package verbs

import "strconv"

// Access is a set of memory-region (and QP) access flags. The values are
// those of enum ibv_access_flags.
type Access uint32

// Access flags.
const (
	AccessLocalWrite      Access = 1 << 0
	AccessRemoteWrite     Access = 1 << 1
	AccessRemoteRead      Access = 1 << 2
	AccessRemoteAtomic    Access = 1 << 3
	AccessMWBind          Access = 1 << 4
	AccessZeroBased       Access = 1 << 5
	AccessOnDemand        Access = 1 << 6
	AccessHugeTLB         Access = 1 << 7
	AccessRelaxedOrdering Access = 1 << 20
)

// AccessRemote is what Ferry registers remotely accessible memory with and
// what QPs are initialised with (LOCAL_WRITE|REMOTE_READ|REMOTE_WRITE).
const AccessRemote = AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite

// QPAccessDefault is the access a QP gets at RESET->INIT, as in Mooncake:
// LOCAL_WRITE|REMOTE_READ|REMOTE_WRITE|REMOTE_ATOMIC.
const QPAccessDefault = AccessRemote | AccessRemoteAtomic

// Has reports whether all flags of f are set in a.
func (a Access) Has(f Access) bool { return a&f == f }

// Op is the operation of a WorkRequest. The zero value is invalid, so a
// forgotten field is rejected instead of silently writing.
type Op uint32

// Operations.
const (
	OpInvalid Op = iota
	// OpRead reads Length bytes at RemoteAddr/RKey into LocalAddr/LKey.
	OpRead
	// OpWrite writes Length bytes at LocalAddr/LKey to RemoteAddr/RKey.
	OpWrite
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "RDMA_READ"
	case OpWrite:
		return "RDMA_WRITE"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Status is a work completion status; the values are those of enum
// ibv_wc_status.
type Status uint32

// Completion statuses.
const (
	StatusSuccess Status = iota
	StatusLocLenErr
	StatusLocQPOpErr
	StatusLocEECOpErr
	StatusLocProtErr
	StatusWRFlushErr
	StatusMWBindErr
	StatusBadRespErr
	StatusLocAccessErr
	StatusRemInvReqErr
	StatusRemAccessErr
	StatusRemOpErr
	StatusRetryExcErr
	StatusRNRRetryExcErr
	StatusLocRDDViolErr
	StatusRemInvRdReqErr
	StatusRemAbortErr
	StatusInvEECNErr
	StatusInvEECStateErr
	StatusFatalErr
	StatusRespTimeoutErr
	StatusGeneralErr
	StatusTMErr
	StatusTMRndvIncomplete
)

var statusNames = [...]string{
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR",
	"REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR",
	"RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE",
}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// IsLocal reports whether s blames the local side (LOC_LEN, LOC_QP_OP,
// LOC_PROT, LOC_ACCESS, MW_BIND): the transport retries such a slice on
// another local NIC and keeps the peer rail.
func (s Status) IsLocal() bool {
	switch s {
	case StatusLocLenErr, StatusLocQPOpErr, StatusLocProtErr, StatusLocAccessErr, StatusMWBindErr:
		return true
	}
	return false
}

// WCOpcode is the opcode of a completion (enum ibv_wc_opcode). It is only
// meaningful when Status is StatusSuccess.
type WCOpcode uint32

// Completion opcodes.
const (
	WCSend      WCOpcode = 0
	WCRDMAWrite WCOpcode = 1
	WCRDMARead  WCOpcode = 2
	WCCompSwap  WCOpcode = 3
	WCFetchAdd  WCOpcode = 4
	WCBindMW    WCOpcode = 5
	WCRecv      WCOpcode = 128
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCCompSwap:
		return "COMP_SWAP"
	case WCFetchAdd:
		return "FETCH_ADD"
	case WCBindMW:
		return "BIND_MW"
	case WCRecv:
		return "RECV"
	}
	return "WCOpcode(" + strconv.Itoa(int(o)) + ")"
}

// QPType is a queue pair transport type (enum ibv_qp_type). Only RC is
// supported.
type QPType uint32

// QP types.
const (
	QPTypeRC QPType = 2
	QPTypeUC QPType = 3
	QPTypeUD QPType = 4
)

// QPState is a queue pair state (enum ibv_qp_state).
type QPState uint32

// QP states.
const (
	QPStateReset QPState = iota
	QPStateInit
	QPStateRTR
	QPStateRTS
	QPStateSQD
	QPStateSQE
	QPStateErr
)

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "QPState(" + strconv.Itoa(int(s)) + ")"
}

// PortState is a port state (enum ibv_port_state).
type PortState uint32

// Port states.
const (
	PortNop PortState = iota
	PortDown
	PortInit
	PortArmed
	PortActive
	PortActiveDefer
)

var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

func (s PortState) String() string {
	if int(s) < len(portStateNames) {
		return portStateNames[s]
	}
	return "PortState(" + strconv.Itoa(int(s)) + ")"
}

// MTU is a path MTU enum (enum ibv_mtu): MTU256=1 ... MTU4096=5.
type MTU uint32

// Path MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, or 0 for an invalid value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// MTUFromBytes converts 256, 512, 1024, 2048 or 4096 to an MTU; any other
// value gives false.
func MTUFromBytes(n int) (MTU, bool) {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, true
		}
	}
	return 0, false
}

func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return strconv.Itoa(b)
	}
	return "MTU(" + strconv.Itoa(int(m)) + ")"
}

// LinkLayer is a port's link layer (IBV_LINK_LAYER_*).
type LinkLayer uint8

// Link layers.
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

func (l LinkLayer) String() string {
	switch l {
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unspecified"
}

// GIDType is the type of a GID table entry (enum ibv_gid_type).
type GIDType uint32

// GID types.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCEv1"
	case GIDTypeRoCEv2:
		return "RoCEv2"
	}
	return "GIDType(" + strconv.Itoa(int(t)) + ")"
}

// AsyncEventType is an asynchronous event type (enum ibv_event_type).
type AsyncEventType uint32

// Asynchronous events.
const (
	EventCQErr AsyncEventType = iota
	EventQPFatal
	EventQPReqErr
	EventQPAccessErr
	EventCommEst
	EventSQDrained
	EventPathMig
	EventPathMigErr
	EventDeviceFatal
	EventPortActive
	EventPortErr
	EventLIDChange
	EventPKeyChange
	EventSMChange
	EventSRQErr
	EventSRQLimitReached
	EventQPLastWQEReached
	EventClientReregister
	EventGIDChange
	EventWQFatal
)

var eventNames = [...]string{
	"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE",
	"PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED",
	"CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL",
}

func (e AsyncEventType) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "AsyncEventType(" + strconv.Itoa(int(e)) + ")"
}
