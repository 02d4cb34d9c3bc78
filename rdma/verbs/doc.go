// Package verbs is Ferry's only cgo: a thin layer over libibverbs behind a
// small Go interface, so that the RDMA transport can run on real NICs
// (System) or on the pure-Go fake in rdma/fakeverbs.
//
// The object model follows verbs: a Provider lists and opens Devices; a
// Device allocates protection domains (PD), completion channels and
// completion queues (CQ); a PD registers memory regions (MR) and creates
// reliable-connected queue pairs (QP). The data path is batch-first:
// QP.PostRW posts a whole chain of one-sided READ/WRITE work requests in one
// call, and CQ.Poll drains up to len(out) completions in one call. On the
// cgo build each of those is exactly one C call, whatever the batch size.
//
// # Memory
//
// Memory handed to PD.RegMR must not be Go heap memory: the NIC reads and
// writes it behind the Go runtime's back, and the collector may move or free
// heap objects. Use memory from mmap (the staging package) or C.malloc. The
// caller owns the memory; it must stay mapped until the MR is closed. Work
// requests carry plain addresses and keys, never Go pointers, and a WRID is
// an opaque integer the caller maps back to its own state (a slot index).
//
// # Lifetime
//
// Every handle has an idempotent Close. Close children before parents (MRs
// and QPs before their PD, QPs before their CQs, CQs before their channel,
// everything before the Device); closing a parent that still has children
// fails with ErrBusy. Handles that are garbage collected without Close are
// released by a cleanup as a safety net and counted by LiveHandles, so tests
// can check that nothing leaked.
//
// # No hardware
//
// A kernel without RDMA makes libibverbs report ENOSYS from
// ibv_get_device_list. Ferry treats that, and an empty device list, as "no
// devices": Devices returns an error that matches ErrNoDevice and
// ErrNotSupported, never a hard failure. Probe explains why RDMA is not
// usable (no devices, no /dev/infiniband, memlock too small) and caches the
// answer. Builds without cgo, or for other systems, get a stub whose every
// entry point returns ErrNotSupported.
package verbs
