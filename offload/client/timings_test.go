package client

import (
	"errors"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var rs []Result
	for i := 1; i <= 100; i++ {
		rs = append(rs, Result{Timings: Timings{Total: time.Duration(i) * time.Millisecond, Owner: time.Duration(101-i) * time.Microsecond}})
	}
	rs = append(rs, Result{Err: errors.New("x"), Timings: Timings{Total: time.Hour}})
	s := Summarize(rs)
	if s.N != 100 || s.Total.P50 != 51*time.Millisecond || s.Total.P99 != 100*time.Millisecond || s.Total.Max != 100*time.Millisecond {
		t.Fatalf("total: %+v (n %d)", s.Total, s.N)
	}
	if s.Owner.P90 != 91*time.Microsecond {
		t.Fatalf("owner p90 %v", s.Owner.P90)
	}
	if z := Summarize(nil); z.N != 0 || z.Total.Max != 0 {
		t.Fatalf("empty: %+v", z)
	}
}

func TestChunkCaps(t *testing.T) {
	defer func(k int) { maxBatchKeys = k }(maxBatchKeys)
	maxBatchKeys = 100
	n := maxBatchKeys + 10
	idx := make([]int, n)
	keys := make([][]byte, n)
	sizes := make([]int64, n)
	for i := range idx {
		idx[i] = i
		keys[i] = []byte("k")
	}
	sizes[0] = 5 << 20 // larger than the limit: alone
	parts := chunk(idx, keys, sizes, 4<<20)
	if len(parts) != 3 || len(parts[0]) != 1 || len(parts[1]) != maxBatchKeys || len(parts[2]) != 9 {
		t.Fatalf("parts: %d (%d, %d, ...)", len(parts), len(parts[0]), len(parts[1]))
	}
	big := make([]byte, maxBatchKeyBytes/2+1)
	parts = chunk([]int{0, 1, 2}, [][]byte{big, big, big}, []int64{1, 1, 1}, 1<<30)
	if len(parts) != 3 {
		t.Fatalf("key-byte cap: %d parts", len(parts))
	}
}
