package tcp

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// peerKey identifies a peer's data port and the framing used with it.
type peerKey struct {
	host string
	port int
	v2   bool
}

// peer is the set of lanes to one data port.
type peer struct {
	t    *Transport
	key  peerKey
	addr string // host:port to dial

	mu     sync.Mutex
	lanes  [MaxLanes]*lane
	n      int
	next   int
	closed bool // shut down, or dropped for idleness: send refuses
	used   bool // a piece was sent since the last idleness sweep
	idle   int  // consecutive sweeps that found the peer idle
}

// hostOf returns the host part of a segment name ("host:port", "[v6]:port"
// or a bare host).
func hostOf(name string) string {
	i := strings.LastIndexByte(name, ':')
	if i < 0 || strings.Count(name, ":") > 1 && !strings.HasPrefix(name, "[") {
		return name
	}
	h := name[:i]
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	return h
}

// send queues pc on the least-loaded lane, opening a new lane when every
// open lane is busy and the limit allows. It reports false, queuing
// nothing, once the peer is shut down or dropped for idleness. Picking
// and queuing under p.mu keep a lane from closing in between.
func (p *peer) send(pc piece) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.used = true
	p.pickLocked().enqueue(pc)
	return true
}

// dropIfIdle counts one idleness sweep and, once the peer has had no
// request and no work for sweeps of them in a row, marks it closed and
// reports true; the caller then removes it and shuts it down.
func (p *peer) dropIfIdle(sweeps int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	busy := p.used
	p.used = false
	for i := range p.n {
		busy = busy || p.lanes[i].load.Load() != 0
	}
	if busy {
		p.idle = 0
		return false
	}
	p.idle++
	if p.idle < sweeps {
		return false
	}
	p.closed = true
	return true
}

// pickLocked returns the least-loaded lane, opening one when needed.
// Needs p.mu and an open peer.
func (p *peer) pickLocked() *lane {
	best, bestLoad := -1, int64(0)
	for j := range p.n {
		i := (p.next + j) % p.n
		ld := p.lanes[i].load.Load()
		if best < 0 || ld < bestLoad {
			best, bestLoad = i, ld
			if ld == 0 {
				break
			}
		}
	}
	if (best < 0 || bestLoad > 0) && p.n < p.t.cfg.lanes {
		p.lanes[p.n] = newLane(p)
		best = p.n
		p.n++
	}
	if p.n > 0 {
		p.next = (best + 1) % p.n
	}
	return p.lanes[best]
}

func (p *peer) dial() (net.Conn, error) {
	d := net.Dialer{Timeout: p.t.cfg.dialTimeout, KeepAlive: 15 * time.Second}
	c, err := d.DialContext(p.t.ctx, "tcp", p.addr)
	if err != nil {
		return nil, p.unreachable("dial", err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return c, nil
}

// unreachable wraps a socket error of this peer.
func (p *peer) unreachable(what string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", transport.ErrPeerUnreachable, what, p.addr, err)
}

func (p *peer) shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for i := range p.n {
		p.lanes[i].shutdown()
	}
}

func (p *peer) drain(err error) {
	p.mu.Lock()
	lanes := p.lanes
	n := p.n
	p.mu.Unlock()
	for i := range n {
		lanes[i].drain(err)
	}
}

func newPeer(t *Transport, k peerKey) *peer {
	return &peer{t: t, key: k, addr: net.JoinHostPort(k.host, strconv.Itoa(k.port))}
}
