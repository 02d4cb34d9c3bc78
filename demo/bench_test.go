package demo

import "testing"

// BenchmarkFillVerify measures generating and checking 4 MiB of object
// content, the demo's per-object CPU cost on top of the transfer.
func BenchmarkFillVerify(b *testing.B) {
	buf := make([]byte, 4<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		fill(1, i, buf)
		if verify(1, i, buf) != -1 {
			b.Fatal("content does not verify")
		}
	}
}
