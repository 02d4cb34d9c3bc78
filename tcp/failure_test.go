package tcp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

func submitWait(t *testing.T, n *node, tasks ...*transport.Task) {
	t.Helper()
	if err := n.t.Submit(tasks); err != nil {
		t.Fatal(err)
	}
	wait(t, 20*time.Second, tasks...)
}

// TestServerRefusalThroughClient lies to the client about the peer's
// buffer so the request reaches the server, which must refuse it.
func TestServerRefusalThroughClient(t *testing.T) {
	a := newNode(t, 1<<20, WithLanes(1))
	b := newNode(t, 64<<10)
	d := b.desc()
	d.Buffers[0].Length = 1 << 20 // claims more than b registered
	seg := transport.NewSegment(1, d.Name, d)
	fill(b.mem, 4)
	fill(a.mem, 8)
	snapshot := append([]byte(nil), b.mem...)
	b.fence()

	// Valid writes before and after the bad one, all pipelined on one lane.
	var tasks []*transport.Task
	for i := range 8 {
		tasks = append(tasks, newTask(a, seg, transport.Write, uint64(i)*4096, uint64(i)*4096, 4096))
	}
	bad := newTask(a, seg, transport.Write, 0, 64<<10-10, 20)
	tasks = append(tasks[:4], append([]*transport.Task{bad}, tasks[4:]...)...)
	badRead := newTask(a, seg, transport.Read, 0, 64<<10, 1)
	tasks = append(tasks, badRead)
	submitWait(t, a, tasks...)
	for _, tk := range []*transport.Task{bad, badRead} {
		if !errors.Is(tk.Err(), transport.ErrAddressNotRegistered) || tk.State() != transport.StateFailed {
			t.Fatalf("out-of-range request: state %d err %v", tk.State(), tk.Err())
		}
	}
	b.fence()
	for _, tk := range tasks {
		if tk == bad || tk == badRead {
			continue
		}
		if tk.Err() != nil {
			t.Fatalf("valid request behind a refused one failed: %v", tk.Err())
		}
	}
	if !bytes.Equal(b.mem[32<<10:], snapshot[32<<10:]) || !bytes.Equal(b.mem[:32<<10], a.mem[:32<<10]) {
		t.Fatal("memory outside the valid writes changed, or valid writes did not land")
	}
}

func TestClientRefusesBeforeSending(t *testing.T) {
	a := newNode(t, 1<<20)
	b := newNode(t, 64<<10)
	seg := b.segment()
	a.host.refreshDesc = b.desc

	// Remote range outside the descriptor: one refresh, then refused.
	tk := newTask(a, seg, transport.Write, 0, 64<<10-1, 2)
	submitWait(t, a, tk)
	if !errors.Is(tk.Err(), transport.ErrAddressNotRegistered) {
		t.Fatalf("remote out of range: %v", tk.Err())
	}
	if a.host.refreshes != 1 {
		t.Fatalf("%d refreshes, want 1", a.host.refreshes)
	}
	// Local memory not registered.
	stray := make([]byte, 16)
	tk = &transport.Task{Op: transport.Write, Local: stray, LocalAddr: addrOf(stray), Target: seg, TargetAddr: b.addr}
	tk.Reset(nil)
	submitWait(t, a, tk)
	if !errors.Is(tk.Err(), transport.ErrAddressNotRegistered) {
		t.Fatalf("local unregistered: %v", tk.Err())
	}
	// Unknown opcode.
	tk = newTask(a, seg, transport.Opcode(7), 0, 0, 16)
	submitWait(t, a, tk)
	if !errors.Is(tk.Err(), ErrBadTask) {
		t.Fatalf("bad opcode: %v", tk.Err())
	}
	// No data port published.
	nd := &metadata.SegmentDesc{Name: "127.0.0.1:1", Buffers: seg.Desc().Buffers}
	tk = newTask(a, transport.NewSegment(2, nd.Name, nd), transport.Read, 0, 0, 16)
	submitWait(t, a, tk)
	if !errors.Is(tk.Err(), transport.ErrNotSupported) {
		t.Fatalf("no data port: %v", tk.Err())
	}
	if got := b.t.srv.served.Load(); got != 0 {
		t.Fatalf("the server saw %d requests; refused ones must not be sent", got)
	}
}

func TestStaleDescriptorRefreshed(t *testing.T) {
	a := newNode(t, 1<<20)
	b := newNode(t, 64<<10)
	extra := addRegion(t, b, addrOf(b.mem)+1<<40, 4096, true)
	stale := b.desc()
	seg := transport.NewSegment(1, stale.Name, stale)
	a.host.refreshDesc = func() *metadata.SegmentDesc {
		d := b.desc()
		d.Buffers = append(d.Buffers, metadata.BufferDesc{Addr: addrOf(b.mem) + 1<<40, Length: 4096, Name: d.Name})
		return d
	}
	fill(a.mem[:4096], 6)
	tk := newTask(a, seg, transport.Write, 0, 0, 4096)
	tk.TargetAddr = addrOf(b.mem) + 1<<40
	submitWait(t, a, tk)
	b.fence()
	if tk.Err() != nil || !bytes.Equal(extra, a.mem[:4096]) {
		t.Fatalf("write to a buffer missing from the cached descriptor: %v", tk.Err())
	}
}

