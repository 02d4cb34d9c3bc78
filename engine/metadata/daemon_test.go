package metadata

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sync"
	"testing"
	"time"
)

type testDaemon struct {
	*Daemon
	mu       sync.Mutex
	notifies []Notify
	desc     *SegmentDesc
}

func startDaemon(t *testing.T, cfg DaemonConfig) *testDaemon {
	t.Helper()
	td := &testDaemon{}
	cfg.BindHost = "127.0.0.1"
	if cfg.Describe == nil {
		cfg.Describe = func() []byte { return EncodeDesc(td.desc) }
	}
	cfg.OnNotify = func(n Notify) {
		td.mu.Lock()
		td.notifies = append(td.notifies, n)
		td.mu.Unlock()
	}
	d, err := Listen(cfg)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	name := SegmentName("127.0.0.1", d.Port())
	td.desc = &SegmentDesc{Name: name, Protocol: "tcp", TCPDataPort: 16206, TCPProtoVersion: 2,
		Buffers: []BufferDesc{{Addr: 140601725026304, Length: 1 << 30, Name: name}}}
	td.Daemon = d
	t.Cleanup(func() { d.Close() })
	return td
}

func (td *testDaemon) name() string { return SegmentName("127.0.0.1", td.Port()) }

// rawExchange sends raw in Mooncake's three writes and returns everything
// the daemon sends until it closes.
func rawExchange(t *testing.T, addr string, raw []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for _, part := range [][]byte{raw[:min(8, len(raw))], raw[min(8, len(raw)):min(9, len(raw))], raw[min(9, len(raw)):]} {
		if len(part) == 0 {
			continue
		}
		if _, err := c.Write(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read until FIN: %v", err)
	}
	return got
}

var digits = regexp.MustCompile(`[0-9]+`)

func TestDaemonFixtures(t *testing.T) {
	td := startDaemon(t, DaemonConfig{})
	if p := td.Port(); p < 15000 || p > 17000 {
		t.Fatalf("port %d outside [15000, 17000]", p)
	}
	addr := td.name()
	for _, c := range []struct{ req, reply string }{
		{"handshake-probe-request-crafted.bin", "handshake-probe-reply.bin"},
		{"handshake-notify-request-crafted.bin", "handshake-notify-reply.bin"},
	} {
		got := rawExchange(t, addr, fixture(t, c.req))
		if want := fixture(t, c.reply); !bytes.Equal(got, want) {
			t.Fatalf("%s: reply\n got %q\nwant %q", c.req, got, want)
		}
	}
	td.mu.Lock()
	if len(td.notifies) != 1 || td.notifies[0] != (Notify{Name: "fixture", NotifyMsg: "hello"}) {
		t.Fatalf("notifies %+v", td.notifies)
	}
	td.mu.Unlock()

	// Metadata: same layout, key order and value types as the capture;
	// only numbers (ports, addresses, timestamp) differ.
	got := rawExchange(t, addr, fixture(t, "handshake-metadata-request.bin"))
	want := fixture(t, "handshake-metadata-reply.bin")
	if binary.LittleEndian.Uint64(got) != uint64(len(got)-8) || got[8] != byte(FrameMetadata) {
		t.Fatalf("metadata reply header %x", got[:9])
	}
	if g, w := digits.ReplaceAll(got[9:], []byte("0")), digits.ReplaceAll(want[9:], []byte("0")); !bytes.Equal(g, w) {
		t.Fatalf("metadata reply shape\n got %s\nwant %s", g, w)
	}
	// The body of a Metadata request is ignored, even "{}\n".
	req := AppendFrame(nil, FrameMetadata, []byte("{}\n"))
	if got := rawExchange(t, addr, req); len(got) < 9 || got[8] != 1 {
		t.Fatalf("metadata with {} body: %q", got)
	}
}

func TestDaemonRejectsBadFrames(t *testing.T) {
	td := startDaemon(t, DaemonConfig{MaxFrameLength: 4096, RecvTimeout: time.Second})
	addr := td.name()
	over := binary.LittleEndian.AppendUint64(nil, 4097)
	over = append(over, 1)
	garbageNotify := AppendFrame(nil, FrameNotify, []byte("not json\n"))
	unknownConn := AppendFrame(nil, FrameConnection, []byte("{}\n"))
	zero := binary.LittleEndian.AppendUint64(nil, 0)
	for name, raw := range map[string][]byte{
		"oversized":             over,
		"zero length":           zero,
		"garbage notify":        garbageNotify,
		"connection no handler": unknownConn,
	} {
		if got := rawExchange(t, addr, raw); len(got) != 0 {
			t.Errorf("%s: daemon replied %q, want a closed connection", name, got)
		}
	}
	// Truncated: the client half-closes inside the body.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	probe := fixture(t, "handshake-probe-request-crafted.bin")
	c.Write(probe[:10])
	c.(*net.TCPConn).CloseWrite()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Fatalf("truncated: got %q, %v", got, err)
	}
	// A stalled client is dropped after RecvTimeout.
	s, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write(probe[:4])
	s.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(s); err != nil || len(got) != 0 {
		t.Fatalf("stalled: got %q, %v", got, err)
	}
	var cl Client
	if err := cl.SendNotify(context.Background(), addr, Notify{Name: string(make([]byte, 5000))}); !errors.Is(err, ErrRejected) {
		t.Fatalf("oversized notify via client: %v, want ErrRejected", err)
	}
}

