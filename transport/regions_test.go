package transport

import (
	"errors"
	"testing"
)

func TestRegions(t *testing.T) {
	var s Regions
	mem := make([]byte, 300)
	r := func(off, n int) Region { return Region{Mem: mem[off : off+n], Addr: 1000 + uint64(off)} }
	if err := s.Add(r(100, 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(r(0, 100)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Region{r(50, 100), r(150, 10), r(199, 2), r(0, 300)} {
		if err := s.Add(bad); !errors.Is(err, ErrOverlap) {
			t.Errorf("Add [%d,%d): %v", bad.Addr, bad.End(), err)
		}
	}
	cases := []struct {
		addr, n uint64
		ok      bool
		base    uint64
	}{
		{1000, 100, true, 1000}, {1100, 100, true, 1100}, {1099, 2, false, 0},
		{1199, 1, true, 1100}, {1200, 1, false, 0}, {1200, 0, true, 1100},
		{999, 1, false, 0}, {1150, ^uint64(0), false, 0},
	}
	for _, c := range cases {
		got, ok := s.Find(c.addr, c.n)
		if ok != c.ok || ok && got.Addr != c.base {
			t.Errorf("Find(%d, %d) = %v %v", c.addr, c.n, got.Addr, ok)
		}
	}
	if _, ok := s.Remove(1050); ok {
		t.Fatal("Remove of a non-start address succeeded")
	}
	if _, ok := s.Remove(1000); !ok || len(s.All()) != 1 {
		t.Fatal("Remove failed")
	}
	if allocs := testing.AllocsPerRun(100, func() { s.Find(1150, 10) }); allocs != 0 {
		t.Fatalf("Find allocates %.1f", allocs)
	}
}
