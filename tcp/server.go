package tcp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// server accepts data connections and serves session headers against the
// registered regions.
type server struct {
	ln      net.Listener
	port    int
	regions *transport.Regions
	memMu   *sync.RWMutex // read-held while a request touches region memory
	m       *metrics
	log     *slog.Logger
	timeout time.Duration
	served  atomic.Uint64 // session headers received (for tests and debugging)
	okCount atomic.Uint64 // requests served successfully

	mu     sync.Mutex
	conns  map[net.Conn]*session
	closed bool
	wg     sync.WaitGroup
}

// listen binds a data port picked at random in [minPort, maxPort] on host.
func listen(host string, minPort, maxPort int) (net.Listener, int, error) {
	span := maxPort - minPort + 1
	attempts := min(span, maxBindAttempts)
	start := rand.IntN(span)
	var lastErr error
	for i := range attempts {
		port := minPort + (start+i)%span
		if attempts < span {
			port = minPort + rand.IntN(span)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			return ln, port, nil
		}
		lastErr = err
	}
	return nil, 0, fmt.Errorf("tcp: no free data port in [%d,%d] on %q after %d attempts: %w",
		minPort, maxPort, host, attempts, lastErr)
}

func (s *server) start() {
	s.wg.Add(1)
	go s.acceptLoop()
}

func (s *server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Warn("tcp: accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		ss := &session{}
		s.conns[c] = ss
		s.wg.Add(1)
		s.mu.Unlock()
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		go s.serve(c, ss)
	}
}

// session is the per-connection state of the server; it lives as long as
// the connection so that serving a request allocates nothing.
type session struct {
	hdr [HeaderSize]byte
	st  [StatusSize]byte
	iov [2][]byte
	nb  net.Buffers

	// [addr, addr+size) is the region memory the connection's goroutine
	// is moving bytes from or to right now (size 0: none); read by
	// serving.
	mu   sync.Mutex
	addr uint64
	size uint64
}

// setActive records the range being served (size 0 clears it).
func (ss *session) setActive(addr, size uint64) {
	ss.mu.Lock()
	ss.addr, ss.size = addr, size
	ss.mu.Unlock()
}

// overlaps reports whether the range being served overlaps [addr, addr+n).
func (ss *session) overlaps(addr, n uint64) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.size > 0 && n > 0 && ss.addr < addr+n && addr < ss.addr+ss.size
}

// serving reports whether a connection is moving bytes from or to any
// part of [addr, addr+n) at this moment.
func (s *server) serving(addr, n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.conns {
		if ss.overlaps(addr, n) {
			return true
		}
	}
	return false
}

func (s *server) serve(c net.Conn, ss *session) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	for {
		if err := s.serveOne(c, ss); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("tcp: data connection closed", "peer", c.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
}

// errRejected ends a connection after a rejected request.
var errRejected = errors.New("tcp: request rejected")

// serveOne reads one session header and serves it. A non-nil error ends
// the connection.
func (s *server) serveOne(c net.Conn, ss *session) error {
	// An idle persistent connection may wait for its next header forever.
	if _, err := io.ReadFull(c, ss.hdr[:]); err != nil {
		return err
	}
	s.served.Add(1)
	h, err := ParseHeader(ss.hdr[:])
	if err != nil {
		s.log.Warn("tcp: bad session header from peer", "peer", c.RemoteAddr().String(), "err", err)
		return err
	}
	oi := opIndex(h.Write)
	s.memMu.RLock()
	r, ok := s.regions.Find(h.Addr, h.Size)
	if !ok || !r.RemoteAccessible {
		s.memMu.RUnlock()
		s.m.failures[roleServer][oi].Inc()
		s.log.Warn("tcp: remote-supplied range is not within one registered buffer",
			"peer", c.RemoteAddr().String(), "addr", h.Addr, "size", h.Size, "write", h.Write)
		if h.V2 {
			PutStatus(ss.st[:], StatusAddrRejected)
			c.SetWriteDeadline(time.Now().Add(s.timeout))
			c.Write(ss.st[:])
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite() // FIN right after the status, as Mooncake does
		}
		return errRejected
	}
	buf := r.Slice(h.Addr, h.Size)
	if h.Size > 0 {
		ss.setActive(h.Addr, h.Size)
	}
	err = s.move(c, ss, h, buf)
	if h.Size > 0 {
		ss.setActive(0, 0)
	}
	s.memMu.RUnlock()
	if err != nil {
		s.m.failures[roleServer][oi].Inc()
		return err
	}
	s.okCount.Add(1)
	s.m.requests[roleServer][oi].Inc()
	s.m.bytes[roleServer][oi].Add(float64(h.Size))
	return nil
}

// move transfers the payload of one accepted request directly between the
// socket and buf (registered memory).
func (s *server) move(c net.Conn, ss *session, h Header, buf []byte) error {
	deadline := time.Now().Add(s.timeout)
	if h.Write {
		if len(buf) > 0 {
			c.SetReadDeadline(deadline)
			_, err := io.ReadFull(c, buf)
			c.SetReadDeadline(time.Time{})
			if err != nil {
				return fmt.Errorf("tcp: reading %d-byte WRITE payload: %w", len(buf), err)
			}
		}
		if !h.V2 {
			return nil
		}
		PutStatus(ss.st[:], StatusOK)
		c.SetWriteDeadline(deadline)
		_, err := c.Write(ss.st[:])
		return err
	}
	c.SetWriteDeadline(deadline)
	if !h.V2 {
		_, err := c.Write(buf)
		return err
	}
	PutStatus(ss.st[:], StatusOK)
	ss.iov[0], ss.iov[1] = ss.st[:], buf
	ss.nb = ss.iov[:2]
	_, err := ss.nb.WriteTo(c)
	ss.iov[1] = nil
	return err
}

// close stops accepting, closes every connection and waits for the
// handlers.
func (s *server) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
