package fakeverbs

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
	"golang.org/x/sys/unix"
)

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

func TestWriteAndRead(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	fill(a.mem[:65536], 1)
	fill(b.mem[65536:131072], 99)
	n, err := a.qp.PostRW([]verbs.WorkRequest{
		wr(a, b, 1, verbs.OpWrite, 0, 4096, 65536),
		wr(a, b, 2, verbs.OpRead, 200000, 65536, 65536),
	})
	if n != 2 || err != nil {
		t.Fatalf("PostRW = %d, %v", n, err)
	}
	cs := pollN(t, a.cq, 2)
	for i, c := range cs {
		if c.Status != verbs.StatusSuccess || c.WRID != uint64(i+1) || c.ByteLen != 65536 || c.QPNum != a.qp.Num() {
			t.Fatalf("completion %d = %+v", i, c)
		}
	}
	if cs[0].Opcode != verbs.WCRDMAWrite || cs[1].Opcode != verbs.WCRDMARead {
		t.Fatalf("opcodes %v %v", cs[0].Opcode, cs[1].Opcode)
	}
	if !bytes.Equal(b.mem[4096:4096+65536], a.mem[:65536]) {
		t.Fatal("WRITE did not copy local bytes to the remote MR")
	}
	if !bytes.Equal(a.mem[200000:200000+65536], b.mem[65536:131072]) {
		t.Fatal("READ did not copy remote bytes to the local MR")
	}
	if s := a.nic.Stats(); s.BytesWritten != 65536 || s.BytesRead != 65536 || s.WorkRequests != 2 || s.Errors != 0 {
		t.Fatalf("stats %+v", s)
	}
	if s := b.nic.Stats(); s.WorkRequests != 0 || s.BytesRead != 0 || s.ServedRead != 65536 || s.ServedWritten != 65536 {
		t.Fatalf("responder stats %+v", s)
	}
}

func TestStateMachine(t *testing.T) {
	_, a, b := ends(t, endOpts{}, endOpts{})
	w := []verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8)}
	post := func(want verbs.QPState) {
		t.Helper()
		if s := state(t, a.qp); s != want {
			t.Fatalf("state %v, want %v", s, want)
		}
		if n, err := a.qp.PostRW(w); n != 0 || !errors.Is(err, verbs.ErrQPState) {
			t.Fatalf("PostRW in %v = %d, %v; want ErrQPState", want, n, err)
		}
	}
	post(verbs.QPStateReset)
	if err := a.qp.ToRTR(verbs.DefaultRTRAttr()); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("RESET->RTR = %v; want ErrQPState", err)
	}
	if err := a.qp.ToRTS(verbs.DefaultRTSAttr()); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("RESET->RTS = %v; want ErrQPState", err)
	}
	if err := a.qp.ToInit(verbs.InitAttr{Port: 2}); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("INIT on port 2 = %v", err)
	}
	if err := a.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.QPAccessDefault}); err != nil {
		t.Fatal(err)
	}
	post(verbs.QPStateInit)
	rtr := verbs.DefaultRTRAttr()
	rtr.DestQPNum, rtr.DGID, rtr.SGIDIndex = b.qp.Num(), b.nic.Config().GIDs[3].GID, 9
	if err := a.qp.ToRTR(rtr); !errors.Is(err, verbs.ErrQPState) || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("RTR with a bad source GID index = %v; want ErrQPState and EINVAL", err)
	}
	rtr.SGIDIndex = 3
	if err := a.qp.ToRTR(rtr); err != nil {
		t.Fatal(err)
	}
	post(verbs.QPStateRTR)
	bad := verbs.DefaultRTSAttr()
	bad.RetryCount = 8
	if err := a.qp.ToRTS(bad); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("RTS with retry 8 = %v", err)
	}
	if err := a.qp.ToRTS(verbs.DefaultRTSAttr()); err != nil {
		t.Fatal(err)
	}
	if s := state(t, a.qp); s != verbs.QPStateRTS {
		t.Fatalf("state %v", s)
	}
	if err := a.qp.ToError(); err != nil {
		t.Fatal(err)
	}
	// Posting in ERR is accepted and flushed, as with verbs.
	if n, err := a.qp.PostRW(w); n != 1 || err != nil {
		t.Fatalf("PostRW in ERR = %d, %v", n, err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.Status != verbs.StatusWRFlushErr || c.WRID != 1 {
		t.Fatalf("completion in ERR %+v", c)
	}
	if err := a.qp.ToReset(); err != nil {
		t.Fatal(err)
	}
	post(verbs.QPStateReset)
	// b is still in RESET: a's request gets no response.
	if err := b.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.QPAccessDefault}); err != nil {
		t.Fatal(err)
	}
	reconnect(t, a, b)
	if n, err := a.qp.PostRW(w); n != 1 || err != nil {
		t.Fatalf("PostRW after reconnect = %d, %v", n, err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.Status != verbs.StatusSuccess {
		t.Fatalf("completion after reconnect %+v", c)
	}
}

func TestBadRequestsRejectedAtPost(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	ws := []verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8), wr(a, b, 2, verbs.OpInvalid, 0, 0, 8)}
	n, err := a.qp.PostRW(ws)
	if n != 1 || !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("PostRW = %d, %v; want 1, ErrInvalidArgument", n, err)
	}
	ws[1].Op, ws[1].Length = verbs.OpRead, 0
	if n, err = a.qp.PostRW(ws[1:]); n != 0 || !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("zero length PostRW = %d, %v", n, err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.WRID != 1 || c.Status != verbs.StatusSuccess {
		t.Fatalf("%+v", c)
	}
}

