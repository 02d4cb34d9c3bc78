package owner_test

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/owner"
	"github.com/ferrylabs/ferry/tcp"
)

// A requester that is still reading a slot over TCP when the lease and
// its grace period have run out keeps the slot: the owner frees it only
// once no peer's request is moving bytes from it.
func TestExpiredSlotNotReusedWhileBeingRead(t *testing.T) {
	f := newFixture(t, 64<<20)
	f.cfg.GCTTL = 50 * time.Millisecond
	f.cfg.GCInterval = 10 * time.Millisecond
	obj := bytes.Repeat([]byte("slot"), 10<<20) // 40 MiB: far more than socket buffers hold
	f.seed("default", map[string][]byte{"big": obj})
	eng := newEngine(t)
	w := f.start(func(o *owner.Options) { o.Engine = eng; o.LeaseGrace = 50 * time.Millisecond })
	b, err := w.GetObjects(f.ctx, "default", [][]byte{[]byte("big")}, []int64{int64(len(obj))})
	if err != nil {
		t.Fatal(err)
	}
	// A peer asks for the slot and reads nothing of the answer.
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(eng.LocalDesc().TCPDataPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var h [tcp.HeaderSize]byte
	tcp.PutHeader(h[:], tcp.Header{Size: uint64(len(obj)), Addr: b.Addrs[0], V2: true})
	if _, err := c.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Arena().DeferredExpirations() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the lease was never held back (leases %d, expired %d)", w.Arena().Leases(), w.Arena().Expirations())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if w.Arena().Leases() != 1 || w.Arena().Expirations() != 0 {
		t.Fatalf("slot freed while being read: leases %d, expired %d", w.Arena().Leases(), w.Arena().Expirations())
	}
	c.Close()
	for w.Arena().Leases() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the lease was not freed after the reader went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
