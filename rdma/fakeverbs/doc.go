// Package fakeverbs is a pure-Go verbs.Provider for tests: the whole RDMA
// transport runs on it without hardware.
//
// A Fabric connects fake NICs in one process. Each host (an engine under
// test) gets a Provider listing its NICs; QPs of two hosts connect by QP
// number and GID exactly as over verbs, and READ/WRITE work requests check
// keys, bounds and access flags, then copy between the two MRs' memory.
//
// Modelled: QP states RESET->INIT->RTR->RTS->ERR (posting in RESET, INIT
// or RTR fails with verbs.ErrQPState; posting in ERR completes with
// WR_FLUSH_ERR, as verbs does), max_send_wr (verbs.ErrQueueFull), in-order
// completions per QP, flush of outstanding work requests on entering ERR,
// CQ depth and overrun, completion channels with a real fd (an eventfd) so
// a netpoller completion loop runs unchanged, and asynchronous events
// (PORT_ERR, PORT_ACTIVE, CQ_ERR). Completions are produced by one worker
// goroutine per open device; Close stops it.
//
// Faults are injected through the NIC: NIC.FailNext (remote access error,
// retry exceeded, lost completion, CQ overrun), NIC.SetCompletionDelay and
// NIC.SetPortState (port down: every work request on the NIC or aimed at it
// fails with RETRY_EXC_ERR and its QP enters ERR). NIC.Stats counts bytes
// per NIC so tests can check multi-NIC spreading.
//
// Not modelled: receive queues, SEND, atomics, inline data, PSNs, the
// responder QP entering ERR on a remote access violation, and memory
// placement (MRs may be Go memory here, unlike verbs).
package fakeverbs
