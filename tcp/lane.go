package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// Errors reported by the client side.
var (
	// ErrProtocol means a peer sent bytes that are not a valid response;
	// it is wrapped together with transport.ErrPeerUnreachable.
	ErrProtocol = errors.New("tcp: protocol violation by peer")
	// ErrBadTask means a submitted task is malformed (unknown opcode).
	ErrBadTask = errors.New("tcp: malformed task")
)

// lane is one persistent connection to a peer. A writer goroutine sends
// queued pieces (headers and payloads back to back, several per writev); a
// reader goroutine reads the responses in order. The connection is dialed
// on demand by the writer and replaced after any error.
type lane struct {
	p    *peer
	t    *Transport
	v2   bool
	load atomic.Int64 // pieces queued or in flight

	mu       sync.Mutex
	cond     sync.Cond
	queue    ring[piece] // waiting to be written
	inflight ring[piece] // written (or being written), response pending
	inBytes  uint64      // payload bytes of the pieces in inflight
	conn     net.Conn
	gen      uint64 // bumped whenever conn is replaced
	dead     bool   // conn failed in the writer; the reader drains inflight
	closed   bool

	// owned by the writer goroutine
	hdrs  [maxWriteBatch][HeaderSize]byte
	batch [maxWriteBatch]piece
	iov   [2 * maxWriteBatch][]byte
	nb    net.Buffers

	// owned by the reader goroutine (br is reset under mu while no
	// response is pending)
	br *bufio.Reader
	st [StatusSize]byte
}

func newLane(p *peer) *lane {
	l := &lane{p: p, t: p.t, v2: p.key.v2, br: bufio.NewReaderSize(nil, clientReadBufferSize)}
	l.cond.L = &l.mu
	l.t.wg.Add(2)
	go l.writeLoop()
	go l.readLoop()
	return l
}

// expectsResponse reports whether the reader must consume a response for
// pc: every v2 request, and v1 READs (their data).
func (l *lane) expectsResponse(pc *piece) bool { return l.v2 || !pc.write }

// enqueue hands pc to the lane. It never blocks on the network.
func (l *lane) enqueue(pc piece) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		pc.op.done(0, transport.ErrClosed)
		return
	}
	l.load.Add(1)
	l.queue.push(pc)
	l.cond.Broadcast()
	l.mu.Unlock()
}

func (l *lane) complete(pc *piece, err error) {
	l.load.Add(-1)
	n := uint64(len(pc.buf))
	pc.op.done(n, err)
}

func (l *lane) writeLoop() {
	defer l.t.wg.Done()
	cap, byteCap := l.t.cfg.inflight, uint64(l.t.cfg.inflightBytes)
	for {
		l.mu.Lock()
		for !l.closed && (l.queue.len() == 0 || l.dead || l.inflight.len() >= cap ||
			(l.inBytes >= byteCap && l.inflight.len() > 0)) {
			l.cond.Wait()
		}
		if l.closed {
			l.mu.Unlock()
			return
		}
		if l.conn == nil {
			l.mu.Unlock()
			c, err := l.p.dial()
			l.mu.Lock()
			if l.closed {
				l.mu.Unlock()
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				failed := make([]piece, 0, l.queue.len())
				for l.queue.len() > 0 {
					failed = append(failed, l.queue.pop())
				}
				l.mu.Unlock()
				for i := range failed {
					l.complete(&failed[i], err)
				}
				continue
			}
			l.conn = c
			l.gen++
			l.br.Reset(c)
		}
		conn, gen := l.conn, l.gen
		k := 0
		// Fill one writev, within the lane's in-flight count and byte
		// budgets (a piece larger than the byte budget goes alone).
		for k < maxWriteBatch && l.queue.len() > 0 && l.inflight.len() < cap &&
			(k == 0 || l.inBytes+uint64(len(l.queue.peek().buf)) <= byteCap) {
			pc := l.queue.pop()
			l.batch[k] = pc
			k++
			if l.expectsResponse(&pc) {
				l.inflight.push(pc)
				l.inBytes += uint64(len(pc.buf))
			}
		}
		l.cond.Broadcast()
		l.mu.Unlock()

		l.nb = l.iov[:0]
		for i := range k {
			pc := &l.batch[i]
			PutHeader(l.hdrs[i][:], Header{Size: uint64(len(pc.buf)), Addr: pc.addr, Write: pc.write, V2: l.v2})
			l.nb = append(l.nb, l.hdrs[i][:])
			if pc.write && len(pc.buf) > 0 {
				l.nb = append(l.nb, pc.buf)
			}
		}
		conn.SetWriteDeadline(time.Now().Add(l.t.cfg.statusTimeout))
		_, err := l.nb.WriteTo(conn)
		clear(l.iov[:])
		if err != nil {
			err = l.p.unreachable("write", err)
			l.writerBroken(gen)
		}
		for i := range k {
			pc := &l.batch[i]
			if !l.expectsResponse(pc) {
				l.complete(pc, err)
			}
			*pc = piece{}
		}
	}
}