func TestUnregisterRefusesLater(t *testing.T) {
	a := newNode(t, 1<<20)
	b := newNode(t, 64<<10)
	seg := b.segment()
	tk := newTask(a, seg, transport.Read, 0, 0, 4096)
	submitWait(t, a, tk)
	if tk.Err() != nil {
		t.Fatal(tk.Err())
	}
	if err := b.t.Unregister(b.addr); err != nil {
		t.Fatal(err)
	}
	if err := b.t.Unregister(b.addr); !errors.Is(err, transport.ErrAddressNotRegistered) {
		t.Fatalf("second Unregister: %v", err)
	}
	tk = newTask(a, seg, transport.Read, 0, 0, 4096)
	submitWait(t, a, tk)
	if !errors.Is(tk.Err(), transport.ErrAddressNotRegistered) {
		t.Fatalf("read of an unregistered region: %v", tk.Err())
	}
}

func TestV1ClientAgainstFerryServer(t *testing.T) {
	a := newNode(t, 1<<20, WithProtoVersion(1))
	b := newNode(t, 1<<20)
	seg := b.segment()
	fill(a.mem, 1)
	b.fence()
	var tasks []*transport.Task
	for i := range 16 {
		op := transport.Write
		if i%2 == 1 {
			op = transport.Read
		}
		tasks = append(tasks, newTask(a, seg, op, uint64(i)<<16, uint64(i)<<16, 1<<16-i))
	}
	submitWait(t, a, tasks...)
	// A v1 WRITE completes once sent; wait until the server applied all.
	for end := time.Now().Add(10 * time.Second); b.t.srv.okCount.Load() < uint64(len(tasks)); {
		if time.Now().After(end) {
			t.Fatalf("server applied %d of %d requests", b.t.srv.okCount.Load(), len(tasks))
		}
		time.Sleep(time.Millisecond)
	}
	b.fence()
	for i, tk := range tasks {
		if tk.Err() != nil {
			t.Fatalf("task %d: %v", i, tk.Err())
		}
		lo, hi := i<<16, i<<16+1<<16-i
		if i%2 == 0 && !bytes.Equal(a.mem[lo:hi], b.mem[lo:hi]) {
			t.Fatalf("v1 write %d did not land", i)
		}
		if i%2 == 1 && !bytes.Equal(a.mem[lo:hi], b.mem[lo:hi]) {
			t.Fatalf("v1 read %d returned other bytes", i)
		}
	}
	if a.t.peers[peerKey{host: "127.0.0.1", port: b.t.Port(), v2: false}] == nil {
		t.Fatal("the client did not use v1 framing")
	}
}

// silentPeer accepts connections, reads everything and never answers.
func silentPeer(t *testing.T) *net.TCPListener {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln
}

func silentSegment(ln *net.TCPListener) *transport.Segment {
	d := &metadata.SegmentDesc{Name: "127.0.0.1:1", TCPDataPort: ln.Addr().(*net.TCPAddr).Port, TCPProtoVersion: 2,
		Buffers: []metadata.BufferDesc{{Addr: 1 << 30, Length: 1 << 30, Name: "127.0.0.1:1"}}}
	return transport.NewSegment(1, d.Name, d)
}

func TestSilentPeerFailsWithinTimeout(t *testing.T) {
	a := newNode(t, 1<<20, WithStatusTimeout(500*time.Millisecond))
	seg := silentSegment(silentPeer(t))
	var tasks []*transport.Task
	for i := range 6 {
		tasks = append(tasks, newTask(a, seg, transport.Opcode(i%2), uint64(i)*4096, uint64(i)*4096, 4096))
	}
	start := time.Now()
	submitWait(t, a, tasks...)
	elapsed := time.Since(start)
	for _, tk := range tasks {
		if !errors.Is(tk.Err(), transport.ErrPeerUnreachable) {
			t.Fatalf("silent peer: %v", tk.Err())
		}
	}
	// Bounded: well under the 20 s wait, and not before the timeout.
	if elapsed < 400*time.Millisecond || elapsed > 10*time.Second {
		t.Fatalf("tasks failed after %v with a 500ms status timeout", elapsed)
	}
}

