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
