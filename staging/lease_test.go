package staging

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestLeaseReleaseFreesSlots(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	l, err := a.AllocLease([]uint64{100, 5000, 70000})
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() != 1 || len(l.Slots()) != 3 || a.Outstanding() != 3 {
		t.Fatalf("id %d slots %d outstanding %d", l.ID(), len(l.Slots()), a.Outstanding())
	}
	if l.Bytes() != 4096+8192+131072 {
		t.Fatalf("lease bytes %d", l.Bytes())
	}
	if got, ok := a.Lease(l.ID()); !ok || got != l {
		t.Fatal("Lease(id) did not find the lease")
	}
	if err := a.ReleaseLease(l.ID()); err != nil {
		t.Fatal(err)
	}
	if a.Outstanding() != 0 || a.Used() != 0 || a.Leases() != 0 {
		t.Fatalf("after release: outstanding %d used %d leases %d", a.Outstanding(), a.Used(), a.Leases())
	}
	if err := a.ReleaseLease(l.ID()); !errors.Is(err, ErrUnknownLease) {
		t.Fatalf("second release by id: err = %v", err)
	}
	if err := l.Release(); !errors.Is(err, ErrLeaseEnded) {
		t.Fatalf("second Release: err = %v", err)
	}
	if err := l.Acquire(); !errors.Is(err, ErrLeaseEnded) {
		t.Fatalf("Acquire after release: err = %v", err)
	}
}

func TestAllocLeaseAllOrNothing(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	if _, err := a.AllocLease([]uint64{1 << 19, 1 << 19, 1}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("oversubscribed lease: err = %v, want ErrNoSpace", err)
	}
	if a.Outstanding() != 0 {
		t.Fatalf("failed AllocLease left %d slots allocated", a.Outstanding())
	}
}

func TestNewLeaseRejectsFreedSlot(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	s1, _ := a.Alloc(1)
	s2, _ := a.Alloc(1)
	if err := a.Free(s2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.NewLease([]Slot{s1, s2}); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("NewLease with freed slot: err = %v", err)
	}
	if a.Leases() != 0 || a.Outstanding() != 1 {
		t.Fatalf("leases %d outstanding %d", a.Leases(), a.Outstanding())
	}
}

