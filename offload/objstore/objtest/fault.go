package objtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StallLimit is how long a Stall action holds a connection at most.
const StallLimit = 135 * time.Second

type kind int

const (
	kReply kind = iota
	kRaw
	kReset
	kStall
	kClose
)

// Action is how the fault server answers one request.
type Action struct {
	kind      kind
	status    int
	body      []byte
	extra     []string
	raw       []byte
	gated     bool
	keepAlive bool
	noLength  bool
}

// Reply answers "HTTP/1.1 <status> Test" with Content-Length, Connection:
// close and the extra header lines ("Name: value").
func Reply(status int, body string, extra ...string) Action {
	return Action{kind: kReply, status: status, body: []byte(body), extra: extra}
}

// Raw sends wire as the whole response and closes the connection.
func Raw(wire string) Action { return Action{kind: kRaw, raw: []byte(wire)} }

// Reset closes the connection with SO_LINGER 0, so the client gets an RST.
func Reset() Action { return Action{kind: kReset} }

// Stall holds the connection open without answering until the server
// closes or StallLimit passes.
func Stall() Action { return Action{kind: kStall} }

// CloseConn closes the connection without a response.
func CloseConn() Action { return Action{kind: kClose} }

// Gate holds a back until ReleaseResponses is called.
func Gate(a Action) Action { a.gated = true; return a }

// KeepAlive makes a Reply leave the connection open (no Connection:
// close) so the client can send its next request on it.
func KeepAlive(a Action) Action { a.keepAlive = true; return a }

// Request is one request as received.
type Request struct {
	Method string
	Target string // request target exactly as sent
	Key    string // last path segment of the target
	Header http.Header
	Body   []byte
	Wire   string // the raw request text (head and body)
	Conn   int    // connection number, from 1
}

// Server is a loopback fault-injection HTTP/1.1 server.
type Server struct {
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	routes   map[string][]Action
	script   []Action
	scripted bool
	reqs     []Request
	errs     []string
	gate     chan struct{}
	arrived  *sync.Cond
	conns    map[net.Conn]struct{}
	nconn    int
	closed   bool
}

// NewServer starts a server on 127.0.0.1 and closes it when t ends.
func NewServer(t testing.TB) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("objtest: listen: %v", err)
	}
	s := &Server{ln: ln, done: make(chan struct{}), routes: map[string][]Action{},
		gate: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	s.arrived = sync.NewCond(&s.mu)
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// URL returns "http://127.0.0.1:<port>".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Route sets the answers for requests whose last path segment is key:
// the actions are used in order and the last one repeats.
func (s *Server) Route(key string, actions ...Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[key] = actions
}

// Script switches the server to answer every request, whatever its
// target, with the next action in arrival order; the last one repeats.
func (s *Server) Script(actions ...Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.scripted = actions, true
}

// ReleaseResponses lets every gated reply (held now or later) go out.
func (s *Server) ReleaseResponses() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gate:
	default:
		close(s.gate)
	}
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many requests for key arrived.
func (s *Server) Count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reqs {
		if r.Key == key {
			n++
		}
	}
	return n
}

// Errors returns the server-side problems seen (unknown routes, bad
// requests).
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// WaitForRequests waits until at least n requests arrived or timeout
// passes and reports whether they did.
func (s *Server) WaitForRequests(n int, timeout time.Duration) bool {
	return s.waitFor(func() bool { return len(s.reqs) >= n }, timeout)
}

// WaitForRequest waits until a request for key arrived (default timeout
// 5 s when timeout is 0) and reports whether it did.
func (s *Server) WaitForRequest(key string, timeout time.Duration) bool {
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	return s.waitFor(func() bool {
		for _, r := range s.reqs {
			if r.Key == key {
				return true
			}
		}
		return false
	}, timeout)
}

