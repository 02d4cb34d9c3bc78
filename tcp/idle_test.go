package tcp

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

func (n *node) peerCount() int {
	n.t.mu.RLock()
	defer n.t.mu.RUnlock()
	return len(n.t.peers)
}

func (n *node) serverConns() int {
	n.t.srv.mu.Lock()
	defer n.t.srv.mu.Unlock()
	return len(n.t.srv.conns)
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A peer left idle is dropped: its connections close on both sides. The
// next request makes a new peer and works.
func TestIdlePeerIsDropped(t *testing.T) {
	a := newNode(t, 1<<20, WithIdleTimeout(100*time.Millisecond))
	b := newNode(t, 1<<20)
	seg := b.segment()
	fill(a.mem[:65536], 3)
	tk := newTask(a, seg, transport.Write, 0, 0, 65536)
	submitWait(t, a, tk)
	if tk.Err() != nil {
		t.Fatal(tk.Err())
	}
	if a.peerCount() != 1 || b.serverConns() == 0 {
		t.Fatalf("after a transfer: %d peers, %d server connections", a.peerCount(), b.serverConns())
	}
	waitFor(t, "the idle peer is dropped", func() bool { return a.peerCount() == 0 })
	waitFor(t, "the peer's connections are closed", func() bool { return b.serverConns() == 0 })

	fill(b.mem[65536:131072], 9)
	b.fence()
	tk = newTask(a, seg, transport.Read, 65536, 65536, 65536)
	submitWait(t, a, tk)
	if tk.Err() != nil || !bytes.Equal(a.mem[65536:131072], b.mem[65536:131072]) {
		t.Fatalf("request after the drop: %v", tk.Err())
	}
}

// A peer with a request outstanding is busy, however long the request
// waits: it is not dropped under it.
func TestBusyPeerIsNotDropped(t *testing.T) {
	a := newNode(t, 1<<20, WithIdleTimeout(40*time.Millisecond), WithStatusTimeout(time.Second))
	seg := silentSegment(silentPeer(t))
	tk := newTask(a, seg, transport.Read, 0, 0, 4096)
	if err := a.t.Submit([]*transport.Task{tk}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // ten idle timeouts
	if a.peerCount() != 1 {
		t.Fatal("a peer with a request outstanding was dropped")
	}
	wait(t, 10*time.Second, tk)
	if !errors.Is(tk.Err(), transport.ErrPeerUnreachable) {
		t.Fatalf("the outstanding request ended with %v, want the silent peer's timeout", tk.Err())
	}
}