func TestLeaseExpiry(t *testing.T) {
	reg := prometheus.NewRegistry()
	var mu sync.Mutex
	var expired []uint64
	a := newTestArena(t, Options{
		Size: 1 << 20, Name: "t", Registerer: reg, SweepInterval: 5 * time.Millisecond,
		OnExpire: func(id, bytes uint64) {
			mu.Lock()
			expired = append(expired, id)
			mu.Unlock()
		},
	})
	unstarted, err := a.AllocLease([]uint64{1})
	if err != nil {
		t.Fatal(err)
	}
	timed, err := a.AllocLease([]uint64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := timed.Start(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, ok := timed.Deadline(); !ok {
		t.Fatal("started lease has no deadline")
	}
	if _, ok := unstarted.Deadline(); ok {
		t.Fatal("unstarted lease has a deadline")
	}
	waitFor(t, func() bool { return a.Expirations() == 1 })
	mu.Lock()
	if len(expired) != 1 || expired[0] != timed.ID() {
		t.Fatalf("OnExpire got %v, want [%d]", expired, timed.ID())
	}
	mu.Unlock()
	if a.Outstanding() != 1 {
		t.Fatalf("after expiry outstanding %d, want 1 (the unstarted lease)", a.Outstanding())
	}
	if err := timed.Release(); !errors.Is(err, ErrLeaseEnded) {
		t.Fatalf("Release after expiry: err = %v", err)
	}
	if v := metricValue(t, reg, "ferry_staging_lease_expirations_total"); v != 1 {
		t.Fatalf("expirations metric %v", v)
	}
	if v := metricValue(t, reg, "ferry_staging_slots"); v != 1 {
		t.Fatalf("slots metric %v", v)
	}
	// The unstarted lease never expires, however long we wait.
	if n := a.ExpireLeases(time.Now().Add(time.Hour)); n != 0 {
		t.Fatalf("unstarted lease expired (%d)", n)
	}
	if err := unstarted.Release(); err != nil {
		t.Fatal(err)
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestBusyLeaseNeverExpires(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	l, err := a.AllocLease([]uint64{4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if n := a.ExpireLeases(future); n != 0 {
		t.Fatalf("busy lease expired")
	}
	if err := a.Close(); !errors.Is(err, ErrLeaseBusy) {
		t.Fatalf("Close with busy lease: err = %v", err)
	}
	if err := a.ForceClose(); !errors.Is(err, ErrLeaseBusy) {
		t.Fatalf("ForceClose with busy lease: err = %v", err)
	}
	l.Done()
	if n := a.ExpireLeases(future); n != 1 {
		t.Fatalf("idle overdue lease: expired %d, want 1", n)
	}
	if a.Outstanding() != 0 {
		t.Fatalf("outstanding %d", a.Outstanding())
	}
}

func TestReleaseWhileBusyDefersFree(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	l, err := a.AllocLease([]uint64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Lease(l.ID()); ok {
		t.Fatal("released lease still found by id")
	}
	l.Done()
	if a.Outstanding() != 2 {
		t.Fatalf("slots freed while still busy: outstanding %d", a.Outstanding())
	}
	l.Done()
	if a.Outstanding() != 0 {
		t.Fatalf("slots not freed after last Done: outstanding %d", a.Outstanding())
	}
}

func TestAllocReclaimsExpiredLeases(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	l, err := a.AllocLease([]uint64{1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	s, err := a.Alloc(1 << 20)
	if err != nil {
		t.Fatalf("Alloc did not reclaim the expired lease: %v", err)
	}
	if a.Expirations() != 1 {
		t.Fatalf("expirations %d", a.Expirations())
	}
	if err := a.Free(s); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseStartValidation(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	l, err := a.AllocLease([]uint64{1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(0); !errors.Is(err, ErrInvalidSize) {
		t.Fatalf("Start(0): err = %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(time.Second); !errors.Is(err, ErrLeaseEnded) {
		t.Fatalf("Start after release: err = %v", err)
	}
}

func TestMetricsUnregisteredOnClose(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := New(Options{Size: 1 << 20, Name: "m", Registerer: reg, Logger: quiet, Unlocked: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Size: 1 << 20, Name: "m", Registerer: reg, Logger: quiet, Unlocked: true}); err == nil {
		t.Fatal("second arena with the same name registered duplicate metrics")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{Size: 1 << 20, Name: "m", Registerer: reg, Logger: quiet, Unlocked: true})
	if err != nil {
		t.Fatalf("re-create after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentLeases(t *testing.T) {
	a := newTestArena(t, Options{Size: 4 << 20, SweepInterval: time.Millisecond})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				l, err := a.AllocLease([]uint64{4096, 10000})
				if errors.Is(err, ErrNoSpace) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				_ = l.Start(time.Duration(i%3+1) * time.Millisecond / 2)
				if l.Acquire() == nil {
					l.Slots()[0].Bytes()[0] = 1
					l.Done()
				}
				if i%2 == 0 {
					_ = l.Release()
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { return a.Outstanding() == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestLeaseOwnsItsSlots(t *testing.T) {
	a := newTestArena(t, Options{Size: 1 << 20})
	s1, _ := a.Alloc(1)
	s2, _ := a.Alloc(1)
	l, err := a.NewLease([]Slot{s1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(s1); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("Free of a leased slot: err = %v", err)
	}
	if _, err := a.NewLease([]Slot{s2, s1}); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("slot in two leases: err = %v", err)
	}
	if _, err := a.NewLease([]Slot{s2, s2}); !errors.Is(err, ErrInvalidSlot) {
		t.Fatalf("slot listed twice: err = %v", err)
	}
	// The failed NewLease calls left s2 unleased: Free works.
	if err := a.Free(s2); err != nil {
		t.Fatalf("Free of s2 after failed NewLease: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if a.Outstanding() != 0 {
		t.Fatalf("outstanding %d", a.Outstanding())
	}
}

// An expired lease whose slot Options.InUse reports busy is kept; it
// expires once nothing uses its memory. The other lease's fate does not
// depend on it.
func TestExpiredLeaseWaitsWhileInUse(t *testing.T) {
	var mu sync.Mutex
	var busyAddr, busyLen uint64
	var asked [][2]uint64
	inUse := func(addr, n uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, [2]uint64{addr, n})
		return busyLen > 0 && addr < busyAddr+busyLen && busyAddr < addr+n
	}
	a := newTestArena(t, Options{Size: 1 << 20, InUse: inUse})
	held, err := a.AllocLease([]uint64{4096, 10000})
	if err != nil {
		t.Fatal(err)
	}
	other, err := a.AllocLease([]uint64{4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Lease{held, other} {
		if err := l.Start(time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	s := held.Slots()[1]
	mu.Lock()
	busyAddr, busyLen = s.Addr()+s.Cap()-1, 1 // the last byte of the block, past the requested length
	mu.Unlock()

	future := time.Now().Add(time.Hour)
	if n := a.ExpireLeases(future); n != 1 {
		t.Fatalf("expired %d leases, want only the idle one", n)
	}
	if _, ok := a.Lease(held.ID()); !ok || a.DeferredExpirations() != 1 {
		t.Fatalf("the lease in use was freed (deferred %d)", a.DeferredExpirations())
	}
	mu.Lock()
	found := false
	for _, q := range asked {
		found = found || q == [2]uint64{s.Addr(), s.Cap()}
	}
	busyLen = 0
	mu.Unlock()
	if !found {
		t.Fatalf("InUse was not asked about the whole block of %#x+%d: %v", s.Addr(), s.Cap(), asked)
	}
	if n := a.ExpireLeases(future); n != 1 {
		t.Fatalf("after the use ended: expired %d, want 1", n)
	}
	if a.Outstanding() != 0 {
		t.Fatalf("outstanding %d", a.Outstanding())
	}
}