func TestBoundsAndAccess(t *testing.T) {
	f, a, b := pair(t, endOpts{}, endOpts{})
	_ = f
	roMem := make([]byte, 4096)
	ro, err := b.pd.RegMR(roMem, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	noLWMem := make([]byte, 4096)
	noLW, err := a.pd.RegMR(noLWMem, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer noLW.Close()
	size := uint64(len(a.mem))
	cases := []struct {
		name string
		w    verbs.WorkRequest
		want verbs.Status
	}{
		{"local past end", wr(a, b, 1, verbs.OpWrite, size-4, 0, 8), verbs.StatusLocProtErr},
		{"local before start", func() verbs.WorkRequest { w := wr(a, b, 1, verbs.OpWrite, 0, 0, 8); w.LocalAddr--; return w }(), verbs.StatusLocProtErr},
		{"bad lkey", func() verbs.WorkRequest { w := wr(a, b, 1, verbs.OpWrite, 0, 0, 8); w.LKey = b.mr.LKey(); return w }(), verbs.StatusLocProtErr},
		{"remote past end", wr(a, b, 1, verbs.OpRead, 0, size-1, 2), verbs.StatusRemAccessErr},
		{"remote huge offset", wr(a, b, 1, verbs.OpRead, 0, 1<<62, 2), verbs.StatusRemAccessErr},
		{"bad rkey", func() verbs.WorkRequest { w := wr(a, b, 1, verbs.OpWrite, 0, 0, 8); w.RKey = a.mr.RKey(); return w }(), verbs.StatusRemAccessErr},
		{"write to read-only MR", verbs.WorkRequest{WRID: 1, Op: verbs.OpWrite, LocalAddr: a.mr.Addr(), Length: 8, LKey: a.mr.LKey(), RemoteAddr: ro.Addr(), RKey: ro.RKey()}, verbs.StatusRemAccessErr},
		{"read into MR without LOCAL_WRITE", verbs.WorkRequest{WRID: 1, Op: verbs.OpRead, LocalAddr: noLW.Addr(), Length: 8, LKey: noLW.LKey(), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}, verbs.StatusLocProtErr},
	}
	for _, c := range cases {
		fill(b.mem[:16], 5)
		before := append([]byte(nil), b.mem...)
		if n, err := a.qp.PostRW([]verbs.WorkRequest{c.w, wr(a, b, 2, verbs.OpWrite, 0, 0, 8)}); n != 2 || err != nil {
			t.Fatalf("%s: PostRW = %d, %v", c.name, n, err)
		}
		cs := pollN(t, a.cq, 2)
		if cs[0].Status != c.want || cs[1].Status != verbs.StatusWRFlushErr {
			t.Fatalf("%s: statuses %v, %v; want %v, WR_FLUSH_ERR", c.name, cs[0].Status, cs[1].Status, c.want)
		}
		if s := state(t, a.qp); s != verbs.QPStateErr {
			t.Fatalf("%s: QP state %v after an error; want ERR", c.name, s)
		}
		if !bytes.Equal(before, b.mem) {
			t.Fatalf("%s: remote memory changed by a rejected request", c.name)
		}
		reconnect(t, a, b)
	}
	// Read-only MR can be read.
	fill(roMem, 3)
	w := verbs.WorkRequest{WRID: 9, Op: verbs.OpRead, LocalAddr: a.mr.Addr(), Length: 4096, LKey: a.mr.LKey(), RemoteAddr: ro.Addr(), RKey: ro.RKey()}
	if _, err := a.qp.PostRW([]verbs.WorkRequest{w}); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.Status != verbs.StatusSuccess || !bytes.Equal(a.mem[:4096], roMem) {
		t.Fatalf("read of read-only MR: %+v", c)
	}
	// A deregistered MR's keys stop working.
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostRW([]verbs.WorkRequest{w}); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.Status != verbs.StatusRemAccessErr {
		t.Fatalf("read of deregistered MR: %+v", c)
	}
}

func TestQPAccessFlagsChecked(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	// Re-init b's QP with remote read only.
	if err := b.qp.ToReset(); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.AccessLocalWrite | verbs.AccessRemoteRead}); err != nil {
		t.Fatal(err)
	}
	rtr := verbs.DefaultRTRAttr()
	rtr.DestQPNum, rtr.DGID, rtr.SGIDIndex = a.qp.Num(), a.nic.Config().GIDs[3].GID, 3
	if err := b.qp.ToRTR(rtr); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpRead, 0, 0, 8), wr(a, b, 2, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	cs := pollN(t, a.cq, 2)
	if cs[0].Status != verbs.StatusSuccess || cs[1].Status != verbs.StatusRemAccessErr {
		t.Fatalf("read then write to a read-only QP: %v, %v", cs[0].Status, cs[1].Status)
	}
}

