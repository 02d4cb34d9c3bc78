package staging

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

type leaseState uint8

const (
	leaseHeld     leaseState = iota // allocated, clock not started
	leaseStarted                    // clock running
	leaseReleased                   // released while busy; frees on last Done
	leaseEnded                      // slots freed
)

// Lease is a group of slots owned together and handed out for a limited
// time. Its id is unique within the arena (ids count from 1). All methods
// are safe for concurrent use.
type Lease struct {
	id       uint64
	a        *Arena
	slots    []Slot
	bytes    uint64
	deadline time.Time // zero until Start
	busy     int
	state    leaseState
}

type leaseTable struct {
	mu       sync.Mutex
	m        map[uint64]*Lease
	nextID   uint64
	expired  atomic.Uint64
	deferred atomic.Uint64
}

func (t *leaseTable) init() { t.m = make(map[uint64]*Lease) }

// busyCount and slotCount need t.mu.
func (t *leaseTable) busyCount() int {
	n := 0
	for _, l := range t.m {
		if l.busy > 0 {
			n++
		}
	}
	return n
}

func (t *leaseTable) slotCount() int {
	n := 0
	for _, l := range t.m {
		n += len(l.slots)
	}
	return n
}

// dropAll forgets every lease (ForceClose). Needs t.mu.
func (t *leaseTable) dropAll() {
	for id, l := range t.m {
		l.state = leaseEnded
		delete(t.m, id)
	}
}

// AllocLease allocates one slot per entry of sizes, all or nothing, and
// groups them in a new lease whose clock is not started: the slots stay
// allocated, and cannot expire, until Start and then Release or expiry.
// On error no slot stays allocated.
func (a *Arena) AllocLease(sizes []uint64) (*Lease, error) {
	slots := make([]Slot, 0, len(sizes))
	for i, n := range sizes {
		s, err := a.Alloc(n)
		if err != nil {
			for _, s := range slots {
				_ = a.Free(s)
			}
			return nil, fmt.Errorf("slot %d of %d (%d bytes): %w", i, len(sizes), n, err)
		}
		slots = append(slots, s)
	}
	return a.NewLease(slots)
}

// NewLease groups slots already allocated from a into a new, unstarted
// lease. The lease takes ownership: Free refuses them from now on, and the
// caller must not keep using them after the lease ends. It fails with
// ErrInvalidSlot, taking nothing, if a slot is not outstanding in a, is
// listed twice, or already belongs to a lease.
func (a *Arena) NewLease(slots []Slot) (*Lease, error) {
	l := &Lease{a: a, slots: slots}
	a.leases.mu.Lock()
	defer a.leases.mu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, ErrClosed
	}
	var bad error
	marked := 0
	for i, s := range slots {
		if s.a != a || !a.b.owns(s.page, int(s.order), s.gen) {
			bad = fmt.Errorf("%w: slot %d of %d is not allocated in this arena", ErrInvalidSlot, i, len(slots))
			break
		}
		if a.b.leased(s.page) {
			bad = fmt.Errorf("%w: slot %d of %d already belongs to a lease (or is listed twice)", ErrInvalidSlot, i, len(slots))
			break
		}
		a.b.setLeased(s.page, true)
		marked++
		l.bytes += s.Cap()
	}
	if bad != nil {
		for _, s := range slots[:marked] {
			a.b.setLeased(s.page, false)
		}
		a.mu.Unlock()
		return nil, bad
	}
	a.mu.Unlock()
	a.leases.nextID++
	l.id = a.leases.nextID
	a.leases.m[l.id] = l
	return l, nil
}

// ID is the lease's id, the batch id an owner hands to the requester.
func (l *Lease) ID() uint64 { return l.id }

// Slots returns the lease's slots in allocation order. The caller must not
// modify the slice.
func (l *Lease) Slots() []Slot { return l.slots }

// Bytes is the memory the lease holds (block sizes).
func (l *Lease) Bytes() uint64 { return l.bytes }

// Start starts the lease's clock: it expires ttl from now unless released
// first or busy at that time. Calling Start again moves the deadline. It
// fails with ErrLeaseEnded after release or expiry.
func (l *Lease) Start(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: lease ttl %v must be positive", ErrInvalidSize, ttl)
	}
	t := &l.a.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.state >= leaseReleased {
		return fmt.Errorf("lease %d: %w", l.id, ErrLeaseEnded)
	}
	l.deadline = time.Now().Add(ttl)
	l.state = leaseStarted
	return nil
}

