package engine

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// A Transfer whose ctx ends while the transport delays the copy returns
// ErrContext, and the copy never lands afterwards.
func TestTransferCancelsOnContextEnd(t *testing.T) {
	a, b, seg, net := pair(t)
	local, remote := make([]byte, 4096), make([]byte, 4096)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	fill(remote, 3)
	const sentinel = 0xA5
	for i := range local {
		local[i] = sentinel
	}
	const delay = 200 * time.Millisecond
	net.Lookup("fake", a.Name()).SetDelay(delay)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := a.Transfer(ctx, []Request{{Op: transport.Read, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 4096}})
	if !errors.Is(err, ErrContext) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Transfer = %v, want ErrContext and DeadlineExceeded", err)
	}
	time.Sleep(2 * delay) // past the point where the copy would have run
	if !bytes.Equal(local, bytes.Repeat([]byte{sentinel}, len(local))) {
		t.Fatal("a cancelled read wrote into the local buffer after Transfer returned")
	}
	// The engine still works.
	net.Lookup("fake", a.Name()).SetDelay(0)
	if err := a.Transfer(ctxT(t), []Request{{Op: transport.Read, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 4096}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(local, remote) {
		t.Fatal("read after cancel: bytes differ")
	}
}

func TestBatchCancel(t *testing.T) {
	a, b, seg, net := pair(t)
	local, remote := make([]byte, 4096), make([]byte, 4096)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	fill(local, 9)
	net.Lookup("fake", a.Name()).SetDelay(time.Hour)
	bt, err := a.AllocateBatch(4)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{
		{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 2048},
		{Op: transport.Write, Local: Addr(local[2048:]), Target: seg, TargetAddr: Addr(remote[2048:]), Length: 2048},
		{Op: transport.Write, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 0},
	}
	if err := bt.Submit(reqs); err != nil {
		t.Fatal(err)
	}
	if err := bt.Free(); !errors.Is(err, ErrBatchBusy) {
		t.Fatalf("Free before Cancel = %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bt.Cancel()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Cancel did not return while the transport delays by an hour")
	}
	for i := range 2 {
		st, _ := bt.Status(i)
		if st.State != Canceled || !errors.Is(st.Err, transport.ErrCanceled) || Code(st.Err) != ErrContext.Code() {
			t.Fatalf("request %d after Cancel: %+v", i, st)
		}
	}
	if st, _ := bt.Status(2); st.State != Completed {
		t.Fatalf("zero-length request: %v", st.State)
	}
	if st := bt.BatchStatus(); st.State != Canceled || !errors.Is(st.Err, transport.ErrCanceled) {
		t.Fatalf("BatchStatus = %+v", st)
	}
	if err := bt.Wait(ctxT(t)); !errors.Is(err, transport.ErrCanceled) {
		t.Fatalf("Wait after Cancel = %v", err)
	}
	if !bytes.Equal(remote, make([]byte, len(remote))) {
		t.Fatal("a cancelled write reached the remote buffer")
	}
	bt.Cancel() // nothing in flight: no-op
	if err := bt.Reset(); err != nil {
		t.Fatalf("Reset after Cancel: %v", err)
	}
	net.Lookup("fake", a.Name()).SetDelay(0)
	if err := bt.Submit(reqs[:2]); err != nil {
		t.Fatal(err)
	}
	if err := bt.Wait(ctxT(t)); err != nil || !bytes.Equal(remote, local) {
		t.Fatalf("batch reused after Cancel: %v", err)
	}
	if err := bt.Free(); err != nil {
		t.Fatal(err)
	}
	bt.Cancel() // freed: no-op
}

// Cancel with failover configured: a cancelled request is not retried
// on the second transport.
func TestBatchCancelNoFailover(t *testing.T) {
	a, b, seg, net := failoverPair(t, nil)
	local, remote := make([]byte, 512), make([]byte, 512)
	mustRegister(t, a, local)
	mustRegister(t, b, remote)
	fa, fb := net.Lookup("fa", a.Name()), net.Lookup("fb", a.Name())
	fa.SetDelay(time.Hour)
	fb.SetDelay(time.Hour)
	bt, _ := a.AllocateBatch(1)
	if err := bt.Submit([]Request{{Op: transport.Read, Local: Addr(local), Target: seg, TargetAddr: Addr(remote), Length: 512}}); err != nil {
		t.Fatal(err)
	}
	before := fa.Submitted() + fb.Submitted()
	bt.Cancel()
	if st, _ := bt.Status(0); st.State != Canceled {
		t.Fatalf("state %v err %v", st.State, st.Err)
	}
	if after := fa.Submitted() + fb.Submitted(); after != before {
		t.Fatalf("cancelled request was resubmitted (%d -> %d)", before, after)
	}
	if err := bt.Free(); err != nil {
		t.Fatal(err)
	}
}
