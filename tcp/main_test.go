package tcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHost is a minimal transport.Host: the tests hand descriptors to the
// transports directly, and Refresh installs whatever refreshDesc returns.
type testHost struct {
	mu          sync.Mutex
	refreshDesc func() *metadata.SegmentDesc
	refreshes   int
}

func (h *testHost) LocalName() string { return "127.0.0.1:1" }
func (h *testHost) LocalHost() string { return "127.0.0.1" }
func (h *testHost) Call(context.Context, string, metadata.FrameType, []byte) ([]byte, error) {
	return nil, errors.New("testHost: no handshake daemon")
}
func (h *testHost) Refresh(_ context.Context, seg *transport.Segment) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshes++
	if h.refreshDesc == nil {
		return errors.New("testHost: no descriptor source")
	}
	seg.SetDesc(h.refreshDesc())
	return nil
}
func (h *testHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// node is a transport with one registered region.
type node struct {
	t    *Transport
	host *testHost
	mem  []byte
	addr uint64
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

func newNode(tb testing.TB, size int, opts ...Option) *node {
	tb.Helper()
	h := &testHost{}
	opts = append([]Option{WithListenHost("127.0.0.1"), WithStatusTimeout(2 * time.Second)}, opts...)
	tr, err := New(h, opts...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { tr.Close() })
	mem := make([]byte, size)
	n := &node{t: tr, host: h, mem: mem, addr: addrOf(mem)}
	if err := tr.Register(transport.Region{Mem: mem, Addr: n.addr, Location: "cpu:0", RemoteAccessible: true}); err != nil {
		tb.Fatalf("Register: %v", err)
	}
	return n
}

// desc is the descriptor n would publish.
func (n *node) desc() *metadata.SegmentDesc {
	name := "127.0.0.1:" + strconv.Itoa(n.t.Port())
	d := &metadata.SegmentDesc{
		Name:     name,
		Protocol: "tcp",
		Buffers:  []metadata.BufferDesc{{Addr: n.addr, Length: uint64(len(n.mem)), Name: name}},
	}
	n.t.Describe(d)
	return d
}

func (n *node) segment() *transport.Segment {
	d := n.desc()
	return transport.NewSegment(1, d.Name, d)
}

// newTask builds a task moving local[loff:loff+size] to or from the
// target at toff.
func newTask(from *node, seg *transport.Segment, op transport.Opcode, loff, toff uint64, size int) *transport.Task {
	tk := &transport.Task{
		Op:         op,
		Local:      from.mem[loff : loff+uint64(size) : loff+uint64(size)],
		LocalAddr:  from.addr + loff,
		Target:     seg,
		TargetAddr: seg.Desc().Buffers[0].Addr + toff,
	}
	tk.Reset(nil)
	return tk
}

// wait polls the tasks until each has finished or the deadline passes.
func wait(tb testing.TB, d time.Duration, tasks ...*transport.Task) {
	tb.Helper()
	end := time.Now().Add(d)
	for _, tk := range tasks {
		for tk.State() == transport.StateWaiting {
			if time.Now().After(end) {
				tb.Fatalf("task did not finish within %v", d)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7+i>>8) ^ seed
	}
}

// fence orders the test's accesses to n.mem with those of n's server
// goroutines, which the race detector cannot see through the socket: the
// server holds memMu read-locked while it touches registered memory.
func (n *node) fence() {
	n.t.memMu.Lock()
	n.t.memMu.Unlock() //nolint:staticcheck // an ordering point, nothing to protect
}
