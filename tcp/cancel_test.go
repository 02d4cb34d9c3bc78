package tcp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/transport"
)

// stallPeer is a scripted v2 data port. It serves READs with data from
// pattern and records WRITEs; the first request larger than stallAt
// stops after stallAt payload bytes until gate is opened.
type stallPeer struct {
	ln      *net.TCPListener
	stallAt int
	stalled chan struct{}
	gate    chan struct{}
	open    sync.Once

	mu     sync.Mutex
	writes map[uint64][]byte
}

func pattern(addr uint64, n int) []byte {
	b := make([]byte, n)
	fill(b, byte(addr>>12))
	return b
}

func newStallPeer(t *testing.T, stallAt int) *stallPeer {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &stallPeer{ln: ln, stallAt: stallAt, stalled: make(chan struct{}), gate: make(chan struct{}),
		writes: make(map[uint64][]byte)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			c.(*net.TCPConn).SetReadBuffer(64 << 10)
			conns = append(conns, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c)
			}()
		}
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	t.Cleanup(func() { p.release(); ln.Close(); <-done })
	return p
}

func (p *stallPeer) release() { p.open.Do(func() { close(p.gate) }) }

func (p *stallPeer) serve(c net.Conn) {
	var hdr [HeaderSize]byte
	var st [StatusSize]byte
	PutStatus(st[:], StatusOK)
	stall := true
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		h, err := ParseHeader(hdr[:])
		if err != nil {
			return
		}
		n := int(h.Size)
		cut := n
		if stall && n > p.stallAt {
			cut, stall = p.stallAt, false
		}
		if h.Write {
			buf := make([]byte, n)
			if _, err := io.ReadFull(c, buf[:cut]); err != nil {
				return
			}
			if cut < n {
				close(p.stalled)
				<-p.gate
				if _, err := io.ReadFull(c, buf[cut:]); err != nil {
					return
				}
			}
			p.mu.Lock()
			p.writes[h.Addr] = buf
			p.mu.Unlock()
			if _, err := c.Write(st[:]); err != nil {
				return
			}
			continue
		}
		data := pattern(h.Addr, n)
		if _, err := c.Write(append(st[:], data[:cut]...)); err != nil {
			return
		}
		if cut < n {
			close(p.stalled)
			<-p.gate
			if _, err := c.Write(data[cut:]); err != nil {
				return
			}
		}
	}
}

func (p *stallPeer) written(addr uint64) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes[addr]
}

func (p *stallPeer) segment() *transport.Segment {
	d := &metadata.SegmentDesc{Name: "127.0.0.1:1", TCPDataPort: p.ln.Addr().(*net.TCPAddr).Port, TCPProtoVersion: 2,
		Buffers: []metadata.BufferDesc{{Addr: 1 << 30, Length: 1 << 30, Name: "127.0.0.1:1"}}}
	return transport.NewSegment(1, d.Name, d)
}

const (
	bigPiece     = 16 << 20
	stallAt      = 1 << 20
	cancelBound  = 2 * time.Second // well under the status timeout
	cancelStatus = 20 * time.Second
)

// cancelNode is a one-lane node whose chunk size keeps the big task in
// one piece, so that the unrelated task shares its connection.
func cancelNode(t *testing.T) *node {
	return newNode(t, bigPiece+64<<10, WithLanes(1), WithChunkSize(bigPiece), WithStatusTimeout(cancelStatus))
}

func cancelWithin(t *testing.T, a *node, tasks ...*transport.Task) {
	t.Helper()
	start := time.Now()
	a.t.Cancel(tasks)
	if d := time.Since(start); d > cancelBound {
		t.Fatalf("Cancel took %v", d)
	}
	for _, tk := range tasks {
		if tk.State() != transport.StateFailed || !errors.Is(tk.Err(), transport.ErrCanceled) {
			t.Fatalf("cancelled task: state %d err %v", tk.State(), tk.Err())
		}
	}
}

