package staging

import (
	"errors"
	"testing"
)

// FuzzOps interprets the input as a program of allocations and frees and
// checks the allocator's invariants after each step.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0x10, 0x20, 0x81, 0x30, 0x82, 0xff, 0x00})
	f.Add([]byte{0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x80, 0x80, 0x80})
	a, err := New(Options{Size: 1<<20 + 3*PageSize, Logger: quiet, Unlocked: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = a.ForceClose() })
	f.Fuzz(func(t *testing.T, prog []byte) {
		var live []Slot
		defer func() {
			for _, s := range live {
				_ = a.Free(s)
			}
		}()
		for i, op := range prog {
			if op&0x80 != 0 {
				if len(live) == 0 {
					// Freeing a zero slot must be refused, never panic.
					if err := a.Free(Slot{}); !errors.Is(err, ErrInvalidSlot) {
						t.Fatalf("op %d: Free(zero) = %v", i, err)
					}
					continue
				}
				j := int(op&0x7f) % len(live)
				if err := a.Free(live[j]); err != nil {
					t.Fatalf("op %d: Free: %v", i, err)
				}
				if err := a.Free(live[j]); !errors.Is(err, ErrInvalidSlot) {
					t.Fatalf("op %d: double free not detected: %v", i, err)
				}
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				continue
			}
			n := uint64(op) * uint64(op) * 64
			s, err := a.Alloc(n)
			if errors.Is(err, ErrNoSpace) {
				continue
			}
			if err != nil {
				t.Fatalf("op %d: Alloc(%d): %v", i, n, err)
			}
			if s.Offset()%s.Cap() != 0 || s.Cap() < n || s.Offset()+s.Cap() > a.Len() {
				t.Fatalf("op %d: bad slot off %#x cap %d for %d", i, s.Offset(), s.Cap(), n)
			}
			live = append(live, s)
			checkDisjoint(t, live)
		}
		if a.Outstanding() != len(live) {
			t.Fatalf("outstanding %d, live %d", a.Outstanding(), len(live))
		}
	})
}