func TestWrongPeer(t *testing.T) {
	f, a, b := pair(t, endOpts{}, endOpts{})
	pc, _ := f.AddHost(NICConfig{})
	c := newEnd(t, pc, "mlx5_0", endOpts{})
	// a points at c's QP but c is not connected back to a.
	if err := a.qp.ToReset(); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.QPAccessDefault}); err != nil {
		t.Fatal(err)
	}
	if err := c.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.QPAccessDefault}); err != nil {
		t.Fatal(err)
	}
	rtr := verbs.DefaultRTRAttr()
	rtr.DestQPNum, rtr.DGID, rtr.SGIDIndex = c.qp.Num(), c.nic.Config().GIDs[3].GID, 3
	if err := a.qp.ToRTR(rtr); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.ToRTS(verbs.DefaultRTSAttr()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if cs := pollN(t, a.cq, 1); cs[0].Status != verbs.StatusRetryExcErr {
		t.Fatalf("write to an unconnected peer: %v", cs[0].Status)
	}
}

func TestFlushOnErrorInOrder(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	a.nic.SetCompletionDelay(time.Hour)
	ws := make([]verbs.WorkRequest, 10)
	for i := range ws {
		ws[i] = wr(a, b, uint64(100+i), verbs.OpWrite, 0, 0, 8)
	}
	if n, err := a.qp.PostRW(ws); n != 10 || err != nil {
		t.Fatal(n, err)
	}
	expectNone(t, a.cq, 20*time.Millisecond)
	if err := a.qp.ToError(); err != nil {
		t.Fatal(err)
	}
	cs := pollN(t, a.cq, 10)
	for i, c := range cs {
		if c.WRID != uint64(100+i) || c.Status != verbs.StatusWRFlushErr {
			t.Fatalf("flush %d = %+v", i, c)
		}
	}
	if a.nic.Stats().WorkRequests != 0 {
		t.Fatal("flushed requests were executed")
	}
}

