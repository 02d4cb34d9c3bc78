package fakeverbs

import (
	"testing"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// BenchmarkPostPoll64KiBBatch32 posts 32 WRITEs of 64 KiB per PostRW and
// polls them back; the steady state must allocate nothing.
func BenchmarkPostPoll64KiBBatch32(b *testing.B) {
	const batch, size = 32, 64 << 10
	_, x, y := pair(b, endOpts{maxWR: 256, depth: 1024, memLen: batch * size}, endOpts{memLen: batch * size})
	ws := make([]verbs.WorkRequest, batch)
	for i := range ws {
		ws[i] = wr(x, y, uint64(i), verbs.OpWrite, uint64(i*size), uint64(i*size), size)
	}
	cs := make([]verbs.Completion, batch)
	run := func() {
		if n, err := x.qp.PostRW(ws); n != batch || err != nil {
			b.Fatalf("PostRW = %d, %v", n, err)
		}
		for got := 0; got < batch; {
			n, err := x.cq.Poll(cs)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range cs[:n] {
				if c.Status != verbs.StatusSuccess {
					b.Fatalf("completion %+v", c)
				}
			}
			got += n
		}
	}
	run() // warm up: grow the device queue once
	b.SetBytes(batch * size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.ReportMetric(float64(testing.AllocsPerRun(10, run))/batch, "allocs/WR")
}