func TestDaemonConcurrent(t *testing.T) {
	td := startDaemon(t, DaemonConfig{MaxConns: 8})
	addr := td.name()
	// A client that connects and sends nothing must not hold up others.
	stall, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	var cl Client
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 3 {
			case 0:
				errs <- cl.Probe(ctx, addr)
			case 1:
				errs <- cl.SendNotify(ctx, addr, Notify{Name: "n", NotifyMsg: fmt.Sprint(i)})
			default:
				d, err := cl.FetchDesc(ctx, addr, []byte("{}\n"))
				if err == nil && d.Name != addr {
					err = fmt.Errorf("descriptor name %q", d.Name)
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent request: %v", err)
		}
	}
	td.mu.Lock()
	defer td.mu.Unlock()
	if len(td.notifies) != 13 {
		t.Fatalf("%d notifies, want 13", len(td.notifies))
	}
}

func TestConnectionHandler(t *testing.T) {
	td := startDaemon(t, DaemonConfig{})
	td.SetConnectionHandler(func(ctx context.Context, body []byte) ([]byte, error) {
		return append([]byte("echo:"), body...), nil
	})
	var cl Client
	got, err := cl.Call(context.Background(), td.name(), FrameConnection, []byte(`{"qp_num":[1]}`))
	if err != nil || string(got) != `echo:{"qp_num":[1]}` {
		t.Fatalf("Call = %q, %v", got, err)
	}
}

// fakePeer accepts one connection, reads a frame and answers with reply.
func fakePeer(t *testing.T, reply []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		ReadFrame(c, 0)
		c.Write(reply)
	}()
	return ln.Addr().String()
}

func TestClientErrors(t *testing.T) {
	var cl Client
	ctx := context.Background()
	huge := binary.LittleEndian.AppendUint64(nil, 1<<30)
	if _, err := cl.Call(ctx, fakePeer(t, huge), FrameProbe, ProbeRequestBody); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("huge reply: %v", err)
	}
	short := fixture(t, "handshake-probe-reply.bin")[:15]
	if _, err := cl.Call(ctx, fakePeer(t, short), FrameProbe, ProbeRequestBody); !errors.Is(err, ErrTruncated) {
		t.Errorf("short reply: %v", err)
	}
	wrongType := AppendFrame(nil, FrameNotify, []byte("{}\n"))
	if _, err := cl.Call(ctx, fakePeer(t, wrongType), FrameProbe, ProbeRequestBody); !errors.Is(err, ErrRejected) {
		t.Errorf("wrong type: %v", err)
	}
	badDesc := AppendFrame(nil, FrameMetadata, []byte(`{"name":"x","protocol":"tcp","tcp_data_port":1,"buffers":[{"addr":0,"length":1,"name":"x"}]}`+"\n"))
	if _, err := cl.FetchDesc(ctx, fakePeer(t, badDesc), nil); !errors.Is(err, ErrInvalidDescriptor) {
		t.Errorf("bad descriptor: %v", err)
	}
	if _, err := cl.Call(ctx, "127.0.0.1:1", FrameProbe, ProbeRequestBody); !errors.Is(err, ErrUnreachable) {
		t.Errorf("closed port: %v", err)
	}
	if _, err := cl.Call(ctx, "no-port", FrameProbe, nil); !errors.Is(err, ErrInvalidName) {
		t.Errorf("bad name: %v", err)
	}
	// A peer that accepts and never answers: the context deadline wins.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := cl.Call(tctx, ln.Addr().String(), FrameProbe, ProbeRequestBody); !errors.Is(err, ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent peer: %v", err)
	}
}

func TestCloseIdempotent(t *testing.T) {
	td := startDaemon(t, DaemonConfig{})
	stall, err := net.Dial("tcp", td.name())
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	time.Sleep(10 * time.Millisecond)
	if err := td.Close(); err != nil {
		t.Fatal(err)
	}
	if err := td.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestParseNames(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:12345": "127.0.0.1", "host": "host", "[::1]:5": "::1", "[::1]": "::1", "::1": "::1"} {
		if got, err := ParseServerName(in); err != nil || got != want {
			t.Errorf("ParseServerName(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", ":80", "[::1"} {
		if _, err := ParseServerName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ParseServerName(%q) err = %v", bad, err)
		}
	}
	if h, p, err := SplitSegmentName("/127.0.0.1:16572"); err != nil || h != "127.0.0.1" || p != 16572 {
		t.Errorf("SplitSegmentName = %q %d %v", h, p, err)
	}
	for _, bad := range []string{"h", "h:0", "h:70000", ":5", "h:x"} {
		if _, _, err := SplitSegmentName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("SplitSegmentName(%q) err = %v", bad, err)
		}
	}
}
