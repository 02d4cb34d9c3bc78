package engine

import (
	"context"
	"testing"

	"github.com/ferrylabs/ferry/transport"
)

// BenchmarkBatchSubmit measures Submit + completion + Wait + Reset of a
// batch of 64 requests of 4 KiB over the fake transport. allocs/op must be
// 0: the steady-state request path allocates nothing.
func BenchmarkBatchSubmit(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			a, p, seg, _ := pair(b)
			const n = 64
			local := make([]byte, n*size)
			remote := make([]byte, n*size)
			mustRegister(b, a, local)
			mustRegister(b, p, remote)
			reqs := make([]Request, n)
			for i := range reqs {
				off := uint64(i * size)
				reqs[i] = Request{Op: transport.Write, Local: Addr(local) + off, Target: seg, TargetAddr: Addr(remote) + off, Length: uint64(size)}
			}
			bt, err := a.AllocateBatch(n)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			// Warm up (first submit may refetch the descriptor).
			if err := bt.Submit(reqs); err != nil {
				b.Fatal(err)
			}
			if err := bt.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n * size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := bt.Reset(); err != nil {
					b.Fatal(err)
				}
				if err := bt.Submit(reqs); err != nil {
					b.Fatal(err)
				}
				if err := bt.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/request")
		})
	}
}

func sizeName(n int) string {
	if n >= 1024 {
		return itoa(n/1024) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestSubmitZeroAllocs asserts the zero-allocation property outside
// benchmarks so the normal test run catches a regression.
func TestSubmitZeroAllocs(t *testing.T) {
	a, p, seg, _ := pair(t)
	local := make([]byte, 16*512)
	remote := make([]byte, 16*512)
	mustRegister(t, a, local)
	mustRegister(t, p, remote)
	reqs := make([]Request, 16)
	for i := range reqs {
		reqs[i] = Request{Op: transport.Read, Local: Addr(local) + uint64(i*512), Target: seg, TargetAddr: Addr(remote) + uint64(i*512), Length: 512}
	}
	bt, _ := a.AllocateBatch(16)
	ctx := context.Background()
	run := func() {
		if err := bt.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := bt.Submit(reqs); err != nil {
			t.Fatal(err)
		}
		if err := bt.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if avg := testing.AllocsPerRun(50, run); avg != 0 {
		t.Fatalf("%.1f allocations per batch of 16, want 0", avg)
	}
}
