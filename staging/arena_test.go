package staging

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
)

func TestOrderFor(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want int
	}{{0, 0}, {1, 0}, {4096, 0}, {4097, 1}, {8192, 1}, {8193, 2}, {16384, 2}, {1 << 20, 8}, {1<<20 + 1, 9}} {
		if got := orderFor(c.n); got != c.want {
			t.Errorf("orderFor(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestNewRejectsBadSizes(t *testing.T) {
	if _, err := New(Options{Logger: quiet}); !errors.Is(err, ErrInvalidSize) {
		t.Fatalf("size 0: err = %v, want ErrInvalidSize", err)
	}
	if _, err := New(Options{Size: 1 << 20, MaxSlot: 100, Logger: quiet}); !errors.Is(err, ErrInvalidSize) {
		t.Fatalf("MaxSlot 100: err = %v, want ErrInvalidSize", err)
	}
}

func TestAlignmentAndBounds(t *testing.T) {
	a := newTestArena(t, Options{Size: 3<<20 + 5*PageSize + 17}) // odd size: tail blocks
	if a.Len() != 3<<20+6*PageSize {
		t.Fatalf("Len = %d, want rounded to pages", a.Len())
	}
	if a.Addr()%PageSize != 0 {
		t.Fatalf("arena base %#x not page aligned", a.Addr())
	}
	sizes := []uint64{0, 1, 100, 4095, 4096, 4097, 9000, 65536, 300000, 1 << 20}
	var slots []Slot
	for _, n := range sizes {
		s, err := a.Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		slots = append(slots, s)
		if s.Addr()%PageSize != 0 || s.Offset()%s.Cap() != 0 {
			t.Errorf("Alloc(%d): addr %#x offset %#x cap %d not aligned", n, s.Addr(), s.Offset(), s.Cap())
		}
		if s.Len() != n || uint64(len(s.Bytes())) != n || uint64(cap(s.Bytes())) != n {
			t.Errorf("Alloc(%d): Len %d, len(Bytes) %d cap %d", n, s.Len(), len(s.Bytes()), cap(s.Bytes()))
		}
		if s.Cap() < n || s.Cap() < PageSize || (n > PageSize && s.Cap() >= 2*n) {
			t.Errorf("Alloc(%d): Cap %d not the tightest power of two", n, s.Cap())
		}
		if s.Offset()+s.Cap() > a.Len() {
			t.Errorf("Alloc(%d): block [%d,%d) past arena end %d", n, s.Offset(), s.Offset()+s.Cap(), a.Len())
		}
		if n > 0 && &s.Bytes()[0] != &a.Bytes()[s.Offset()] {
			t.Errorf("Alloc(%d): Bytes does not alias the arena at Offset", n)
		}
	}
	checkDisjoint(t, slots)
	if _, err := a.Alloc(a.MaxSlot() + 1); !errors.Is(err, ErrInvalidSize) {
		t.Fatalf("Alloc(MaxSlot+1): err = %v, want ErrInvalidSize", err)
	}
	for _, s := range slots {
		if err := a.Free(s); err != nil {
			t.Fatal(err)
		}
	}
	if a.Used() != 0 || a.Outstanding() != 0 {
		t.Fatalf("after freeing all: used %d outstanding %d", a.Used(), a.Outstanding())
	}
}

func checkDisjoint(t *testing.T, slots []Slot) {
	t.Helper()
	s := append([]Slot(nil), slots...)
	sort.Slice(s, func(i, j int) bool { return s[i].Offset() < s[j].Offset() })
	for i := 1; i < len(s); i++ {
		if s[i-1].Offset()+s[i-1].Cap() > s[i].Offset() {
			t.Fatalf("blocks overlap: [%#x,+%d) and [%#x,+%d)", s[i-1].Offset(), s[i-1].Cap(), s[i].Offset(), s[i].Cap())
		}
	}
}

// TestRandomAgainstModel drives random allocations and frees and checks the
// allocator against a model: blocks never overlap, accounting matches, data
// written into a slot survives until it is freed, and freeing everything
// coalesces back to the initial free blocks.
func TestRandomAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			a := newTestArena(t, Options{Size: 4<<20 - 3*PageSize})
			initial := a.b.largestFree()
			rng := rand.New(rand.NewPCG(seed, 42))
			type live struct {
				s   Slot
				tag byte
			}
			var model []live
			var wantUsed uint64
			for step := 0; step < 4000; step++ {
				if len(model) > 0 && rng.IntN(100) < 45 {
					i := rng.IntN(len(model))
					l := model[i]
					for j, c := range l.s.Bytes() {
						if c != l.tag {
							t.Fatalf("step %d: slot %#x byte %d = %d, want %d (overwritten)", step, l.s.Offset(), j, c, l.tag)
						}
					}
					if err := a.Free(l.s); err != nil {
						t.Fatalf("step %d: Free: %v", step, err)
					}
					wantUsed -= l.s.Cap()
					model[i] = model[len(model)-1]
					model = model[:len(model)-1]
				} else {
					n := uint64(rng.ExpFloat64() * 20000)
					s, err := a.Alloc(n)
					if errors.Is(err, ErrNoSpace) {
						// Must be genuine: no free block of that order.
						if k := a.b.largestFree(); k >= orderFor(n) {
							t.Fatalf("step %d: ErrNoSpace for %d bytes with a free block of order %d", step, n, k)
						}
						continue
					}
					if err != nil {
						t.Fatalf("step %d: Alloc(%d): %v", step, n, err)
					}
					tag := byte(step)
					b := s.Bytes()
					for j := range b {
						b[j] = tag
					}
					model = append(model, live{s, tag})
					wantUsed += s.Cap()
				}
				if a.Used() != wantUsed || a.Outstanding() != len(model) {
					t.Fatalf("step %d: used %d outstanding %d, model %d %d", step, a.Used(), a.Outstanding(), wantUsed, len(model))
				}
				if step%200 == 0 {
					ss := make([]Slot, len(model))
					for i, l := range model {
						ss[i] = l.s
					}
					checkDisjoint(t, ss)
				}
			}
			for _, l := range model {
				if err := a.Free(l.s); err != nil {
					t.Fatal(err)
				}
			}
			if k := a.b.largestFree(); k != initial {
				t.Fatalf("after freeing all, largest free order %d, want %d (not coalesced)", k, initial)
			}
		})
	}
}