// Deadline returns when the lease expires, and false if its clock has not
// been started.
func (l *Lease) Deadline() (time.Time, bool) {
	t := &l.a.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	return l.deadline, l.state == leaseStarted
}

// Acquire marks the lease busy: while busy it never expires and its slots
// are never freed. Each successful Acquire needs one Done. It fails with
// ErrLeaseEnded if the lease already ended (its slots may be reused, so the
// caller must not touch them).
func (l *Lease) Acquire() error {
	t := &l.a.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.state >= leaseReleased {
		return fmt.Errorf("lease %d: %w", l.id, ErrLeaseEnded)
	}
	l.busy++
	return nil
}

// Done ends one Acquire. If the lease was released meanwhile, the last
// Done frees its slots. A lease whose deadline passed while busy expires at
// the next sweep.
func (l *Lease) Done() {
	t := &l.a.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.busy == 0 {
		l.a.log.Error("staging: Lease.Done without Acquire", "lease", l.id)
		return
	}
	l.busy--
	if l.busy == 0 && l.state == leaseReleased {
		l.a.endLocked(l)
	}
}

// Release ends the lease and frees its slots, now or, if it is busy, at
// the last Done. It fails with ErrLeaseEnded if the lease was already
// released or expired.
func (l *Lease) Release() error {
	t := &l.a.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.state >= leaseReleased {
		return fmt.Errorf("lease %d: %w", l.id, ErrLeaseEnded)
	}
	if l.busy > 0 {
		l.state = leaseReleased
		return nil
	}
	l.a.endLocked(l)
	return nil
}

// Lease returns the live lease with the given id.
func (a *Arena) Lease(id uint64) (*Lease, bool) {
	a.leases.mu.Lock()
	defer a.leases.mu.Unlock()
	l, ok := a.leases.m[id]
	if !ok || l.state >= leaseReleased {
		return nil, false
	}
	return l, true
}

// ReleaseLease releases the lease with the given id (the owner's
// ReleaseOffloadBuffer). ErrUnknownLease if there is none: never existed,
// already released or expired.
func (a *Arena) ReleaseLease(id uint64) error {
	l, ok := a.Lease(id)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownLease, id)
	}
	return l.Release()
}

// Leases returns the number of live leases.
func (a *Arena) Leases() int {
	a.leases.mu.Lock()
	defer a.leases.mu.Unlock()
	return len(a.leases.m)
}

// Expirations returns how many leases have expired since New.
func (a *Arena) Expirations() uint64 { return a.leases.expired.Load() }

// ExpireLeases frees every started, non-busy lease whose deadline is not
// after now, calls Options.OnExpire for each, and returns how many expired.
// The sweeper and Alloc (when full) call it; callers may too.
func (a *Arena) ExpireLeases(now time.Time) int {
	type exp struct{ id, bytes uint64 }
	var fired []exp
	n := 0
	t := &a.leases
	t.mu.Lock()
	for _, l := range t.m {
		if l.state != leaseStarted || l.busy > 0 || l.deadline.After(now) {
			continue
		}
		if a.slotsInUse(l) {
			t.deferred.Add(1)
			continue
		}
		a.endLocked(l)
		n++
		if a.opts.OnExpire != nil {
			fired = append(fired, exp{l.id, l.bytes})
		}
	}
	t.expired.Add(uint64(n))
	t.mu.Unlock()
	for _, e := range fired {
		a.opts.OnExpire(e.id, e.bytes)
	}
	if n > 0 {
		a.log.Debug("staging: leases expired", "count", n)
	}
	return n
}

// slotsInUse asks Options.InUse about each of l's slots.
func (a *Arena) slotsInUse(l *Lease) bool {
	if a.opts.InUse == nil {
		return false
	}
	for _, s := range l.slots {
		if a.opts.InUse(s.Addr(), s.Cap()) {
			return true
		}
	}
	return false
}

// DeferredExpirations counts the times an expired lease was kept because
// Options.InUse reported one of its slots in use.
func (a *Arena) DeferredExpirations() uint64 { return a.leases.deferred.Load() }

// endLocked frees l's slots and forgets it. Needs a.leases.mu.
func (a *Arena) endLocked(l *Lease) {
	l.state = leaseEnded
	delete(a.leases.m, l.id)
	for _, s := range l.slots {
		if err := a.free(s, true); err != nil && err != ErrClosed {
			a.log.Error("staging: freeing lease slot", "lease", l.id, "err", err)
		}
	}
}
