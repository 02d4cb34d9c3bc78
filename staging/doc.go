// Package staging provides pinned staging memory: one arena per owner,
// mapped anonymously, excluded from fork (MADV_DONTFORK) and locked in RAM
// (mlock), carved into 4 KiB-aligned slots by a buddy allocator, and grouped
// into leases that expire.
//
// # Lifecycle
//
// New maps and locks the arena. The arena's user registers it once with
// every installed transport (Arena.Bytes, Arena.Addr): this package does not
// know about the engine. Slots are handed out with Arena.Alloc and returned
// with Arena.Free; a Slot's bytes (Slot.Bytes) are valid from Alloc until
// the slot is freed, its lease ends, or the arena is force-closed. Nothing
// in this package keeps a reference to the slices it returns, so the caller
// must stop using a slice before it frees the slot.
//
// # Leases
//
// A Lease is a group of slots owned together, typically one batch an
// offload owner fills from object storage and a requester then reads over
// RDMA. A lease is created untimed, started with Lease.Start when the slots
// are handed to the requester, and ends by Lease.Release or by expiry. A
// lease marked busy (Lease.Acquire) never expires and, if released while
// busy, frees its slots only when the last Lease.Done runs.
//
// # Memory locking
//
// mlock needs RLIMIT_MEMLOCK at least as large as the arena unless the
// process has CAP_IPC_LOCK. A failure is a *MemlockError whose message says
// how much was needed, the current limit and how to raise it. Options.Unlocked
// skips locking (logged) for small test setups; such an arena reports
// Pinned() == false.
//
// The allocator's bookkeeping lives in Go memory beside the arena, never in
// the arena itself: peers may write the arena over RDMA and must not be able
// to corrupt the free lists.
package staging
