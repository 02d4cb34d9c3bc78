package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
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
	raw      syscall.RawConn // conn's raw form for idle checks, or nil
	idle     idleCheck
	gen      uint64 // bumped whenever conn is replaced
	dead     bool   // conn failed in the writer; the reader drains inflight
	closed   bool

	// Cancel's handshake with the goroutines (under mu). While rbusy the
	// reader may be writing into the buffer of the head of inflight,
	// read from rconn; rstop asks it to stop (rconn's read deadline is
	// moved to now to wake it) and it answers by clearing rbusy. While
	// wk > 0 the writer is writing batch[:wk] to wconn; wstop asks it to
	// send the payloads marked in wcancel from zeros instead, and it
	// answers by clearing wstop.
	rbusy   bool
	rconn   net.Conn
	rstop   atomic.Bool
	wk      int
	wconn   net.Conn
	wstop   atomic.Bool
	wcancel [maxWriteBatch]bool

	// owned by the writer goroutine (batch is filled under mu, and
	// Cancel reads batch[:wk] under mu)
	hdrs     [maxWriteBatch][HeaderSize]byte
	batch    [maxWriteBatch]piece
	iov      [2 * maxWriteBatch][]byte
	nb       net.Buffers
	wzero    [maxWriteBatch]bool // payloads to send from zeros
	canceled [maxWriteBatch]bool // v1 WRITEs cancelled while being written

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

// complete settles one piece that left the lane. A ghost's op was
// already finished by Cancel.
func (l *lane) complete(pc *piece, err error) {
	l.load.Add(-1)
	if pc.op == nil {
		return
	}
	pc.op.done(pc.n, err)
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
		if l.conn != nil && l.inflight.len() == 0 && (l.br.Buffered() > 0 || l.idle.peerClosed(l.raw)) {
			// Nothing is outstanding, so the reader is not reading: the
			// peer closed this connection while it was idle (it
			// restarted, or dropped the connection). Replace it rather
			// than fail the requests about to be sent on it.
			l.conn.Close()
			l.conn, l.raw = nil, nil
			l.gen++
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
			l.conn, l.raw = c, rawConn(c)
			l.gen++
			l.br.Reset(c)
		}
		conn, gen := l.conn, l.gen
		k := 0
		// Fill one writev, within the lane's in-flight count and byte
		// budgets (a piece larger than the byte budget goes alone).
		for k < maxWriteBatch && l.queue.len() > 0 && l.inflight.len() < cap &&
			(k == 0 || l.inBytes+l.queue.peek().n <= byteCap) {
			pc := l.queue.pop()
			l.batch[k] = pc
			k++
			if l.expectsResponse(&pc) {
				l.inflight.push(pc)
				l.inBytes += pc.n
			}
		}
		l.wk, l.wconn = k, conn
		// Set under mu so that a Cancel's wake-up deadline, set under mu
		// while wk > 0, always comes after it.
		conn.SetWriteDeadline(time.Now().Add(l.t.cfg.statusTimeout))
		l.cond.Broadcast()
		l.mu.Unlock()

		l.nb = l.iov[:0]
		for i := range k {
			pc := &l.batch[i]
			PutHeader(l.hdrs[i][:], Header{Size: pc.n, Addr: pc.addr, Write: pc.write, V2: l.v2})
			l.nb = append(l.nb, l.hdrs[i][:])
			if pc.write && pc.n > 0 {
				l.nb = append(l.nb, pc.buf)
			}
		}
		written, err := l.nb.WriteTo(conn)
		for err != nil && l.wstop.Load() && isTimeout(err) {
			// Cancel woke us: the bytes before written are out; send the
			// rest with the cancelled payloads taken from zeros.
			l.ackWriteStop(conn)
			var n int64
			n, err = l.writeFrom(conn, k, written)
			written += n
		}
		clear(l.iov[:])
		if err != nil {
			err = l.p.unreachable("write", err)
			l.writerBroken(gen)
		}
		l.mu.Lock()
		l.wk, l.wconn = 0, nil
		l.wstop.Store(false)
		for i := range k {
			l.canceled[i] = l.wcancel[i]
			l.wcancel[i] = false
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		for i := range k {
			pc := &l.batch[i]
			if !l.expectsResponse(pc) {
				perr := err
				if perr == nil && l.canceled[i] {
					perr = errCanceled
				}
				l.complete(pc, perr)
			}
			*pc = piece{}
			l.wzero[i], l.canceled[i] = false, false
		}
	}
}

// ackWriteStop answers a Cancel: it takes over the marks of the cancelled
// payloads and restores conn's write deadline. From here on the writer
// does not read those payloads' memory.
func (l *lane) ackWriteStop(conn net.Conn) {
	l.mu.Lock()
	for i := range l.wk {
		l.wzero[i] = l.wzero[i] || l.wcancel[i]
	}
	l.wstop.Store(false)
	conn.SetWriteDeadline(time.Now().Add(l.t.cfg.statusTimeout))
	l.cond.Broadcast()
	l.mu.Unlock()
}

// zeros is the payload sent in place of a cancelled WRITE's memory once
// its header is out. It is never written.
var zeros [64 << 10]byte

