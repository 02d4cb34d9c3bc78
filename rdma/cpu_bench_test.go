package rdma

import (
	"runtime"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/transport"
)

// BenchmarkSliceCPU64K measures the engine's own CPU per 64 KiB slice.
// The requester's fake NICs run in instant mode (fakeverbs SetInstant):
// every work request completes inside PostRW and moves no byte, so what
// is left is slicing, routing, posting, polling, settling and finishing,
// plus the fake's minimal post/CQ bookkeeping. The process CPU time
// (getrusage: user+system, every goroutine, the benchmark loop included)
// is divided by the slices run and reported as cpu-ns/slice; allocs/op
// is per batch of 64 tasks of 16 slices (1 MiB each), allocs/slice per
// slice. The slice path itself allocates nothing; what allocs/op shows
// comes from the completion goroutine going to sleep on its channel
// between batches (rdma/verbs/fdwait), which busy polling makes rarer.
func BenchmarkSliceCPU64K(b *testing.B) {
	b.Run("busypoll=50us", func(b *testing.B) { benchSliceCPU(b, 50*time.Microsecond) })
	b.Run("busypoll=0", func(b *testing.B) { benchSliceCPU(b, 0) })
}

func benchSliceCPU(b *testing.B, busyPoll time.Duration) {
	const (
		slice    = 64 << 10
		perTask  = 16
		batch    = 64
		taskSize = slice * perTask
	)
	c := &cluster{hosts: map[string]*testHost{}}
	c.fab = newFabric()
	defer c.fab.Close()
	cfg := DefaultConfig()
	cfg.BusyPoll = busyPoll
	a := c.addHostB(b, taskSize, cfg)
	p := c.addHostB(b, taskSize, cfg)
	defer a.tr.Close()
	defer p.tr.Close()
	seg := segmentOf(p)
	// No byte moves, so every task may use the same buffers.
	tasks := make([]*transport.Task, batch)
	for i := range tasks {
		tasks[i] = &transport.Task{Op: transport.Write, Local: a.mem, LocalAddr: a.region.Addr, Target: seg, TargetAddr: p.region.Addr}
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
	for _, n := range a.prov.NICs() {
		n.SetInstant(true)
	}
	runBatch() // connect endpoints, grow the slab
	runBatch()
	before := workRequests(a)
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		runBatch()
	}
	cpu1 := processCPU()
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	slices := float64(b.N) * batch * perTask
	if got := workRequests(a) - before; got != uint64(slices) {
		b.Fatalf("%d work requests for %.0f slices", got, slices)
	}
	for _, tk := range tasks {
		if tk.Err() != nil {
			b.Fatal(tk.Err())
		}
	}
	if cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/slices, "cpu-ns/slice")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/slices, "ns/slice")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/slices, "allocs/slice")
}