func TestMaxSendWR(t *testing.T) {
	_, a, b := pair(t, endOpts{maxWR: 4}, endOpts{})
	a.nic.SetCompletionDelay(30 * time.Millisecond)
	ws := make([]verbs.WorkRequest, 6)
	for i := range ws {
		ws[i] = wr(a, b, uint64(i), verbs.OpWrite, 0, 0, 8)
	}
	n, err := a.qp.PostRW(ws)
	if n != 4 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("PostRW = %d, %v; want 4, ErrQueueFull", n, err)
	}
	pollN(t, a.cq, 4)
	if n, err := a.qp.PostRW(ws[4:]); n != 2 || err != nil {
		t.Fatalf("PostRW after draining = %d, %v", n, err)
	}
	if cs := pollN(t, a.cq, 2); cs[0].WRID != 4 || cs[1].WRID != 5 {
		t.Fatalf("%+v", cs)
	}
}

func TestOrderingManyRequests(t *testing.T) {
	_, a, b := pair(t, endOpts{maxWR: 64, depth: 64}, endOpts{})
	const total = 2000
	next := 0
	got := 0
	buf := make([]verbs.Completion, 16)
	batch := make([]verbs.WorkRequest, 0, 16)
	inflight := 0
	deadline := time.Now().Add(10 * time.Second)
	for got < total {
		batch = batch[:0]
		for next < total && len(batch) < 16 && inflight+len(batch) < 64 {
			op := verbs.OpWrite
			if next%3 == 0 {
				op = verbs.OpRead
			}
			batch = append(batch, wr(a, b, uint64(next), op, uint64(next%100)*64, uint64(next%50)*128, uint32(1+next%4000)))
			next++
		}
		if len(batch) > 0 {
			n, err := a.qp.PostRW(batch)
			if err != nil || n != len(batch) {
				t.Fatalf("PostRW = %d, %v", n, err)
			}
			inflight += n
		}
		n, err := a.cq.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range buf[:n] {
			if c.WRID != uint64(got) || c.Status != verbs.StatusSuccess {
				t.Fatalf("completion %d = %+v", got, c)
			}
			got++
		}
		inflight -= n
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d completions", got, total)
		}
	}
}

func TestFaultRemoteAccessAndRetry(t *testing.T) {
	for _, tc := range []struct {
		fault Fault
		want  verbs.Status
	}{{FaultRemoteAccess, verbs.StatusRemAccessErr}, {FaultRetryExceeded, verbs.StatusRetryExcErr}} {
		_, a, b := pair(t, endOpts{}, endOpts{})
		a.nic.FailNext(tc.fault, 1)
		if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8), wr(a, b, 2, verbs.OpWrite, 0, 0, 8)}); err != nil {
			t.Fatal(err)
		}
		cs := pollN(t, a.cq, 2)
		if cs[0].Status != tc.want || cs[1].Status != verbs.StatusWRFlushErr || state(t, a.qp) != verbs.QPStateErr {
			t.Fatalf("fault %d: %v, %v, %v", tc.fault, cs[0].Status, cs[1].Status, state(t, a.qp))
		}
		if a.nic.Stats().Errors != 1 {
			t.Fatalf("errors %d", a.nic.Stats().Errors)
		}
		// Only one request was failed.
		reconnect(t, a, b)
		if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 3, verbs.OpWrite, 0, 0, 8)}); err != nil {
			t.Fatal(err)
		}
		if c := pollN(t, a.cq, 1)[0]; c.Status != verbs.StatusSuccess {
			t.Fatalf("after fault: %+v", c)
		}
	}
}

func TestFaultLostCompletion(t *testing.T) {
	_, a, b := pair(t, endOpts{maxWR: 2}, endOpts{})
	a.nic.FailNext(FaultLoseCompletion, 1)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8), wr(a, b, 2, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.WRID != 2 || c.Status != verbs.StatusSuccess {
		t.Fatalf("%+v", c)
	}
	expectNone(t, a.cq, 20*time.Millisecond)
	// The lost request still holds a send-queue slot.
	if n, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 3, verbs.OpWrite, 0, 0, 8), wr(a, b, 4, verbs.OpWrite, 0, 0, 8)}); n != 1 || !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("PostRW = %d, %v", n, err)
	}
	pollN(t, a.cq, 1)
	if err := a.qp.ToError(); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.WRID != 1 || c.Status != verbs.StatusWRFlushErr {
		t.Fatalf("lost request flushed as %+v", c)
	}
}