// writerBroken closes a connection the writer could not write to. If
// responses are pending, the reader fails them and resets the lane.
func (l *lane) writerBroken(gen uint64) {
	l.mu.Lock()
	if l.gen == gen && l.conn != nil {
		l.conn.Close()
		if l.inflight.len() == 0 {
			l.conn = nil
			l.gen++
		} else {
			l.dead = true
		}
		l.cond.Broadcast()
	}
	l.mu.Unlock()
}

func (l *lane) readLoop() {
	defer l.t.wg.Done()
	for {
		l.mu.Lock()
		for !l.closed && (l.conn == nil || (l.inflight.len() == 0 && !l.dead)) {
			l.cond.Wait()
		}
		if l.closed {
			l.mu.Unlock()
			return
		}
		if l.inflight.len() == 0 { // dead with nothing pending
			l.conn, l.dead = nil, false
			l.gen++
			l.cond.Broadcast()
			l.mu.Unlock()
			continue
		}
		pc := *l.inflight.peek()
		conn, gen := l.conn, l.gen
		l.mu.Unlock()

		err := l.readResponse(conn, &pc)

		l.mu.Lock()
		if l.gen != gen || l.closed {
			l.mu.Unlock()
			continue
		}
		if err == nil {
			l.inflight.pop()
			l.inBytes -= uint64(len(pc.buf))
			l.cond.Broadcast()
			l.mu.Unlock()
			l.complete(&pc, nil)
			continue
		}
		conn.Close()
		var failed []piece
		var failErr []error
		if errors.Is(err, transport.ErrAddressNotRegistered) {
			// Only this request was refused; the server closed the
			// connection, so resend the ones behind it on a new one.
			failed = append(failed, l.inflight.pop())
			failErr = append(failErr, err)
			rest := make([]piece, 0, l.inflight.len())
			for l.inflight.len() > 0 {
				rest = append(rest, l.inflight.pop())
			}
			for i := len(rest) - 1; i >= 0; i-- {
				l.queue.pushFront(rest[i])
			}
		} else {
			for l.inflight.len() > 0 {
				failed = append(failed, l.inflight.pop())
				failErr = append(failErr, err)
			}
		}
		l.conn, l.dead = nil, false
		l.inBytes = 0
		l.gen++
		l.cond.Broadcast()
		l.mu.Unlock()
		for i := range failed {
			l.complete(&failed[i], failErr[i])
		}
	}
}

// readResponse consumes the response to pc: the status frame (v2) and,
// for a READ, the data straight into pc.buf.
func (l *lane) readResponse(conn net.Conn, pc *piece) error {
	conn.SetReadDeadline(time.Now().Add(l.t.cfg.statusTimeout))
	if l.v2 {
		if _, err := io.ReadFull(l.br, l.st[:]); err != nil {
			return l.p.unreachable("read status", err)
		}
		code, err := ParseStatus(l.st[:])
		if err != nil {
			return fmt.Errorf("%w: %w: %s: %w", transport.ErrPeerUnreachable, ErrProtocol, l.p.addr, err)
		}
		switch code {
		case StatusOK:
		case StatusAddrRejected:
			return fmt.Errorf("%w: peer %s refused [%#x, +%d)", transport.ErrAddressNotRegistered, l.p.addr, pc.addr, len(pc.buf))
		default:
			return fmt.Errorf("%w: %w: %s sent status code %d", transport.ErrPeerUnreachable, ErrProtocol, l.p.addr, code)
		}
	}
	if !pc.write && len(pc.buf) > 0 {
		if _, err := io.ReadFull(l.br, pc.buf); err != nil {
			return l.p.unreachable("read data", err)
		}
	}
	return nil
}

// shutdown marks the lane closed and breaks its connection; the
// transport waits for the goroutines and then calls drain.
func (l *lane) shutdown() {
	l.mu.Lock()
	l.closed = true
	if l.conn != nil {
		l.conn.Close()
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// drain fails everything left on a shut-down lane.
func (l *lane) drain(err error) {
	l.mu.Lock()
	var left []piece
	for l.inflight.len() > 0 {
		left = append(left, l.inflight.pop())
	}
	l.inBytes = 0
	for l.queue.len() > 0 {
		left = append(left, l.queue.pop())
	}
	l.conn = nil
	l.mu.Unlock()
	for i := range left {
		l.complete(&left[i], err)
	}
}
