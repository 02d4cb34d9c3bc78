package rdma

import "github.com/ferrylabs/ferry/rdma/verbs"

// eventLoop reads NIC n's asynchronous events: a port or device error
// takes the NIC out of rotation and closes its endpoints (their work
// flushes and moves to other rails); PORT_ACTIVE brings it back.
func (t *Transport) eventLoop(n *nic) {
	evs := make([]verbs.AsyncEvent, 16)
	for {
		k, err := n.dev.AsyncEvents(t.ctx, evs)
		if err != nil {
			return
		}
		for _, ev := range evs[:k] {
			switch ev.Type {
			case verbs.EventPortErr, verbs.EventDeviceFatal, verbs.EventCQErr, verbs.EventWQFatal, verbs.EventLIDChange:
				t.log.Warn("rdma: NIC out of rotation", "nic", n.name, "event", ev.Type.String())
				n.down.Store(true)
				n.mu.Lock()
				var eps []*endpoint
				for _, ep := range n.eps {
					eps = append(eps, ep)
				}
				n.mu.Unlock()
				for _, ep := range eps {
					ep.kill(errNICDown)
				}
			case verbs.EventPortActive:
				t.log.Info("rdma: NIC port active again", "nic", n.name)
				n.down.Store(false)
			}
		}
	}
}
