package staging

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configure New. The zero value of every field but Size is usable.
type Options struct {
	// Size is the arena size in bytes. It is rounded up to PageSize (to
	// 2 MiB when HugePages is set and explicit huge pages are used).
	Size uint64
	// MaxSlot caps the largest slot. 0 means the largest power of two
	// that fits in the arena. A smaller cap keeps large requests from
	// splitting every block.
	MaxSlot uint64
	// HugePages asks for huge pages: MAP_HUGETLB when the system has them
	// reserved, else transparent huge pages (MADV_HUGEPAGE). Each fallback
	// is logged.
	HugePages bool
	// Unlocked skips mlock. The arena still works but may be paged out,
	// which RDMA cannot tolerate; meant for small test setups. Logged.
	Unlocked bool
	// Name labels the arena's metrics and log lines ("arena" label).
	// Defaults to "default".
	Name string
	// Logger receives fallbacks and warnings. nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the arena's metrics. nil means no metrics. The
	// collectors are unregistered on Close.
	Registerer prometheus.Registerer
	// SweepInterval runs a goroutine that expires leases at this period.
	// 0 means lazy expiry only: leases expire when an allocation finds no
	// room and when ExpireLeases is called.
	SweepInterval time.Duration
	// OnExpire, if set, is called (without locks held) for every lease that
	// expired, with its id and the bytes it held. It must not block for
	// long: it runs on the sweeper or the allocating goroutine.
	OnExpire func(leaseID uint64, bytes uint64)
	// InUse, if set, is asked before the slots of an expired lease are
	// freed whether anything still uses memory [addr, addr+length) of
	// one of them (a transport serving a peer's request from it). Such
	// a lease stays allocated, and expires at a later ExpireLeases that
	// finds all its slots idle. It is called with the arena's lease
	// lock held: it must be quick and must not call into the arena.
	InUse func(addr, length uint64) bool
}