func asyncEvent(t *testing.T, d verbs.Device) verbs.AsyncEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev := make([]verbs.AsyncEvent, 1)
	if n, err := d.AsyncEvents(ctx, ev); n != 1 || err != nil {
		t.Fatalf("AsyncEvents = %d, %v", n, err)
	}
	return ev[0]
}

func TestFaultCQOverrun(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	a.nic.FailNext(FaultCQOverrun, 1)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if ev := asyncEvent(t, a.dev); ev.Type != verbs.EventCQErr {
		t.Fatalf("event %v", ev.Type)
	}
	if _, err := a.cq.Poll(make([]verbs.Completion, 4)); !errors.Is(err, verbs.ErrCQOverrun) {
		t.Fatalf("Poll = %v; want ErrCQOverrun", err)
	}
}

func TestNaturalCQOverrun(t *testing.T) {
	_, a, b := pair(t, endOpts{depth: 4, maxWR: 16}, endOpts{})
	ws := make([]verbs.WorkRequest, 8)
	for i := range ws {
		ws[i] = wr(a, b, uint64(i), verbs.OpWrite, 0, 0, 8)
	}
	if _, err := a.qp.PostRW(ws); err != nil {
		t.Fatal(err)
	}
	if ev := asyncEvent(t, a.dev); ev.Type != verbs.EventCQErr {
		t.Fatalf("event %v", ev.Type)
	}
	if _, err := a.cq.Poll(make([]verbs.Completion, 8)); !errors.Is(err, verbs.ErrCQOverrun) {
		t.Fatalf("Poll = %v; want ErrCQOverrun", err)
	}
}

func TestPortDown(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	b.nic.SetPortState(verbs.PortDown)
	if ev := asyncEvent(t, b.dev); ev.Type != verbs.EventPortErr || ev.Port != 1 {
		t.Fatalf("event %+v", ev)
	}
	if pa, _ := b.dev.QueryPort(1); pa.State != verbs.PortDown {
		t.Fatalf("port state %v", pa.State)
	}
	// a's requests towards the dead port fail, then its QP is in ERR.
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8), wr(a, b, 2, verbs.OpRead, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	cs := pollN(t, a.cq, 2)
	if cs[0].Status != verbs.StatusRetryExcErr || cs[1].Status != verbs.StatusWRFlushErr {
		t.Fatalf("%v %v", cs[0].Status, cs[1].Status)
	}
	// b's own requests fail too.
	if _, err := b.qp.PostRW([]verbs.WorkRequest{wr(b, a, 3, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, b.cq, 1)[0]; c.Status != verbs.StatusRetryExcErr {
		t.Fatalf("%v", c.Status)
	}
	b.nic.SetPortState(verbs.PortActive)
	if ev := asyncEvent(t, b.dev); ev.Type != verbs.EventPortActive {
		t.Fatalf("event %+v", ev)
	}
	reconnect(t, a, b)
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 4, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if c := pollN(t, a.cq, 1)[0]; c.Status != verbs.StatusSuccess {
		t.Fatalf("after port up: %v", c.Status)
	}
}

func TestCompletionDelay(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	a.nic.SetCompletionDelay(50 * time.Millisecond)
	start := time.Now()
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	pollN(t, a.cq, 1)
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("completion after %v; want at least the 50ms delay", el)
	}
}

func TestNotifyFd(t *testing.T) {
	_, a, b := pair(t, endOpts{}, endOpts{})
	readable := func() bool {
		fds := []unix.PollFd{{Fd: int32(a.ch.Fd()), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if readable() {
		t.Fatal("fd readable before any event")
	}
	if _, err := a.ch.GetEvent(); !errors.Is(err, verbs.ErrWouldBlock) {
		t.Fatalf("GetEvent = %v; want ErrWouldBlock", err)
	}
	// An unarmed CQ raises no event.
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 1, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	pollN(t, a.cq, 1)
	if readable() {
		t.Fatal("fd readable for an unarmed CQ")
	}
	if err := a.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	woke := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		woke <- a.ch.Wait(ctx)
	}()
	if _, err := a.qp.PostRW([]verbs.WorkRequest{wr(a, b, 2, verbs.OpWrite, 0, 0, 8), wr(a, b, 3, verbs.OpWrite, 0, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("Wait = %v", err)
	}
	cq, err := a.ch.GetEvent()
	if err != nil || cq != a.cq {
		t.Fatalf("GetEvent = %v, %v", cq, err)
	}
	cq.AckEvents(1)
	if readable() {
		t.Fatal("fd still readable after the only event was taken")
	}
	// One event per arming, not per completion.
	pollN(t, a.cq, 2)
	if _, err := a.ch.GetEvent(); !errors.Is(err, verbs.ErrWouldBlock) {
		t.Fatalf("second GetEvent = %v", err)
	}
	// Cancellation and Close wake a waiter.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.ch.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a deadline = %v", err)
	}
}

func TestCloseRules(t *testing.T) {
	f := NewFabric()
	defer f.Close()
	p, _ := f.AddHost(NICConfig{Name: "a"}, NICConfig{Name: "b", NumaNode: 1})
	devs, _ := p.Devices()
	if len(devs) != 2 || devs[1].Name != "b" || devs[1].NumaNode != 1 {
		t.Fatalf("devices %+v", devs)
	}
	if _, err := p.Open("c"); !errors.Is(err, verbs.ErrDeviceNotFound) {
		t.Fatalf("Open(c) = %v", err)
	}
	d, err := p.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := d.AllocPD()
	mem := make([]byte, 64)
	mr, _ := pd.RegMR(mem, verbs.AccessRemote)
	if _, err := pd.RegMR(nil, verbs.AccessRemote); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("RegMR(empty) = %v", err)
	}
	if _, err := pd.RegMR(mem, verbs.AccessRemoteWrite); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("RegMR(REMOTE_WRITE without LOCAL_WRITE) = %v", err)
	}
	if err := pd.Close(); !errors.Is(err, verbs.ErrBusy) {
		t.Fatalf("PD close with an MR = %v", err)
	}
	if err := d.Close(); !errors.Is(err, verbs.ErrBusy) {
		t.Fatalf("device close with a PD = %v", err)
	}
	for i := 0; i < 2; i++ {
		for _, c := range []interface{ Close() error }{mr, pd, d} {
			if err := c.Close(); err != nil {
				t.Fatalf("close round %d: %v", i, err)
			}
		}
	}
	if _, err := d.AllocPD(); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("AllocPD after Close = %v", err)
	}
	if _, err := d.AsyncEvents(context.Background(), make([]verbs.AsyncEvent, 1)); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("AsyncEvents after Close = %v", err)
	}
}

