package rdma

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// maxQPsInHandshake bounds the qp_num list a peer may send.
const maxQPsInHandshake = 1024

// DecodeHandshake parses a Connection frame body (Mooncake's
// HandShakeDesc JSON) and checks it: NIC paths of the form
// "<server>@<nic>", a GID in text form when present, at most 1024 QP
// numbers. Errors wrap ErrBadHandshake and name the bad field.
func DecodeHandshake(body []byte) (metadata.HandshakeDesc, error) {
	var d metadata.HandshakeDesc
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("%w: %v", ErrBadHandshake, err)
	}
	if d.ReplyMsg != "" {
		return d, nil // a rejection carries no other meaningful field
	}
	if _, _, err := SplitNICPath(d.LocalNICPath); err != nil {
		return d, fmt.Errorf("%w: local_nic_path: %v", ErrBadHandshake, err)
	}
	if _, _, err := SplitNICPath(d.PeerNICPath); err != nil {
		return d, fmt.Errorf("%w: peer_nic_path: %v", ErrBadHandshake, err)
	}
	if len(d.QPNum) > maxQPsInHandshake {
		return d, fmt.Errorf("%w: qp_num has %d entries", ErrBadHandshake, len(d.QPNum))
	}
	if d.LocalGID != "" {
		if _, err := parseGID(d.LocalGID); err != nil {
			return d, fmt.Errorf("%w: local_gid: %v", ErrBadHandshake, err)
		}
	}
	return d, nil
}

// EncodeHandshake writes d as Mooncake's HandShakeDesc JSON.
func EncodeHandshake(d *metadata.HandshakeDesc) []byte {
	b, err := json.Marshal(d)
	if err != nil { // only strings, ints and bools: cannot happen
		return []byte("{}")
	}
	return b
}

// SplitNICPath splits "<server>@<nic>" at the last '@'. Both parts must
// be non-empty.
func SplitNICPath(p string) (server, nic string, err error) {
	i := strings.LastIndexByte(p, '@')
	if i <= 0 || i == len(p)-1 {
		return "", "", fmt.Errorf("NIC path %q is not <server>@<nic>", p)
	}
	return p[:i], p[i+1:], nil
}

// NICPath joins a server name and a NIC name.
func NICPath(server, nic string) string { return server + "@" + nic }
