package staging

import "errors"

// Sentinel errors. Functions wrap them with %w and add the values that were
// wrong; match them with errors.Is.
var (
	// ErrNotSupported means staging memory cannot be mapped on this
	// platform.
	ErrNotSupported = errors.New("staging: not supported on this platform")
	// ErrInvalidSize means a requested arena or slot size is out of range.
	ErrInvalidSize = errors.New("staging: invalid size")
	// ErrNoSpace means no free block is large enough for the request, even
	// after expired leases were reclaimed. It is temporary: retry after
	// slots are freed.
	ErrNoSpace = errors.New("staging: arena full")
	// ErrInvalidSlot means a slot passed to Free is not outstanding: it was
	// already freed (double free), belongs to another arena, or was never
	// allocated.
	ErrInvalidSlot = errors.New("staging: invalid slot (double free or foreign slot)")
	// ErrClosed means the arena is closed.
	ErrClosed = errors.New("staging: arena closed")
	// ErrOutstanding means Close was refused because slots are still
	// allocated; free them first or use ForceClose.
	ErrOutstanding = errors.New("staging: slots still outstanding")
	// ErrLeaseBusy means the operation was refused because a lease is
	// marked busy (a transfer or load is in flight on its slots).
	ErrLeaseBusy = errors.New("staging: lease busy")
	// ErrLeaseEnded means the lease was already released or expired.
	ErrLeaseEnded = errors.New("staging: lease released or expired")
	// ErrUnknownLease means no lease has the given id (never existed,
	// released or expired).
	ErrUnknownLease = errors.New("staging: unknown lease")
	// ErrMemlock is wrapped by *MemlockError: the arena could not be
	// locked in memory.
	ErrMemlock = errors.New("staging: cannot lock memory")
)