func TestMultiNICCounters(t *testing.T) {
	f := NewFabric()
	defer f.Close()
	pa, _ := f.AddHost(NICConfig{}, NICConfig{})
	pb, _ := f.AddHost(NICConfig{}, NICConfig{})
	a0, a1 := newEnd(t, pa, "mlx5_0", endOpts{}), newEnd(t, pa, "mlx5_1", endOpts{})
	b0, b1 := newEnd(t, pb, "mlx5_0", endOpts{}), newEnd(t, pb, "mlx5_1", endOpts{})
	connect(t, a0, b0)
	connect(t, a1, b1)
	if _, err := a0.qp.PostRW([]verbs.WorkRequest{wr(a0, b0, 1, verbs.OpWrite, 0, 0, 1000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.qp.PostRW([]verbs.WorkRequest{wr(a1, b1, 1, verbs.OpRead, 0, 0, 3000)}); err != nil {
		t.Fatal(err)
	}
	pollN(t, a0.cq, 1)
	pollN(t, a1.cq, 1)
	if s := a0.nic.Stats(); s.BytesWritten != 1000 || s.BytesRead != 0 {
		t.Fatalf("nic0 %+v", s)
	}
	if s := a1.nic.Stats(); s.BytesRead != 3000 || s.BytesWritten != 0 {
		t.Fatalf("nic1 %+v", s)
	}
	if g0, g1 := a0.nic.Config().GIDs[3].GID, a1.nic.Config().GIDs[3].GID; g0 == g1 || g0.Addr().String() != "10.1.0.1" {
		t.Fatalf("GIDs %v %v", g0.Addr(), g1.Addr())
	}
}

func TestFabricCloseStopsWorkers(t *testing.T) {
	f := NewFabric()
	p, _ := f.AddHost(NICConfig{})
	d, err := p.Open("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	f.Close()
	if _, err := p.Open("mlx5_0"); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Open after fabric Close = %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
