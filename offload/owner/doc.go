// Package owner is the offload owner: the process that holds object-store
// credentials, keeps a pinned staging arena registered (remote-accessible)
// with its transfer engine, and serves the owner RPCs.
//
// Read path: BatchGetOffloadObject allocates one staging slot per key,
// loads the objects straight into the slots (filestorage.BatchLoad), then
// starts the lease and returns the slot addresses, the owner's segment
// name and the lease TTL. The requester READs the slots with its engine
// and calls ReleaseOffloadBuffer.
//
// Write path: BatchPutStart allocates slots for the requester to WRITE
// into; BatchPutCommit uploads them (filestorage.BatchOffload) and
// reports the stored keys to the master (NotifyOffloadSuccess).
//
// Leases. Unlike Mooncake, whose lease clock starts at allocation so the
// object-store load eats into it, a lease starts when the slots are handed
// to the requester. The TTL the requester is told (Config.GCTTL) is
// shorter than the one the arena enforces: slots are kept for an extra
// grace period (Options.LeaseGrace, default TTL + RPC timeout) after the
// advertised deadline. The requester (package client) stops trusting a
// transfer at the advertised deadline, counted from the answer's arrival,
// and waits at most its RPC timeout for requests already on the wire to
// end, so a slot is not reused while a transfer of a requester using the
// same timeouts can still touch it. Beyond that, an expired lease is not
// freed while the engine reports a peer's request moving bytes from or to
// one of its slots (Engine.Serving: exact for TCP, whose server moves
// the bytes; RDMA peers read with the NIC, unseen, and rely on the
// deadlines alone). A put batch is marked busy while it is uploaded and
// never expires then.
//
// Liveness. After mounting, a goroutine pings the master every
// Options.PingInterval (default 1 s, well inside the master's client TTL);
// uploads and rescans run elsewhere and never delay a ping. When the
// master answers "not mounted" (it restarted or expired the owner) the
// owner mounts again and rescans its store in the background so its
// objects become readable again. Close unmounts first so the master stops
// advertising the owner at once.
package owner
