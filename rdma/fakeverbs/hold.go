package fakeverbs

import "time"

// HoldNext makes the next count work requests posted on this NIC (as
// requester) stay in the device for d before they execute. Unlike
// SetCompletionDelay, moving their QP to ERR does not flush them: they
// still execute when d has passed (reading or writing memory) and then
// complete, as a transfer the hardware had already started would. Only
// destroying (or resetting) the QP discards them. A count of 0 clears it.
// It models the device behaviour a transport must survive: memory stays
// in use until a work request's completion, flush or the QP's
// destruction.
func (n *NIC) HoldNext(count int, d time.Duration) {
	n.mu.Lock()
	n.holdFor = d
	n.mu.Unlock()
	n.holdN.Store(int64(max(count, 0)))
}

// takeHold consumes one HoldNext credit and returns its hold time, or 0.
func (n *NIC) takeHold() time.Duration {
	for {
		k := n.holdN.Load()
		if k <= 0 {
			return 0
		}
		if n.holdN.CompareAndSwap(k, k-1) {
			n.mu.Lock()
			d := n.holdFor
			n.mu.Unlock()
			return max(d, time.Nanosecond)
		}
	}
}

// SetInstant switches instant mode on or off. In instant mode every work
// request posted on this NIC completes successfully inside PostRW,
// without checking keys or bounds and without moving a byte; only the QP
// state, max_send_wr and the CQ are honoured. It exists for benchmarks
// that measure the CPU cost of the code driving the QPs, with as little
// of the fake's own work as possible in the figure.
func (n *NIC) SetInstant(on bool) { n.instant.Store(on) }
