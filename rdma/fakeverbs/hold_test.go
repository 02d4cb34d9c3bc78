package fakeverbs

import (
	"bytes"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// A held work request is not flushed by ERR: it still writes memory and
// completes when due; the request behind it is flushed at once.
func TestHoldNextSurvivesError(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	fill(a.mem[:4096], 5)
	a.nic.HoldNext(1, 80*time.Millisecond)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 4096), wr(a, b, 2, verbs.OpWrite, 0, 8192, 8)}); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.WRID != 2 || c.Status != verbs.StatusSuccess {
		t.Fatalf("unheld request: %+v", c)
	}
	if err := a.qp.ToError(); err != nil {
		t.Fatal(err)
	}
	expectNone(t, a.cq, 30*time.Millisecond)
	if s := a.nic.Stats(); s.BytesWritten != 8 {
		t.Fatalf("held request ran before its time: %+v", s)
	}
	if c := pollN(t, a.cq, 1)[0]; c.WRID != 1 || c.Status != verbs.StatusSuccess {
		t.Fatalf("held request: %+v", c)
	}
	if !bytes.Equal(b.mem[:4096], a.mem[:4096]) {
		t.Fatal("held request did not write after its QP entered ERR")
	}
}

// Destroying the QP discards a held request: it never runs.
func TestHoldNextDiscardedByClose(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	fill(a.mem[:4096], 5)
	a.nic.HoldNext(1, 30*time.Millisecond)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 4096)}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	if s := a.nic.Stats(); s.WorkRequests != 0 || !bytes.Equal(b.mem[:4096], make([]byte, 4096)) {
		t.Fatalf("discarded request ran: %+v", s)
	}
}

// Instant mode completes inside PostRW and moves no byte.
func TestInstantMode(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	fill(a.mem[:4096], 5)
	a.nic.SetInstant(true)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 7, verbs.OpWrite, 0, 0, 4096)}); err != nil {
		t.Fatal(err)
	}
	var cs [4]verbs.Completion
	n, err := a.cq.Poll(cs[:])
	if err != nil || n != 1 || cs[0].WRID != 7 || cs[0].Status != verbs.StatusSuccess {
		t.Fatalf("Poll right after PostRW = %d, %v, %+v", n, err, cs[0])
	}
	if !bytes.Equal(b.mem[:4096], make([]byte, 4096)) {
		t.Fatal("instant mode moved bytes")
	}
	a.nic.SetInstant(false)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 8, verbs.OpWrite, 0, 0, 4096)}); err != nil {
		t.Fatal(err)
	}
	pollN(t, a.cq, 1)
	if !bytes.Equal(b.mem[:4096], a.mem[:4096]) {
		t.Fatal("normal mode did not move bytes")
	}
}
