package metadata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// TimestampLayout is the descriptor "timestamp" format: local time, no zone.
const TimestampLayout = "2006-01-02 15:04:05.000000"

// Protocol names used in descriptors.
const (
	ProtocolTCP  = "tcp"
	ProtocolRDMA = "rdma"
)

// isRDMA reports whether d carries RDMA fields (devices and key lists).
func (d *SegmentDesc) isRDMA() bool { return d.Protocol == ProtocolRDMA || len(d.Devices) > 0 }

// AppendDesc appends d as Mooncake writes it (jsoncpp FastWriter): compact,
// keys sorted by byte value, a trailing "\n"; the timestamp is now in local
// time (d.Timestamp is ignored). TCP-only descriptors carry exactly
// buffers, name, protocol, tcp_data_port, tcp_proto_version, timestamp;
// RDMA descriptors add devices, priority_matrix and per-buffer lkey/rkey
// (an empty rkey list for a buffer peers may not access).
func AppendDesc(dst []byte, d *SegmentDesc, now time.Time) []byte {
	rdma := d.isRDMA()
	dst = append(dst, `{"buffers":[`...)
	for i := range d.Buffers {
		b := &d.Buffers[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"addr":`...)
		dst = strconv.AppendUint(dst, b.Addr, 10)
		dst = append(dst, `,"length":`...)
		dst = strconv.AppendUint(dst, b.Length, 10)
		if rdma {
			dst = append(dst, `,"lkey":`...)
			dst = appendU32s(dst, b.LKey)
		}
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, b.Name)
		if rdma {
			dst = append(dst, `,"rkey":`...)
			dst = appendU32s(dst, b.RKey)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if rdma {
		dst = append(dst, `,"devices":[`...)
		for i, dv := range d.Devices {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"gid":`...)
			dst = appendString(dst, dv.GID)
			dst = append(dst, `,"lid":`...)
			dst = strconv.AppendUint(dst, uint64(dv.LID), 10)
			dst = append(dst, `,"name":`...)
			dst = appendString(dst, dv.Name)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"name":`...)
	dst = appendString(dst, d.Name)
	if rdma {
		dst = append(dst, `,"priority_matrix":{`...)
		keys := make([]string, 0, len(d.PriorityMatrix))
		for k := range d.PriorityMatrix {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ":["...)
			v := d.PriorityMatrix[k]
			dst = appendStrings(dst, v[0])
			dst = append(dst, ',')
			dst = appendStrings(dst, v[1])
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"protocol":`...)
	dst = appendString(dst, d.Protocol)
	if d.RDMAServerName != "" {
		dst = append(dst, `,"rdma_server_name":`...)
		dst = appendString(dst, d.RDMAServerName)
	}
	if d.Protocol == ProtocolTCP || d.TCPDataPort != 0 {
		dst = append(dst, `,"tcp_data_port":`...)
		dst = strconv.AppendInt(dst, int64(d.TCPDataPort), 10)
	}
	if d.TCPProtoVersion != 0 {
		dst = append(dst, `,"tcp_proto_version":`...)
		dst = strconv.AppendInt(dst, int64(d.TCPProtoVersion), 10)
	}
	dst = append(dst, `,"timestamp":"`...)
	dst = now.Local().AppendFormat(dst, TimestampLayout)
	return append(dst, "\"}\n"...)
}

// EncodeDesc returns d's wire JSON with the current time as timestamp.
func EncodeDesc(d *SegmentDesc) []byte { return AppendDesc(nil, d, time.Now()) }

func appendU32s(dst []byte, v []uint32) []byte {
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(x), 10)
	}
	return append(dst, ']')
}

