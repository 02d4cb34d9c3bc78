package staging

import (
	"fmt"
	"testing"
	"time"
)

func BenchmarkAllocFree(b *testing.B) {
	for _, size := range []uint64{4096, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			a := newTestArena(b, Options{Size: 8 << 20})
			// Keep some slots live so frees do real coalescing work.
			var keep []Slot
			for i := 0; i < 16; i++ {
				s, err := a.Alloc(12 << 10)
				if err != nil {
					b.Fatal(err)
				}
				keep = append(keep, s)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s, err := a.Alloc(size)
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Free(s); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, s := range keep {
				_ = a.Free(s)
			}
		})
	}
}

func BenchmarkAllocFreeParallel(b *testing.B) {
	a := newTestArena(b, Options{Size: 8 << 20})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s, err := a.Alloc(16 << 10)
			if err != nil {
				b.Error(err)
				return
			}
			_ = a.Free(s)
		}
	})
}

func BenchmarkLease(b *testing.B) {
	a := newTestArena(b, Options{Size: 8 << 20})
	sizes := []uint64{64 << 10, 64 << 10, 64 << 10, 64 << 10}
	b.ReportAllocs()
	for b.Loop() {
		l, err := a.AllocLease(sizes)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Start(time.Second); err != nil {
			b.Fatal(err)
		}
		if err := a.ReleaseLease(l.ID()); err != nil {
			b.Fatal(err)
		}
	}
}