func (s *Server) waitFor(cond func() bool, timeout time.Duration) bool {
	t := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		s.arrived.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	deadline := time.Now().Add(timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond() {
		if !time.Now().Before(deadline) || s.closed {
			return false
		}
		s.arrived.Wait()
	}
	return true
}

// Close stops the server, cuts every connection (ending stalls and gates)
// and waits for its goroutines. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	for c := range s.conns {
		c.Close()
	}
	s.arrived.Broadcast()
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.nconn++
		id := s.nconn
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c, id)
	}
}

func (s *Server) serve(c net.Conn, id int) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		req, err := readRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !isClosed(err) {
				s.fail("bad request: " + err.Error())
			}
			return
		}
		req.Conn = id
		a, ok := s.record(req)
		if !ok {
			_, _ = c.Write([]byte("HTTP/1.1 500 Unknown Route\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			return
		}
		if !s.act(c, a) {
			return
		}
	}
}

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

func (s *Server) fail(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.errs = append(s.errs, msg)
	}
}

// record stores req and picks its action.
func (s *Server) record(req Request) (Action, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	s.arrived.Broadcast()
	if s.scripted {
		if len(s.script) == 0 {
			s.errs = append(s.errs, "script exhausted at "+req.Target)
			return Action{}, false
		}
		a := s.script[0]
		if len(s.script) > 1 {
			s.script = s.script[1:]
		}
		return a, true
	}
	acts, ok := s.routes[req.Key]
	if !ok || len(acts) == 0 {
		s.errs = append(s.errs, fmt.Sprintf("unknown route %q (%s %s)", req.Key, req.Method, req.Target))
		return Action{}, false
	}
	a := acts[0]
	if len(acts) > 1 {
		s.routes[req.Key] = acts[1:]
	}
	return a, true
}

// act performs a on c and reports whether the connection stays open.
func (s *Server) act(c net.Conn, a Action) bool {
	if a.gated {
		select {
		case <-s.gate:
		case <-s.done:
			return false
		}
	}
	switch a.kind {
	case kReply:
		var b bytes.Buffer
		fmt.Fprintf(&b, "HTTP/1.1 %d Test\r\n", a.status)
		if !a.noLength {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(a.body))
		}
		for _, h := range a.extra {
			b.WriteString(h)
			b.WriteString("\r\n")
		}
		if !a.keepAlive {
			b.WriteString("Connection: close\r\n")
		}
		b.WriteString("\r\n")
		b.Write(a.body)
		if _, err := c.Write(b.Bytes()); err != nil {
			return false
		}
		return a.keepAlive
	case kRaw:
		_, _ = c.Write(a.raw)
		return false
	case kReset:
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return false
	case kStall:
		t := time.NewTimer(StallLimit)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
		}
		return false
	}
	return false // kClose
}

// readRequest reads one request (head and Content-Length body).
func readRequest(br *bufio.Reader) (Request, error) {
	var wire bytes.Buffer
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return Request{}, err
	}
	wire.WriteString(line + "\r\n")
	parts := strings.SplitN(line, " ", 3)
	if len(parts) != 3 {
		return Request{}, fmt.Errorf("malformed request line %q", line)
	}
	hdr := http.Header{}
	for {
		l, err := tp.ReadLine()
		if err != nil {
			return Request{}, err
		}
		wire.WriteString(l + "\r\n")
		if l == "" {
			break
		}
		name, val, ok := strings.Cut(l, ":")
		if !ok {
			return Request{}, fmt.Errorf("malformed header line %q", l)
		}
		hdr.Add(strings.TrimSpace(name), strings.TrimSpace(val))
	}
	var body []byte
	if cl := hdr.Get("Content-Length"); cl != "" {
		n, err := strconv.Atoi(cl)
		if err != nil || n < 0 {
			return Request{}, fmt.Errorf("bad Content-Length %q", cl)
		}
		body = make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return Request{}, err
		}
		wire.Write(body)
	}
	target := parts[1]
	path, _, _ := strings.Cut(target, "?")
	key := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		key = path[i+1:]
	}
	return Request{Method: parts[0], Target: target, Key: key, Header: hdr, Body: body, Wire: wire.String()}, nil
}
