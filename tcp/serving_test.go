package tcp

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// Serving reports the memory a connection is reading from while it is
// blocked sending a large READ to a peer that does not read, and only
// that memory; it clears when the connection ends.
func TestServingReportsTheRangeInUse(t *testing.T) {
	const size = 64 << 20
	b := newNode(t, size, WithStatusTimeout(20*time.Second))
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.t.Port())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A v2 READ of the upper 48 MiB: far more than the socket buffers
	// hold, so the server stays inside the copy until the peer reads.
	from := b.addr + 16<<20
	var h [HeaderSize]byte
	PutHeader(h[:], Header{Size: 48 << 20, Addr: from, V2: true})
	if _, err := c.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !b.t.Serving(from+40<<20, 4096) {
		if time.Now().After(deadline) {
			t.Fatal("Serving never reported the range being read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b.t.Serving(b.addr, 16<<20) {
		t.Fatal("Serving reports memory below the request")
	}
	if b.t.Serving(from+48<<20, 1) || !b.t.Serving(from+48<<20-1, 1) || !b.t.Serving(b.addr, 16<<20+1) {
		t.Fatal("Serving's range edges are off")
	}
	c.Close()
	for b.t.Serving(from, 48<<20) {
		if time.Now().After(deadline) {
			t.Fatal("Serving still true after the peer closed the connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
