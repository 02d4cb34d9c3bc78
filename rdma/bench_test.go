package rdma

import (
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// BenchmarkSlices64K posts and completes 64 KiB slices over fakeverbs (4
// slices per task) and reports allocations per task. The fake copies the
// bytes, so ns/op is dominated by memmove; engine CPU per slice is
// reported separately by BenchmarkSliceOverhead.
func BenchmarkSlices64K(b *testing.B) {
	benchSlices(b, 64<<10, 4)
}

// BenchmarkSliceOverhead uses 1-byte slices (MC_SLICE_SIZE=1 is not
// allowed, so 16 one-byte tasks), isolating the per-slice engine cost.
func BenchmarkSliceOverhead(b *testing.B) {
	benchSlices(b, 1, 1)
}

func benchSlices(b *testing.B, sliceBytes uint64, perTask int) {
	c := &cluster{hosts: map[string]*testHost{}}
	c.fab = newFabric()
	defer c.fab.Close()
	cfg := DefaultConfig()
	cfg.BusyPoll = 200 * time.Microsecond
	a := c.addHostB(b, 4<<20, cfg)
	p := c.addHostB(b, 4<<20, cfg)
	defer a.tr.Close()
	defer p.tr.Close()
	seg := segmentOf(p)
	n := sliceBytes * uint64(perTask)
	const batch = 16
	tasks := make([]*transport.Task, batch)
	for i := range tasks {
		off := uint64(i) * n
		tasks[i] = &transport.Task{Op: transport.Write, Local: a.mem[off : off+n], LocalAddr: a.region.Addr + off, Target: seg, TargetAddr: p.region.Addr + off}
	}
	done := make(chan struct{}, batch)
	hook := func(tk *transport.Task) { tk.SetState(transport.StateCompleted); done <- struct{}{} }
	runBatch := func() {
		for _, tk := range tasks {
			tk.Reset(hook)
		}
		if err := a.tr.Submit(tasks); err != nil {
			b.Fatal(err)
		}
		for range tasks {
			<-done
		}
	}
	runBatch() // connect endpoints, grow the slab
	b.ReportAllocs()
	b.SetBytes(int64(n) * batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runBatch()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch*perTask), "ns/slice")
	for _, tk := range tasks {
		if tk.Err() != nil {
			b.Fatal(tk.Err())
		}
	}
}