func TestCancelReadStalledMidPayload(t *testing.T) {
	a := cancelNode(t)
	p := newStallPeer(t, stallAt)
	seg := p.segment()
	const sentinel = 0x5A
	big := newTask(a, seg, transport.Read, 0, 0, bigPiece)
	other := newTask(a, seg, transport.Read, bigPiece, 64<<20, 4096)
	for i := range a.mem {
		a.mem[i] = sentinel
	}
	if err := a.t.Submit([]*transport.Task{big, other}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("peer never got the read")
	}
	time.Sleep(50 * time.Millisecond) // let the reader take in the first MiB
	cancelWithin(t, a, big)
	// The buffer is the caller's again: fill it, then let the peer send
	// the rest of the cancelled payload.
	for i := range big.Local {
		big.Local[i] = sentinel
	}
	p.release()
	wait(t, 10*time.Second, other)
	if other.Err() != nil {
		t.Fatalf("unrelated read on the same lane: %v", other.Err())
	}
	if !bytes.Equal(other.Local, pattern(other.TargetAddr, 4096)) {
		t.Fatal("unrelated read got the wrong bytes")
	}
	if !bytes.Equal(big.Local, bytes.Repeat([]byte{sentinel}, bigPiece)) {
		t.Fatal("the cancelled read wrote into its buffer after Cancel returned")
	}
	// The lane is still in sync for later requests.
	again := newTask(a, seg, transport.Read, 0, 128<<20, 8192)
	submitWait(t, a, again)
	if again.Err() != nil || !bytes.Equal(again.Local, pattern(again.TargetAddr, 8192)) {
		t.Fatalf("read after cancel: %v", again.Err())
	}
}

func TestCancelWriteStalledMidPayload(t *testing.T) {
	a := cancelNode(t)
	p := newStallPeer(t, stallAt)
	seg := p.segment()
	fill(a.mem, 3)
	orig := append([]byte(nil), a.mem[:bigPiece]...)
	big := newTask(a, seg, transport.Write, 0, 0, bigPiece)
	other := newTask(a, seg, transport.Write, bigPiece, 64<<20, 4096)
	if err := a.t.Submit([]*transport.Task{big, other}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("peer never got the write")
	}
	time.Sleep(50 * time.Millisecond) // let the writer block on a full socket
	cancelWithin(t, a, big)
	for i := range big.Local {
		big.Local[i] = 0xEE
	}
	p.release()
	wait(t, 10*time.Second, other)
	if other.Err() != nil {
		t.Fatalf("unrelated write on the same lane: %v", other.Err())
	}
	if got := p.written(other.TargetAddr); !bytes.Equal(got, a.mem[bigPiece:bigPiece+4096]) {
		t.Fatal("unrelated write delivered the wrong bytes")
	}
	// The cancelled payload reached the peer (its header was out) as the
	// original bytes up to the cancel point and zeros after it.
	deadline := time.Now().Add(10 * time.Second)
	var got []byte
	for got == nil && time.Now().Before(deadline) {
		got = p.written(big.TargetAddr)
		time.Sleep(time.Millisecond)
	}
	if len(got) != bigPiece {
		t.Fatalf("peer got %d bytes of the cancelled write", len(got))
	}
	zeros := 0
	for i := range got {
		switch got[i] {
		case orig[i]:
		case 0:
			zeros++
		default:
			t.Fatalf("byte %d of the cancelled write is %#x: written after Cancel returned", i, got[i])
		}
	}
	t.Logf("%d of %d payload bytes replaced by zeros", zeros, bigPiece)
}

// Cancelling queued pieces drops them without a byte on the wire, and a
// task waiting for a descriptor refetch is dropped too.
func TestCancelQueuedAndRefreshing(t *testing.T) {
	a := cancelNode(t)
	p := newStallPeer(t, stallAt)
	seg := p.segment()
	big := newTask(a, seg, transport.Read, 0, 0, bigPiece)
	if err := a.t.Submit([]*transport.Task{big}); err != nil {
		t.Fatal(err)
	}
	<-p.stalled
	// Behind the stalled big read, the byte budget holds these in the queue.
	var queued []*transport.Task
	for i := range 4 {
		queued = append(queued, newTask(a, seg, transport.Write, bigPiece+uint64(i)*4096, 256<<20+uint64(i)*4096, 4096))
	}
	refresh := make(chan struct{})
	a.host.refreshDesc = func() *metadata.SegmentDesc { <-refresh; return seg.Desc() }
	far := newTask(a, seg, transport.Write, bigPiece, 4<<30, 16) // outside the descriptor: refetch first
	if err := a.t.Submit(append(queued, far)); err != nil {
		t.Fatal(err)
	}
	cancelWithin(t, a, append(queued, far)...)
	close(refresh)
	cancelWithin(t, a, big)
	p.release()
	again := newTask(a, seg, transport.Write, bigPiece, 512<<20, 4096)
	submitWait(t, a, again)
	if again.Err() != nil {
		t.Fatal(again.Err())
	}
	for _, tk := range queued {
		if p.written(tk.TargetAddr) != nil {
			t.Fatalf("cancelled queued write at %#x reached the peer", tk.TargetAddr)
		}
	}
}
