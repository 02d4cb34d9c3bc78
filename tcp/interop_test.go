package tcp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// addRegion registers size bytes at the virtual address addr on n.
func addRegion(tb testing.TB, n *node, addr uint64, size int, remote bool) []byte {
	tb.Helper()
	mem := make([]byte, size)
	if err := n.t.Register(transport.Region{Mem: mem, Addr: addr, Location: "cpu:0", RemoteAccessible: remote}); err != nil {
		tb.Fatal(err)
	}
	return mem
}

func dialData(tb testing.TB, n *node) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(n.t.Port()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func readN(tb testing.TB, c net.Conn, n int) []byte {
	tb.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		tb.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

// expectClosed checks that the server sends nothing more and closes. A
// reset is a close too: the server leaves the refused payload unread.
func expectClosed(tb testing.TB, c net.Conn) {
	tb.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := c.Read(b[:])
	if n != 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		tb.Fatalf("want EOF from the server, got %d bytes, err %v", n, err)
	}
}

// TestServerReplaysMooncakeBytes plays the initiator's captured frames
// against a Ferry server and checks its replies byte for byte.
func TestServerReplaysMooncakeBytes(t *testing.T) {
	n := newNode(t, 4096)
	memA := addRegion(t, n, fixtureBaseA, 8192, true)
	memB := addRegion(t, n, fixtureBaseB, 4096, true)
	ok := fixture(t, "tcp-status-ok.bin")
	p1, p2 := bytes.Repeat([]byte{0xa1}, 4096), bytes.Repeat([]byte{0xb2}, 4096)

	c := dialData(t, n)
	n.fence()
	c.Write(append(fixture(t, "tcp-write-header.bin"), p1...))
	if got := readN(t, c, 8); !bytes.Equal(got, ok) {
		t.Fatalf("WRITE status % x, want % x", got, ok)
	}
	c.Write(append(fixture(t, "tcp-write-header-dirty-pad.bin"), p2...))
	if got := readN(t, c, 8); !bytes.Equal(got, ok) {
		t.Fatalf("dirty-pad WRITE status % x", got)
	}
	n.fence()
	if !bytes.Equal(memA[:4096], p1) || !bytes.Equal(memA[4096:], p2) {
		t.Fatal("WRITE payloads did not land at the header addresses")
	}
	c.Write(fixture(t, "tcp-read-header.bin"))
	if got := readN(t, c, 8+4096); !bytes.Equal(got[:8], ok) || !bytes.Equal(got[8:], p1) {
		t.Fatal("READ: want status OK then the first block")
	}
	c.Write(fixture(t, "tcp-read-header-dirty-pad.bin"))
	if got := readN(t, c, 8+4096); !bytes.Equal(got[:8], ok) || !bytes.Equal(got[8:], p2) {
		t.Fatal("dirty-pad READ: want status OK then the second block")
	}

	// v1: no status frames at all, same connection reused.
	v1 := dialData(t, n)
	p3 := bytes.Repeat([]byte{0xc3}, 4096)
	v1.Write(append(fixture(t, "tcp-v1-write-header.bin"), p3...))
	v1.Write(fixture(t, "tcp-v1-read-header.bin"))
	if got := readN(t, v1, 4096); !bytes.Equal(got, p3) {
		t.Fatal("v1 READ after v1 WRITE returned other bytes")
	}
	n.fence()
	if !bytes.Equal(memB, p3) {
		t.Fatal("v1 WRITE did not land")
	}
	v1.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var extra [1]byte
	if k, err := v1.Read(extra[:]); k != 0 || err == nil {
		t.Fatalf("v1 server sent %d unexpected bytes (err %v)", k, err)
	}
}

// TestServerRejects checks that refused requests get status 1, nothing
// else, a closed connection, and no change to memory.
func TestServerRejects(t *testing.T) {
	n := newNode(t, 4096)
	memA := addRegion(t, n, fixtureBaseA, 8192, true)
	addRegion(t, n, fixtureBaseB, 4096, false) // registered, not remote-accessible
	fill(memA, 9)
	snapshot := append([]byte(nil), memA...)
	rejected := fixture(t, "tcp-status-addr-rejected.bin")

	cases := []struct {
		name string
		h    Header
	}{
		{"write past end", Header{Size: 4096, Addr: fixtureBaseA + 8192 - 16, Write: true, V2: true}},
		{"read past end", Header{Size: 4096, Addr: fixtureBaseA + 8192 - 16, V2: true}},
		{"write unregistered", Header{Size: 16, Addr: 0x1000, Write: true, V2: true}},
		{"read unregistered", Header{Size: 16, Addr: 0x1000, V2: true}},
		{"write before start", Header{Size: 32, Addr: fixtureBaseA - 16, Write: true, V2: true}},
		{"write not remote", Header{Size: 16, Addr: fixtureBaseB, Write: true, V2: true}},
		{"size overflows", Header{Size: ^uint64(0), Addr: fixtureBaseA + 1, Write: true, V2: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialData(t, n)
			var hdr [HeaderSize]byte
			PutHeader(hdr[:], tc.h)
			msg := hdr[:]
			if tc.h.Write {
				msg = append(msg, bytes.Repeat([]byte{0xee}, 64)...)
			}
			c.Write(msg)
			if got := readN(t, c, 8); !bytes.Equal(got, rejected) {
				t.Fatalf("status % x, want % x", got, rejected)
			}
			expectClosed(t, c)
			n.fence()
			if !bytes.Equal(memA, snapshot) {
				t.Fatal("a refused request changed registered memory")
			}
		})
	}
	t.Run("v1 closes without status", func(t *testing.T) {
		c := dialData(t, n)
		var hdr [HeaderSize]byte
		PutHeader(hdr[:], Header{Size: 16, Addr: 0x1000, Write: true})
		c.Write(hdr[:])
		expectClosed(t, c)
	})
	t.Run("bad opcode closes", func(t *testing.T) {
		c := dialData(t, n)
		hdr := make([]byte, HeaderSize)
		hdr[16] = 0x85
		c.Write(hdr)
		expectClosed(t, c)
	})
	t.Run("zero size at end accepted", func(t *testing.T) {
		c := dialData(t, n)
		var hdr [HeaderSize]byte
		PutHeader(hdr[:], Header{Size: 0, Addr: fixtureBaseA + 8192, Write: true, V2: true})
		c.Write(hdr[:])
		if got := readN(t, c, 8); !bytes.Equal(got, fixture(t, "tcp-status-ok.bin")) {
			t.Fatalf("status % x", got)
		}
	})
}

// fakeMooncake accepts one data connection and serves requests the way a
// Mooncake target does, recording every header it receives.
type fakeMooncake struct {
	ln      net.Listener
	v2      bool
	mem     []byte // backs [base, base+len)
	base    uint64
	headers chan []byte
	stop    chan struct{}
	done    chan struct{}
}

func newFakeMooncake(t *testing.T, base uint64, v2 bool) *fakeMooncake {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMooncake{ln: ln, v2: v2, mem: make([]byte, 1<<16), base: base,
		headers: make(chan []byte, 64), stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	t.Cleanup(func() { close(f.stop); ln.Close(); <-f.done })
	return f
}

func (f *fakeMooncake) run() {
	defer close(f.done)
	c, err := f.ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	go func() {
		select {
		case <-f.stop:
			c.Close()
		case <-f.done:
		}
	}()
	var st [StatusSize]byte
	PutStatus(st[:], StatusOK)
	for {
		hdr := make([]byte, HeaderSize)
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		f.headers <- hdr
		h, err := ParseHeader(hdr)
		if err != nil {
			return
		}
		buf := f.mem[h.Addr-f.base : h.Addr-f.base+h.Size]
		if h.Write {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if f.v2 {
				c.Write(st[:])
			}
		} else {
			if f.v2 {
				c.Write(st[:])
			}
			c.Write(buf)
		}
	}
}

func (f *fakeMooncake) desc(version int) *metadata.SegmentDesc {
	port := f.ln.Addr().(*net.TCPAddr).Port
	name := "127.0.0.1:16572"
	return &metadata.SegmentDesc{
		Name: name, Protocol: "tcp", TCPDataPort: port, TCPProtoVersion: version,
		Buffers: []metadata.BufferDesc{{Addr: f.base, Length: 1 << 30, Name: name}},
	}
}

// TestClientSendsMooncakeBytes checks the client's headers against the
// captured ones and that it follows the status/data order of each version.
func TestClientSendsMooncakeBytes(t *testing.T) {
	cases := []struct {
		name          string
		base          uint64
		version       int
		opts          []Option
		v2            bool
		writeH, readH string
	}{
		{"v2", fixtureBaseA, 2, nil, true, "tcp-write-header.bin", "tcp-read-header.bin"},
		{"MC_TCP_PROTO=1", fixtureBaseB, 2, []Option{WithProtoVersion(1)}, false, "tcp-v1-write-header.bin", "tcp-v1-read-header.bin"},
		{"peer without tcp_proto_version", fixtureBaseB, 0, nil, false, "tcp-v1-write-header.bin", "tcp-v1-read-header.bin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newNode(t, 8192, append([]Option{WithLanes(1)}, tc.opts...)...)
			f := newFakeMooncake(t, tc.base, tc.v2)
			d := f.desc(tc.version)
			seg := transport.NewSegment(1, d.Name, d)
			fill(a.mem[:4096], 3)
			w := newTask(a, seg, transport.Write, 0, 0, 4096)
			a.t.Submit([]*transport.Task{w})
			wait(t, 10*time.Second, w)
			if w.Err() != nil {
				t.Fatal(w.Err())
			}
			if got, want := <-f.headers, fixture(t, tc.writeH); !bytes.Equal(got, want) {
				t.Fatalf("WRITE header % x, fixture % x", got, want)
			}
			r := newTask(a, seg, transport.Read, 4096, 0, 4096)
			a.t.Submit([]*transport.Task{r})
			wait(t, 10*time.Second, r)
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if got, want := <-f.headers, fixture(t, tc.readH); !bytes.Equal(got, want) {
				t.Fatalf("READ header % x, fixture % x", got, want)
			}
			if !bytes.Equal(a.mem[4096:], a.mem[:4096]) {
				t.Fatal("READ did not return the bytes written")
			}
		})
	}
}
