package metadata

// FrameType is the type byte of a handshake frame.
type FrameType uint8

// Frame types, with Mooncake's numbering.
const (
	FrameConnection FrameType = 0 // RDMA QP handshake (HandshakeDesc)
	FrameMetadata   FrameType = 1 // segment descriptor exchange
	FrameNotify     FrameType = 2 // out-of-band notification
	FrameProbe      FrameType = 3 // liveness probe
)

// SegmentDesc is a segment descriptor, the JSON a P2PHANDSHAKE daemon
// returns for a Metadata frame. Field order is alphabetical so that
// encoding/json writes keys in the order jsoncpp does.
type SegmentDesc struct {
	Buffers         []BufferDesc           `json:"buffers"`
	Devices         []DeviceDesc           `json:"devices,omitempty"`
	Name            string                 `json:"name"`
	PriorityMatrix  map[string][2][]string `json:"priority_matrix,omitempty"`
	Protocol        string                 `json:"protocol"`
	RDMAServerName  string                 `json:"rdma_server_name,omitempty"`
	TCPDataPort     int                    `json:"tcp_data_port,omitempty"`
	TCPProtoVersion int                    `json:"tcp_proto_version,omitempty"`
	Timestamp       string                 `json:"timestamp,omitempty"`
}

// BufferDesc is one registered buffer of a segment. For TCP, Name is the
// segment name and the key lists are absent; for RDMA, Name is the
// location ("cpu:0") and LKey/RKey hold one key per device, in Devices
// order (RKey is empty when the buffer is not remote-accessible).
type BufferDesc struct {
	Addr   uint64   `json:"addr"`
	Length uint64   `json:"length"`
	LKey   []uint32 `json:"lkey,omitempty"`
	Name   string   `json:"name"`
	RKey   []uint32 `json:"rkey,omitempty"`
}

// DeviceDesc is one RDMA NIC of a segment.
type DeviceDesc struct {
	GID  string `json:"gid"`
	LID  uint16 `json:"lid"`
	Name string `json:"name"`
}

// HandshakeDesc is the body of a Connection frame (the RDMA endpoint
// handshake). A non-empty ReplyMsg means the peer rejected the handshake.
type HandshakeDesc struct {
	LocalGID     string   `json:"local_gid"`
	LocalLID     uint16   `json:"local_lid"`
	LocalNICPath string   `json:"local_nic_path"`
	PeerNICPath  string   `json:"peer_nic_path"`
	QPNum        []uint32 `json:"qp_num"`
	ReadyAck     bool     `json:"ready_ack,omitempty"`
	ReplyMsg     string   `json:"reply_msg,omitempty"`
}

// Notify is the body of a Notify frame.
type Notify struct {
	Name      string `json:"name"`
	NotifyMsg string `json:"notify_msg"`
}