func TestKilledPeerThenReconnect(t *testing.T) {
	a := newNode(t, 1<<20, WithStatusTimeout(time.Second))
	b := newNode(t, 1<<20)
	port := b.t.Port()
	seg := b.segment()
	tk := newTask(a, seg, transport.Read, 0, 0, 4096)
	submitWait(t, a, tk)
	if tk.Err() != nil {
		t.Fatal(tk.Err())
	}
	b.t.Close() // the peer dies; the client's lane still holds its old connection

	for i := range 2 { // first on the stale connection, then on a refused dial
		tk = newTask(a, seg, transport.Write, 0, 0, 4096)
		start := time.Now()
		submitWait(t, a, tk)
		if !errors.Is(tk.Err(), transport.ErrPeerUnreachable) {
			t.Fatalf("attempt %d to a dead peer: %v", i, tk.Err())
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("failure took %v", time.Since(start))
		}
	}

	// The peer comes back on the same port; the next request reconnects.
	c := newNode(t, 1<<20, WithPortRange(port, port))
	seg.SetDesc(c.desc())
	fill(a.mem[:8192], 7)
	c.fence()
	tk = newTask(a, seg, transport.Write, 0, 0, 8192)
	submitWait(t, a, tk)
	c.fence()
	if tk.Err() != nil || !bytes.Equal(c.mem[:8192], a.mem[:8192]) {
		t.Fatalf("after the peer restarted: %v", tk.Err())
	}
}

// A peer that restarts on the same port between two requests costs the
// client nothing: the lane notices that its idle connection was closed
// and dials again before sending.
func TestRestartedPeerFirstRequestSucceeds(t *testing.T) {
	a := newNode(t, 1<<20, WithStatusTimeout(2*time.Second))
	b := newNode(t, 1<<20)
	port := b.t.Port()
	seg := b.segment()
	for _, op := range []transport.Opcode{transport.Read, transport.Write} {
		tk := newTask(a, seg, op, 0, 0, 4096)
		submitWait(t, a, tk)
		if tk.Err() != nil {
			t.Fatal(tk.Err())
		}
	}
	b.t.Close()
	c := newNode(t, 1<<20, WithPortRange(port, port))
	seg.SetDesc(c.desc())
	for i, op := range []transport.Opcode{transport.Write, transport.Read} {
		fill(a.mem[:8192], byte(9+i))
		fill(c.mem[8192:16384], byte(20+i))
		c.fence()
		tk := newTask(a, seg, op, 0, 0, 8192)
		if op == transport.Read {
			tk = newTask(a, seg, op, 0, 8192, 8192)
		}
		submitWait(t, a, tk)
		c.fence()
		if tk.Err() != nil {
			t.Fatalf("%v %d after the peer restarted: %v", op, i, tk.Err())
		}
		if op == transport.Write && !bytes.Equal(c.mem[:8192], a.mem[:8192]) {
			t.Fatal("WRITE after restart: peer memory differs")
		}
		if op == transport.Read && !bytes.Equal(a.mem[:8192], c.mem[8192:16384]) {
			t.Fatal("READ after restart: local memory differs")
		}
	}
}

func TestCloseFailsInflightAndIsIdempotent(t *testing.T) {
	a := newNode(t, 1<<20, WithStatusTimeout(30*time.Second))
	seg := silentSegment(silentPeer(t))
	tasks := []*transport.Task{newTask(a, seg, transport.Read, 0, 0, 4096), newTask(a, seg, transport.Write, 4096, 0, 4096)}
	if err := a.t.Submit(tasks); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := a.t.Close(); err != nil {
		t.Fatal(err)
	}
	wait(t, 5*time.Second, tasks...)
	for _, tk := range tasks {
		if !errors.Is(tk.Err(), transport.ErrClosed) {
			t.Fatalf("in flight at Close: %v", tk.Err())
		}
	}
	if err := a.t.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := a.t.Submit(tasks[:1]); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if err := a.t.Register(transport.Region{Mem: make([]byte, 1), Addr: 1}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Register after Close: %v", err)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("MC_TCP_LANES_PER_PEER", "99")
	t.Setenv("MC_TCP_STATUS_TIMEOUT_SEC", "abc")
	t.Setenv("MC_TCP_PROTO", "1")
	t.Setenv("MC_MIN_RPC_PORT", "16100")
	t.Setenv("MC_MAX_RPC_PORT", "16199")
	h := &testHost{}
	tr, err := New(h, WithListenHost("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.cfg.lanes != MaxLanes || tr.cfg.statusTimeout != DefaultStatusTimeout || tr.cfg.proto != 1 {
		t.Fatalf("config %+v", tr.cfg)
	}
	if p := tr.Port(); p < 16100 || p > 16199 {
		t.Fatalf("data port %d outside MC_MIN_RPC_PORT..MC_MAX_RPC_PORT", p)
	}
	var d metadata.SegmentDesc
	tr.Describe(&d)
	if d.TCPDataPort != tr.Port() || d.TCPProtoVersion != 2 || !tr.Reaches(&d) || tr.Reaches(&metadata.SegmentDesc{}) {
		t.Fatalf("Describe/Reaches: %+v", d)
	}
	t.Setenv("MC_MIN_RPC_PORT", "17000")
	t.Setenv("MC_MAX_RPC_PORT", "100")
	if c := loadConfig(h.Logger()); c.minPort != DefaultMinPort || c.maxPort != DefaultMaxPort {
		t.Fatalf("inverted range accepted: %d..%d", c.minPort, c.maxPort)
	}
}

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1:15000": "10.0.0.1", "[::1]:80": "::1", "node7": "node7", "fe80::1": "fe80::1"} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}
