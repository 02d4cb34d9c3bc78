//go:build linux && cgo

package verbs

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestSharedLayout(t *testing.T) {
	wrSize, wcSize, wrLen, wrOp, wcQPN, wcVendor := cLayout()
	var w WorkRequest
	var c Completion
	got := [...]uintptr{unsafe.Sizeof(w), unsafe.Sizeof(c), unsafe.Offsetof(w.Length), unsafe.Offsetof(w.Op),
		unsafe.Offsetof(c.QPNum), unsafe.Offsetof(c.VendorErr)}
	want := [...]uintptr{wrSize, wcSize, wrLen, wrOp, wcQPN, wcVendor}
	if got != want {
		t.Fatalf("Go layout %v, C layout %v", got, want)
	}
}

// mmapBuf returns n bytes of memory outside the Go heap.
func mmapBuf(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

func TestLoopbackPostAndPoll(t *testing.T) {
	lb, err := newLoopback(256, 77)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.free()
	src, dst := mmapBuf(t, 1<<20), mmapBuf(t, 1<<20)
	for i := range src {
		src[i] = byte(i * 13)
	}
	// 100 requests: more than one C-side chain (64), still one cgo call.
	const n, size = 100, 4096
	wrs := make([]WorkRequest, n)
	for i := range wrs {
		op := OpWrite
		if i%2 == 1 {
			op = OpRead
		}
		wrs[i] = WorkRequest{WRID: uint64(1000 + i), Op: op, Length: size,
			LocalAddr: addr(src) + uint64(i*size), RemoteAddr: addr(dst) + uint64(i*size)}
		if op == OpRead {
			// READ pulls dst into src: pre-fill dst for those slots.
			copy(dst[i*size:(i+1)*size], src[i*size:(i+1)*size])
			for j := i * size; j < (i+1)*size; j++ {
				src[j] = 0
			}
		}
	}
	calls := DataPathCalls()
	posted, err := lb.qp.PostRW(wrs)
	if posted != n || err != nil {
		t.Fatalf("PostRW = %d, %v", posted, err)
	}
	if got := DataPathCalls() - calls; got != 1 {
		t.Fatalf("PostRW of %d took %d cgo calls; want 1", n, got)
	}
	if got := lb.postCalls(); got != 2 {
		t.Fatalf("ibv_post_send called %d times for %d WRs; want 2 chains", got, n)
	}
	out := make([]Completion, 128)
	k, err := lb.cq.Poll(out)
	if k != n || err != nil {
		t.Fatalf("Poll = %d, %v", k, err)
	}
	for i, c := range out[:k] {
		wantOp := WCRDMAWrite
		if i%2 == 1 {
			wantOp = WCRDMARead
		}
		if c.WRID != uint64(1000+i) || c.Status != StatusSuccess || c.Opcode != wantOp || c.ByteLen != size || c.QPNum != 77 {
			t.Fatalf("completion %d = %+v", i, c)
		}
	}
	if !bytes.Equal(src[:n*size], dst[:n*size]) {
		t.Fatal("loopback READ/WRITE did not move the bytes")
	}
	if k, err := lb.cq.Poll(out); k != 0 || err != nil {
		t.Fatalf("Poll of an empty CQ = %d, %v", k, err)
	}
	if err := lb.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
}

func TestLoopbackPostErrors(t *testing.T) {
	lb, err := newLoopback(40, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.free()
	buf := mmapBuf(t, 1<<16)
	wrs := make([]WorkRequest, 50)
	for i := range wrs {
		wrs[i] = WorkRequest{WRID: uint64(i), Op: OpWrite, Length: 8, LocalAddr: addr(buf), RemoteAddr: addr(buf) + 1024}
	}
	// The fake send queue holds 40: the C side reports the bad WR index.
	posted, err := lb.qp.PostRW(wrs)
	if posted != 40 || !errors.Is(err, ErrQueueFull) {
		t.Fatalf("PostRW = %d, %v; want 40, ErrQueueFull", posted, err)
	}
	out := make([]Completion, 64)
	if k, _ := lb.cq.Poll(out); k != 40 || out[39].WRID != 39 {
		t.Fatalf("Poll = %d, last %+v", k, out[39])
	}
	// A malformed request is rejected before C, naming its index.
	wrs[3].Op = OpInvalid
	posted, err = lb.qp.PostRW(wrs[:10])
	if posted != 3 || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("PostRW with a bad op = %d, %v; want 3, ErrInvalidArgument", posted, err)
	}
}

func TestLoopbackClosedHandle(t *testing.T) {
	lb, err := newLoopback(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.free()
	lb.qp.h.closed = true
	lb.cq.h.closed = true
	buf := mmapBuf(t, 4096)
	if _, err := lb.qp.PostRW([]WorkRequest{{Op: OpWrite, Length: 1, LocalAddr: addr(buf), RemoteAddr: addr(buf)}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("PostRW on a closed QP = %v", err)
	}
	if _, err := lb.cq.Poll(make([]Completion, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Poll on a closed CQ = %v", err)
	}
}

// BenchmarkLoopbackPostPoll runs the real cgo data path against the C
// loopback device: batch WRITEs per PostRW, then Poll until all completed.
// It reports cgo crossings per work request (the goal at batch 32 is well
// under one), ns per work request and allocations (zero).
func BenchmarkLoopbackPostPoll(b *testing.B) {
	for _, bc := range []struct {
		name        string
		batch, size int
	}{{"64KiB-batch32", 32, 64 << 10}, {"64B-batch1", 1, 64}, {"64B-batch32", 32, 64}} {
		b.Run(bc.name, func(b *testing.B) { benchLoopback(b, bc.batch, bc.size) })
	}
}

func benchLoopback(b *testing.B, batch, size int) {
	lb, err := newLoopback(1024, 9)
	if err != nil {
		b.Fatal(err)
	}
	defer lb.free()
	src, dst := mmapBuf(b, batch*size), mmapBuf(b, batch*size)
	wrs := make([]WorkRequest, batch)
	for i := range wrs {
		wrs[i] = WorkRequest{WRID: uint64(i), Op: OpWrite, Length: uint32(size),
			LocalAddr: addr(src) + uint64(i*size), RemoteAddr: addr(dst) + uint64(i*size)}
	}
	out := make([]Completion, batch)
	run := func() {
		if n, err := lb.qp.PostRW(wrs); n != batch || err != nil {
			b.Fatalf("PostRW = %d, %v", n, err)
		}
		for got := 0; got < batch; {
			n, err := lb.cq.Poll(out)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.SetBytes(int64(batch * size))
	b.ReportAllocs()
	start := DataPathCalls()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.StopTimer()
	wrsDone := float64(b.N * batch)
	b.ReportMetric(float64(DataPathCalls()-start)/wrsDone, "cgo-calls/WR")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/wrsDone, "ns/WR")
}