func TestExhaustionThenFree(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20, MaxSlot: 64 << 10})
	var slots []Slot
	for {
		s, err := a.Alloc(64 << 10)
		if errors.Is(err, ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	if len(slots) != 16 {
		t.Fatalf("got %d slots of 64 KiB from 1 MiB, want 16", len(slots))
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("full arena: Alloc(1) err = %v, want ErrNoSpace", err)
	}
	if err := a.Free(slots[7]); err != nil {
		t.Fatal(err)
	}
	s, err := a.Alloc(64 << 10)
	if err != nil {
		t.Fatalf("after a free: %v", err)
	}
	if s.Offset() != slots[7].Offset() {
		t.Fatalf("reused offset %#x, want %#x", s.Offset(), slots[7].Offset())
	}
}

func TestDoubleFreeAndForeignSlots(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	b := newTestArena(t, Options{Size: 1 << 20})
	s, err := a.Alloc(5000)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(s); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("foreign free: err = %v", err)
	}
	if err := a.Free(Slot{}); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("zero slot free: err = %v", err)
	}
	if err := a.Free(s); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(s); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("double free: err = %v", err)
	}
	// A stale handle must not free a newer allocation at the same offset.
	s2, err := a.Alloc(5000)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Offset() != s.Offset() {
		t.Fatalf("expected reuse of offset %#x, got %#x", s.Offset(), s2.Offset())
	}
	if err := a.Free(s); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("stale free after reuse: err = %v", err)
	}
	if a.Outstanding() != 1 {
		t.Fatalf("stale free changed state: outstanding %d", a.Outstanding())
	}
	// A handle with a wrong size for a live block is refused too.
	bad := s2
	bad.order++
	if err := a.Free(bad); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("wrong-order free: err = %v", err)
	}
}

func TestCloseRefusesOutstanding(t *testing.T) {
	a, err := New(Options{Size: 1 << 20, Logger: quiet, Unlocked: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, ErrOutstanding) {
		t.Fatalf("Close with a slot out: err = %v", err)
	}
	// Still usable after the refusal.
	copy(s.Bytes(), "0123456789")
	if err := a.Free(s); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Alloc after Close: err = %v", err)
	}
}

func TestForceClose(t *testing.T) {
	a, err := New(Options{Size: 1 << 20, Logger: quiet, Unlocked: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ForceClose(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(s); !errors.Is(err, ErrClosed) {
		t.Fatalf("Free after ForceClose: err = %v", err)
	}
	if err := a.ForceClose(); err != nil {
		t.Fatal(err)
	}
}

// TestMappingFlags checks in /proc/self/smaps that the arena is excluded
// from fork (dc) and, when pinned, locked (lo).
func TestMappingFlags(t *testing.T) {
	a := newTestArena(t, Options{Size: 2 << 20})
	flags := vmFlags(t, a.Addr())
	if !strings.Contains(flags, " dc") {
		t.Errorf("VmFlags %q lacks dc (MADV_DONTFORK)", flags)
	}
	if a.Pinned() && !strings.Contains(flags, " lo") {
		t.Errorf("pinned arena, VmFlags %q lacks lo (mlock)", flags)
	}
}

func TestHugePagesFallback(t *testing.T) {
	a := newTestArena(t, Options{Size: 3 << 20, HugePages: true})
	if a.HugePages() && a.Len()%hugePageSize != 0 {
		t.Fatalf("huge-page arena of %d bytes not a multiple of 2 MiB", a.Len())
	}
	s, err := a.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	s.Bytes()[len(s.Bytes())-1] = 1
	if err := a.Free(s); err != nil {
		t.Fatal(err)
	}
}

func vmFlags(t *testing.T, addr uint64) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = addr >= lo && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("mapping of %#x not found in smaps", addr)
	return ""
}

func TestZeroAllocs(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	n := testing.AllocsPerRun(1000, func() {
		s, err := a.Alloc(20000)
		if err != nil {
			panic(err)
		}
		if err := a.Free(s); err != nil {
			panic(err)
		}
	})
	if n != 0 {
		t.Fatalf("Alloc+Free allocates %v times per op, want 0", n)
	}
}
