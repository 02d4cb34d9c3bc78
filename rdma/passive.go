package rdma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// HandleConnection answers a Connection frame (the passive side of the
// QP handshake). It brings the endpoint towards the sender's NIC to RTS
// and replies with its own NIC path, GID, LID and QP numbers, asking for a
// ready ACK. A second frame with ready_ack=true marks the endpoint usable.
// A request it cannot accept gets a reply with reply_msg set (and a nil
// error), as Mooncake does; the error return is for a closed transport.
func (t *Transport) HandleConnection(ctx context.Context, body []byte) ([]byte, error) {
	if t.closed.Load() {
		return reject("transport closed"), ErrClosedTransport
	}
	req, err := DecodeHandshake(body)
	if err != nil {
		return reject(err.Error()), nil
	}
	if req.ReplyMsg != "" {
		return reject("request carries reply_msg"), nil
	}
	server, nicName, _ := SplitNICPath(req.PeerNICPath)
	if server != t.server {
		return reject(fmt.Sprintf("peer_nic_path %q does not name this server (%s)", req.PeerNICPath, t.server)), nil
	}
	var n *nic
	for _, c := range t.nics {
		if c.name == nicName {
			n = c
		}
	}
	if n == nil || !n.usable() {
		return reject(fmt.Sprintf("NIC %q is not active here", nicName)), nil
	}
	peerServer, _, _ := SplitNICPath(req.LocalNICPath)

	if req.ReadyAck {
		n.mu.Lock()
		ep := n.eps[req.LocalNICPath]
		n.mu.Unlock()
		if ep == nil {
			return reject("ready ack for an unknown endpoint"), nil
		}
		ep.mu.Lock()
		if ep.state.Load() == epWaitAck {
			ep.state.Store(epConnected)
		}
		ep.mu.Unlock()
		ep.post()
		d := ep.localDesc()
		return EncodeHandshake(&d), nil
	}
	if len(req.QPNum) != t.cfg.QPsPerEndpoint {
		return reject(fmt.Sprintf("QP count mismatch: peer has %d QPs per endpoint, local %d", len(req.QPNum), t.cfg.QPsPerEndpoint)), nil
	}
	var ep *endpoint
	for attempt := 0; ; attempt++ {
		ep, err = t.lookupEndpoint(n, req.LocalNICPath, peerServer)
		if err != nil {
			return reject(err.Error()), nil
		}
		err = ep.establish(req.LocalGID, req.LocalLID, req.QPNum)
		if errors.Is(err, errPeerRestarted) && attempt == 0 {
			// The peer restarted with new QPs: drop the old endpoint
			// (its work flushes and retries) and build a new one.
			ep.kill(err)
			continue
		}
		break
	}
	if err != nil {
		ep.kill(err)
		return reject(err.Error()), nil
	}
	ep.mu.Lock()
	if ep.state.Load() == epNew {
		ep.state.Store(epWaitAck)
		ep.since = time.Now()
	}
	ep.mu.Unlock()
	d := ep.localDesc()
	d.ReadyAck = true
	return EncodeHandshake(&d), nil
}

func reject(msg string) []byte {
	return EncodeHandshake(&metadata.HandshakeDesc{ReplyMsg: msg})
}