// writeFrom writes batch[:k] (headers and payloads) from byte skip of the
// stream on, taking the payloads marked in wzero from zeros. It returns
// the bytes written.
func (l *lane) writeFrom(conn net.Conn, k int, skip int64) (int64, error) {
	var total int64
	put := func(b []byte) error {
		n, err := conn.Write(b)
		total += int64(n)
		return err
	}
	for i := range k {
		pc := &l.batch[i]
		if skip >= HeaderSize {
			skip -= HeaderSize
		} else {
			if err := put(l.hdrs[i][skip:]); err != nil {
				return total, err
			}
			skip = 0
		}
		if !pc.write || pc.n == 0 {
			continue
		}
		if uint64(skip) >= pc.n {
			skip -= int64(pc.n)
			continue
		}
		from := uint64(skip)
		skip = 0
		if !l.wzero[i] {
			if err := put(pc.buf[from:]); err != nil {
				return total, err
			}
			continue
		}
		for from < pc.n {
			m := min(pc.n-from, uint64(len(zeros)))
			if err := put(zeros[:m]); err != nil {
				return total, err
			}
			from += m
		}
	}
	return total, nil
}

// rawConn returns c's raw form, or nil when it has none.
func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// isTimeout reports whether err is a deadline expiry.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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
		// Under mu, so that a Cancel's wake-up deadline comes after it.
		conn.SetReadDeadline(time.Now().Add(l.t.cfg.statusTimeout))
		l.rbusy = pc.op != nil && !pc.write && pc.n > 0
		l.rconn = conn
		l.mu.Unlock()

		err := l.readResponse(conn, &pc)

		l.mu.Lock()
		l.rbusy, l.rconn = false, nil
		l.rstop.Store(false)
		l.cond.Broadcast()
		if l.gen != gen || l.closed {
			l.mu.Unlock()
			continue
		}
		if err == nil {
			head := l.inflight.pop() // pc, or its ghost if it was cancelled
			l.inBytes -= head.n
			l.cond.Broadcast()
			l.mu.Unlock()
			l.complete(&head, nil)
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
				if rest[i].op == nil { // a ghost: nothing to resend
					l.load.Add(-1)
					continue
				}
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
// for a READ, the data straight into pc.buf, or into nothing once pc is
// a ghost or Cancel takes it over meanwhile. The read deadline is set.
func (l *lane) readResponse(conn net.Conn, pc *piece) error {
	live := pc.op != nil
	if l.v2 {
		for off := 0; off < StatusSize; {
			k, err := l.br.Read(l.st[off:])
			off += k
			if err != nil {
				if l.readStopped(conn, err) {
					live = false
					continue
				}
				return l.p.unreachable("read status", err)
			}
		}
		code, err := ParseStatus(l.st[:])
		if err != nil {
			return fmt.Errorf("%w: %w: %s: %w", transport.ErrPeerUnreachable, ErrProtocol, l.p.addr, err)
		}
		switch code {
		case StatusOK:
		case StatusAddrRejected:
			return fmt.Errorf("%w: peer %s refused [%#x, +%d)", transport.ErrAddressNotRegistered, l.p.addr, pc.addr, pc.n)
		default:
			return fmt.Errorf("%w: %w: %s sent status code %d", transport.ErrPeerUnreachable, ErrProtocol, l.p.addr, code)
		}
	}
	if pc.write || pc.n == 0 {
		return nil
	}
	off := 0
	for live && off < len(pc.buf) {
		if l.rstop.Load() {
			l.ackReadStop(conn)
			live = false
			break
		}
		k, err := l.br.Read(pc.buf[off:])
		off += k
		if err != nil {
			if l.readStopped(conn, err) {
				live = false
				break
			}
			return l.p.unreachable("read data", err)
		}
	}
	for left := int(pc.n) - off; left > 0; {
		k, err := l.br.Discard(left)
		left -= k
		if err != nil {
			return l.p.unreachable("read data", err)
		}
	}
	return nil
}

// readStopped reports whether err is the wake-up of a Cancel, and then
// acknowledges it.
func (l *lane) readStopped(conn net.Conn, err error) bool {
	if !l.rstop.Load() || !isTimeout(err) {
		return false
	}
	l.ackReadStop(conn)
	return true
}

// ackReadStop answers a Cancel: the reader no longer writes into the head
// piece's buffer, and conn's read deadline is restored.
func (l *lane) ackReadStop(conn net.Conn) {
	l.mu.Lock()
	l.rbusy = false
	l.rstop.Store(false)
	conn.SetReadDeadline(time.Now().Add(l.t.cfg.statusTimeout))
	l.cond.Broadcast()
	l.mu.Unlock()
}

// cancel takes the pieces of the tasks in set off the lane: queued ones
// are dropped, in-flight ones become ghosts, and a copy in progress into
// or out of their memory is stopped. It returns once the lane's
// goroutines no longer touch that memory, and appends the ops whose
// pieces it took (one entry per piece) to ops.
func (l *lane) cancel(set map[*transport.Task]struct{}, ops []*op) []*op {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := l.queue.len(); n > 0; n-- {
		pc := l.queue.pop()
		if _, ok := set[pc.task]; ok && pc.op != nil {
			ops = append(ops, pc.op)
			l.load.Add(-1)
			continue
		}
		l.queue.push(pc)
	}
	for i := range l.inflight.len() {
		pc := l.inflight.at(i)
		if _, ok := set[pc.task]; ok && pc.op != nil {
			ops = append(ops, pc.op)
			pc.op, pc.task, pc.buf = nil, nil, nil
		}
	}
	if l.rbusy && l.inflight.len() > 0 && l.inflight.peek().op == nil {
		l.rstop.Store(true)
		l.rconn.SetReadDeadline(time.Now())
		for l.rbusy {
			l.cond.Wait()
		}
	}
	stop := false
	for i := range l.wk {
		pc := &l.batch[i]
		if _, ok := set[pc.task]; ok && pc.write && pc.n > 0 {
			l.wcancel[i] = true
			stop = true
		}
	}
	if stop {
		l.wstop.Store(true)
		l.wconn.SetWriteDeadline(time.Now())
		for l.wk > 0 && l.wstop.Load() {
			l.cond.Wait()
		}
	}
	return ops
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