func appendStrings(dst []byte, v []string) []byte {
	dst = append(dst, '[')
	for i, s := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendString quotes s the way jsoncpp does: '"' and '\\' and control
// characters are escaped, other bytes are copied.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// rawDesc is the decoding shape: pointers tell missing keys from zeros.
type rawDesc struct {
	Buffers         []BufferDesc           `json:"buffers"`
	Devices         []DeviceDesc           `json:"devices"`
	Name            *string                `json:"name"`
	PriorityMatrix  map[string][2][]string `json:"priority_matrix"`
	Protocol        *string                `json:"protocol"`
	RDMAServerName  string                 `json:"rdma_server_name"`
	TCPDataPort     *int                   `json:"tcp_data_port"`
	TCPProtoVersion *int                   `json:"tcp_proto_version"`
	Timestamp       string                 `json:"timestamp"`
}

// DecodeDesc parses and validates a segment descriptor (with or without
// the trailing "\n"). Validation follows Mooncake's decodeSegmentDesc:
// every buffer needs a non-empty name and a non-zero addr and length (and
// addr+length must not wrap); a TCP descriptor without tcp_proto_version
// is version 1 and needs a tcp_data_port in 1..65535; an RDMA descriptor
// needs one lkey per device and one rkey per device (or none, for a buffer
// peers may not access). Syntax errors wrap ErrMalformedJSON, validation
// errors ErrInvalidDescriptor.
func DecodeDesc(b []byte) (*SegmentDesc, error) {
	var r rawDesc
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: segment descriptor: %v", ErrMalformedJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: segment descriptor: trailing data after the object", ErrMalformedJSON)
	}
	if r.Name == nil || *r.Name == "" {
		return nil, fmt.Errorf("%w: missing or empty \"name\"", ErrInvalidDescriptor)
	}
	if r.Protocol == nil || *r.Protocol == "" {
		return nil, fmt.Errorf("%w: segment %q: missing or empty \"protocol\"", ErrInvalidDescriptor, *r.Name)
	}
	d := &SegmentDesc{
		Buffers:        r.Buffers,
		Devices:        r.Devices,
		Name:           *r.Name,
		PriorityMatrix: r.PriorityMatrix,
		Protocol:       *r.Protocol,
		RDMAServerName: r.RDMAServerName,
		Timestamp:      r.Timestamp,
	}
	if r.TCPDataPort != nil {
		d.TCPDataPort = *r.TCPDataPort
	}
	if r.TCPProtoVersion != nil {
		d.TCPProtoVersion = *r.TCPProtoVersion
	}
	if d.Protocol == ProtocolTCP {
		if r.TCPProtoVersion == nil {
			d.TCPProtoVersion = 1
		}
		if d.TCPDataPort <= 0 || d.TCPDataPort > 65535 {
			return nil, fmt.Errorf("%w: segment %q: tcp_data_port %d out of range", ErrInvalidDescriptor, d.Name, d.TCPDataPort)
		}
	}
	for i := range d.Buffers {
		bd := &d.Buffers[i]
		switch {
		case bd.Name == "":
			return nil, fmt.Errorf("%w: segment %q: buffer %d has an empty name", ErrInvalidDescriptor, d.Name, i)
		case bd.Addr == 0:
			return nil, fmt.Errorf("%w: segment %q: buffer %d has address 0", ErrInvalidDescriptor, d.Name, i)
		case bd.Length == 0:
			return nil, fmt.Errorf("%w: segment %q: buffer %d has length 0", ErrInvalidDescriptor, d.Name, i)
		case bd.Addr+bd.Length < bd.Addr:
			return nil, fmt.Errorf("%w: segment %q: buffer %d [%#x+%d] wraps the address space", ErrInvalidDescriptor, d.Name, i, bd.Addr, bd.Length)
		}
		if d.Protocol == ProtocolRDMA {
			if len(bd.LKey) != len(d.Devices) {
				return nil, fmt.Errorf("%w: segment %q: buffer %d has %d lkeys for %d devices", ErrInvalidDescriptor, d.Name, i, len(bd.LKey), len(d.Devices))
			}
			if len(bd.RKey) != 0 && len(bd.RKey) != len(d.Devices) {
				return nil, fmt.Errorf("%w: segment %q: buffer %d has %d rkeys for %d devices", ErrInvalidDescriptor, d.Name, i, len(bd.RKey), len(d.Devices))
			}
		}
	}
	return d, nil
}

// Covers reports whether one buffer of d holds all of [addr, addr+n).
func (d *SegmentDesc) Covers(addr, n uint64) bool {
	for i := range d.Buffers {
		b := &d.Buffers[i]
		if addr >= b.Addr && n <= b.Length && addr-b.Addr <= b.Length-n {
			return true
		}
	}
	return false
}

// AppendNotify appends a Notify body ({"name":..,"notify_msg":..}\n).
func AppendNotify(dst []byte, n Notify) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, n.Name)
	dst = append(dst, `,"notify_msg":`...)
	dst = appendString(dst, n.NotifyMsg)
	return append(dst, "}\n"...)
}

// DecodeNotify parses a Notify body. Both keys must be strings; a missing
// key is an empty string, as in Mooncake.
func DecodeNotify(b []byte) (Notify, error) {
	var n Notify
	if err := json.Unmarshal(b, &n); err != nil {
		return Notify{}, fmt.Errorf("%w: notify: %v", ErrMalformedJSON, err)
	}
	return n, nil
}

// Fixed bodies of the daemon's replies and of a probe request.
var (
	// ProbeRequestBody is what Mooncake's sendProbe sends.
	ProbeRequestBody = []byte("{}\n")
	// ProbeReplyBody is the daemon's answer to a Probe.
	ProbeReplyBody = []byte("{\"status\":\"success\"}\n")
	// NotifyReplyBody is the daemon's answer to a Notify.
	NotifyReplyBody = []byte("{\"name\":\"\",\"notify_msg\":\"success\"}\n")
)
