package staging

import (
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Arena is one contiguous region of staging memory and its slot
// allocator. All methods are safe for concurrent use.
type Arena struct {
	mem    []byte
	base   uint64
	pinned bool
	huge   bool
	name   string
	log    *slog.Logger

	mu     sync.Mutex // guards b, closed
	b      buddy
	closed bool

	used  atomic.Int64 // bytes in allocated blocks
	slots atomic.Int64 // allocated blocks

	leases leaseTable
	opts   Options

	stop      chan struct{}
	sweepDone chan struct{}
	metrics   *metrics
	closeOnce sync.Mutex
	unmapped  bool
}

// New maps, advises and locks an arena as opts says. See MemlockError for
// the error when the memory cannot be locked.
func New(opts Options) (*Arena, error) {
	if opts.Size == 0 {
		return nil, fmt.Errorf("%w: arena size is 0", ErrInvalidSize)
	}
	if opts.Size > (1<<31-1)*PageSize {
		return nil, fmt.Errorf("%w: arena size %d exceeds %d", ErrInvalidSize, opts.Size, uint64(1<<31-1)*PageSize)
	}
	if opts.Name == "" {
		opts.Name = "default"
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("arena", opts.Name)
	size := (opts.Size + PageSize - 1) &^ (PageSize - 1)
	m, err := mapArena(size, opts, log)
	if err != nil {
		return nil, err
	}
	a := &Arena{
		mem:    m.mem,
		base:   uint64(uintptr(unsafe.Pointer(unsafe.SliceData(m.mem)))),
		pinned: m.pinned,
		huge:   m.huge,
		name:   opts.Name,
		log:    log,
		opts:   opts,
	}
	npages := int32(len(m.mem) >> pageShift)
	maxOrder := bits.Len32(uint32(npages)) - 1
	if opts.MaxSlot != 0 {
		if opts.MaxSlot < PageSize {
			_ = unmapArena(m.mem)
			return nil, fmt.Errorf("%w: MaxSlot %d is below the page size %d", ErrInvalidSize, opts.MaxSlot, PageSize)
		}
		if k := bits.Len64(opts.MaxSlot>>pageShift) - 1; k < maxOrder {
			maxOrder = k
		}
	}
	a.b.init(npages, maxOrder)
	a.leases.init()
	if opts.Registerer != nil {
		mt, err := newMetrics(a, opts.Registerer)
		if err != nil {
			_ = unmapArena(m.mem)
			return nil, err
		}
		a.metrics = mt
	}
	if opts.SweepInterval > 0 {
		a.stop = make(chan struct{})
		a.sweepDone = make(chan struct{})
		go a.sweep(opts.SweepInterval)
	}
	return a, nil
}

// Bytes returns the whole arena, for registration with transports. The
// slice stays valid until Close succeeds; the caller must unregister it from
// every transport before closing.
func (a *Arena) Bytes() []byte { return a.mem }

// Addr is the virtual address of Bytes()[0].
func (a *Arena) Addr() uint64 { return a.base }

// Len is the arena size in bytes.
func (a *Arena) Len() uint64 { return uint64(len(a.mem)) }

// Pinned reports whether the arena is locked in RAM.
func (a *Arena) Pinned() bool { return a.pinned }

// HugePages reports whether the arena is backed by explicit huge pages
// (MAP_HUGETLB).
func (a *Arena) HugePages() bool { return a.huge }

// MaxSlot is the largest slot Alloc can return.
func (a *Arena) MaxSlot() uint64 { return PageSize << a.b.maxOrder }

// Used returns the bytes held by allocated slots (rounded up to their
// block sizes).
func (a *Arena) Used() uint64 { return uint64(a.used.Load()) }

// Outstanding returns the number of allocated slots.
func (a *Arena) Outstanding() int { return int(a.slots.Load()) }

// Alloc returns a slot of at least n bytes, aligned to PageSize (to its
// block size, in fact). The slot's memory is not zeroed. When the arena is
// full, Alloc first expires the leases whose time is up and tries again,
// then fails with ErrNoSpace. It does not allocate Go memory.
func (a *Arena) Alloc(n uint64) (Slot, error) {
	if n > a.MaxSlot() {
		return Slot{}, fmt.Errorf("%w: slot of %d bytes exceeds the largest slot %d", ErrInvalidSize, n, a.MaxSlot())
	}
	k := orderFor(n)
	s, err := a.tryAlloc(n, k)
	if err == ErrNoSpace {
		if a.ExpireLeases(time.Now()) > 0 {
			s, err = a.tryAlloc(n, k)
		}
		if err == ErrNoSpace {
			return Slot{}, fmt.Errorf("%w: no free block of %d bytes for %d requested (%d of %d bytes used)", ErrNoSpace, uint64(PageSize)<<k, n, a.Used(), a.Len())
		}
	}
	return s, err
}

func (a *Arena) tryAlloc(n uint64, k int) (Slot, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return Slot{}, ErrClosed
	}
	i := a.b.alloc(k)
	if i < 0 {
		a.mu.Unlock()
		return Slot{}, ErrNoSpace
	}
	g := a.b.gen[i]
	a.mu.Unlock()
	a.used.Add(PageSize << k)
	a.slots.Add(1)
	return Slot{a: a, page: i, order: uint8(k), gen: g, n: n}, nil
}

// Free returns s to the arena. The caller must no longer use s.Bytes().
// Freeing a slot twice, a zero Slot or another arena's slot fails with
// ErrInvalidSlot and changes nothing; so does freeing a slot that belongs
// to a Lease (release the lease instead).
func (a *Arena) Free(s Slot) error { return a.free(s, false) }

// free returns s; fromLease is set when a lease frees its own slots.
func (a *Arena) free(s Slot, fromLease bool) error {
	if s.a != a {
		return fmt.Errorf("%w: slot belongs to another arena", ErrInvalidSlot)
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	if !a.b.owns(s.page, int(s.order), s.gen) {
		a.mu.Unlock()
		return fmt.Errorf("%w: slot at offset %#x (%d bytes) is not allocated", ErrInvalidSlot, uint64(s.page)<<pageShift, s.n)
	}
	if a.b.leased(s.page) != fromLease {
		a.mu.Unlock()
		return fmt.Errorf("%w: slot at offset %#x belongs to a lease; release the lease instead", ErrInvalidSlot, uint64(s.page)<<pageShift)
	}
	a.b.free(s.page)
	a.mu.Unlock()
	a.used.Add(-(PageSize << s.order))
	a.slots.Add(-1)
	return nil
}

// Close unmaps the arena. It refuses with ErrOutstanding, leaving the arena
// open, while any slot is allocated (leases included). Close is idempotent:
// after a successful close it returns nil. The caller must have
// unregistered the arena from every transport.
func (a *Arena) Close() error { return a.close(false) }

// ForceClose drops every lease and outstanding slot and unmaps the arena.
// By calling it the caller asserts that no slice returned by Slot.Bytes or
// Bytes is still in use. It still refuses with ErrLeaseBusy while a lease
// is marked busy, since a transfer is then known to be touching the memory.
// Idempotent like Close.
func (a *Arena) ForceClose() error { return a.close(true) }

func (a *Arena) close(force bool) error {
	a.closeOnce.Lock()
	defer a.closeOnce.Unlock()
	if a.unmapped {
		return nil
	}
	a.leases.mu.Lock()
	busy := a.leases.busyCount()
	a.mu.Lock()
	n := a.b.nused
	if busy > 0 {
		a.mu.Unlock()
		a.leases.mu.Unlock()
		return fmt.Errorf("%w: %d leases in flight", ErrLeaseBusy, busy)
	}
	if n > 0 && !force {
		a.mu.Unlock()
		a.leases.mu.Unlock()
		return fmt.Errorf("%w: %d slots (%d bytes) still allocated, %d of them in %d leases", ErrOutstanding, n, a.b.used<<pageShift, a.leases.slotCount(), len(a.leases.m))
	}
	a.closed = true
	a.mu.Unlock()
	a.leases.dropAll()
	a.leases.mu.Unlock()

	if a.stop != nil {
		close(a.stop)
		<-a.sweepDone
	}
	if a.metrics != nil {
		a.metrics.unregister()
	}
	a.unmapped = true
	if err := unmapArena(a.mem); err != nil {
		return fmt.Errorf("staging: unmap arena %q: %w", a.name, err)
	}
	return nil
}

func (a *Arena) sweep(every time.Duration) {
	defer close(a.sweepDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case now := <-t.C:
			a.ExpireLeases(now)
		}
	}
}
