package transport

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// Regions is a set of non-overlapping registered regions. Lookups are
// lock-free and allocation-free (a copy-on-write snapshot); Add and Remove
// serialize among themselves.
type Regions struct {
	mu   sync.Mutex
	snap atomic.Pointer[[]Region]
}

// ErrOverlap is returned by Add when the new region overlaps one already
// present.
var ErrOverlap = fmt.Errorf("address range overlaps a registered region")

func (s *Regions) load() []Region {
	if p := s.snap.Load(); p != nil {
		return *p
	}
	return nil
}

// Add inserts r. It fails with ErrOverlap if r overlaps a present region.
func (s *Regions) Add(r Region) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.load()
	i := sort.Search(len(cur), func(i int) bool { return cur[i].Addr >= r.Addr })
	if i > 0 && cur[i-1].End() > r.Addr {
		return fmt.Errorf("%w: [%#x,%#x) overlaps [%#x,%#x)", ErrOverlap, r.Addr, r.End(), cur[i-1].Addr, cur[i-1].End())
	}
	if i < len(cur) && r.End() > cur[i].Addr {
		return fmt.Errorf("%w: [%#x,%#x) overlaps [%#x,%#x)", ErrOverlap, r.Addr, r.End(), cur[i].Addr, cur[i].End())
	}
	next := make([]Region, 0, len(cur)+1)
	next = append(next, cur[:i]...)
	next = append(next, r)
	next = append(next, cur[i:]...)
	s.snap.Store(&next)
	return nil
}

// Remove deletes the region that starts at addr and returns it.
func (s *Regions) Remove(addr uint64) (Region, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.load()
	i := sort.Search(len(cur), func(i int) bool { return cur[i].Addr >= addr })
	if i == len(cur) || cur[i].Addr != addr {
		return Region{}, false
	}
	r := cur[i]
	next := make([]Region, 0, len(cur)-1)
	next = append(next, cur[:i]...)
	next = append(next, cur[i+1:]...)
	s.snap.Store(&next)
	return r, true
}

// Find returns the region that holds all of [addr, addr+n). A zero-length
// range is found when addr lies inside a region or at its end.
func (s *Regions) Find(addr, n uint64) (Region, bool) {
	cur := s.load()
	// Last region with Addr <= addr.
	lo, hi := 0, len(cur)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cur[m].Addr <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return Region{}, false
	}
	r := cur[lo-1]
	if !r.Contains(addr, n) {
		return Region{}, false
	}
	return r, true
}

// All returns a snapshot of the regions in address order. The caller must
// not modify it.
func (s *Regions) All() []Region { return s.load() }
