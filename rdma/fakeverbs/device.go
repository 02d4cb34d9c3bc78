package fakeverbs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// device is an open context of a NIC. It owns the worker goroutine that
// executes work requests of its QPs in posting order.
type device struct {
	life
	nic *NIC

	mu    sync.Mutex // guards queue, head and the state of its QPs
	queue []item
	head  int
	held  []item // NIC.HoldNext items, run out of line when due
	kick  chan struct{}
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	async  *eventQueue[verbs.AsyncEvent]
	aserve sync.Mutex // serialises AsyncEvents
}

// item is one posted work request waiting for the worker.
type item struct {
	q   *qp // nil once flushed or discarded
	wr  verbs.WorkRequest
	due int64 // UnixNano before which it must not run; 0 = now
	// held items (NIC.HoldNext) survive their QP entering ERR.
	held bool
}

func newDevice(n *NIC) (*device, error) {
	async, err := newEventQueue[verbs.AsyncEvent]()
	if err != nil {
		return nil, err
	}
	d := &device{life: newLife(), nic: n, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		async: async, queue: make([]item, 0, 256)}
	d.wg.Add(1)
	go d.run()
	return d, nil
}

func (d *device) Info() verbs.DeviceInfo { return d.nic.Info() }

func (d *device) Query() (verbs.DeviceAttr, error) {
	if err := d.check(); err != nil {
		return verbs.DeviceAttr{}, err
	}
	return d.nic.cfg.Attr, nil
}

func (d *device) QueryPort(port uint8) (verbs.PortAttr, error) {
	if err := d.check(); err != nil {
		return verbs.PortAttr{}, err
	}
	if port != 1 {
		return verbs.PortAttr{}, fmt.Errorf("%w: port %d (the fake NIC has port 1)", verbs.ErrInvalidArgument, port)
	}
	c := &d.nic.cfg
	return verbs.PortAttr{State: d.nic.portState(), MaxMTU: verbs.MTU4096, ActiveMTU: c.ActiveMTU,
		LID: c.LID, SMLID: 1, GIDTableLen: len(c.GIDs), PKeyTableLen: 1, LinkLayer: c.LinkLayer,
		ActiveWidth: 2, ActiveSpeed: 64}, nil
}

func (d *device) QueryGID(port uint8, index int) (verbs.GIDEntry, error) {
	if err := d.check(); err != nil {
		return verbs.GIDEntry{}, err
	}
	if port != 1 || index < 0 || index >= len(d.nic.cfg.GIDs) {
		return verbs.GIDEntry{}, fmt.Errorf("%w: GID port %d index %d (table has %d entries)",
			verbs.ErrInvalidArgument, port, index, len(d.nic.cfg.GIDs))
	}
	return d.nic.cfg.GIDs[index], nil
}

func (d *device) AllocPD() (verbs.PD, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	d.children.Add(1)
	return &pd{life: newLife(), dev: d, lkeys: make(map[uint32]*mr), rkeys: make(map[uint32]*mr)}, nil
}

func (d *device) AsyncEvents(ctx context.Context, out []verbs.AsyncEvent) (int, error) {
	if len(out) == 0 {
		return 0, fmt.Errorf("%w: empty async event buffer", verbs.ErrInvalidArgument)
	}
	d.aserve.Lock()
	defer d.aserve.Unlock()
	for {
		if err := d.check(); err != nil {
			return 0, err
		}
		if n := d.async.take(out); n > 0 {
			return n, nil
		}
		if err := d.async.await(ctx); err != nil {
			return 0, err
		}
	}
}

func (d *device) pushAsync(ev verbs.AsyncEvent) {
	if d.closed.Load() {
		return
	}
	d.async.push(ev)
}

func (d *device) Close() error {
	if done, err := d.begin(); done {
		return err
	}
	d.stopWorker()
	d.nic.fabric.forget(d)
	d.async.close()
	d.end()
	return nil
}

func (d *device) stopWorker() {
	d.once.Do(func() { close(d.stop) })
	d.wg.Wait()
}

// enqueue appends a work request for the worker; d.mu is held.
func (d *device) enqueueLocked(q *qp, wr *verbs.WorkRequest, due int64, held bool) {
	if held {
		d.held = append(d.held, item{q: q, wr: *wr, due: due, held: true})
		return
	}
	d.queue = append(d.queue, item{q: q, wr: *wr, due: due})
}

func (d *device) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *device) run() {
	defer d.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		wait := d.process()
		if wait < 0 {
			select {
			case <-d.kick:
			case <-d.stop:
				return
			}
			continue
		}
		t.Reset(wait)
		select {
		case <-d.kick:
		case <-t.C:
		case <-d.stop:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// process executes every due work request in order. It returns how long
// until the next one is due, or -1 when the queue is empty.
func (d *device) process() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var now int64
	heldWait := d.processHeldLocked()
	for d.head < len(d.queue) {
		it := &d.queue[d.head]
		if it.q != nil && it.due != 0 {
			if now == 0 {
				now = time.Now().UnixNano()
			}
			if it.due > now {
				w := time.Duration(it.due - now)
				if heldWait >= 0 {
					w = min(w, heldWait)
				}
				return w
			}
		}
		if q := it.q; q != nil {
			it.q = nil // not flushed again if q enters ERR now
			wr := it.wr
			d.executeLocked(q, &wr)
		}
		d.head++
	}
	d.queue = d.queue[:0]
	d.head = 0
	return heldWait
}

// processHeldLocked runs the held items that are due and drops discarded
// ones. It returns how long until the next one is due, or -1 if none is
// left. d.mu is held.
func (d *device) processHeldLocked() time.Duration {
	if len(d.held) == 0 {
		return -1
	}
	now := time.Now().UnixNano()
	wait := time.Duration(-1)
	kept := d.held[:0]
	for _, it := range d.held {
		switch {
		case it.q == nil:
		case it.due <= now:
			wr := it.wr
			d.executeHeldLocked(it.q, &wr)
		default:
			if w := time.Duration(it.due - now); wait < 0 || w < wait {
				wait = w
			}
			kept = append(kept, it)
		}
	}
	clear(d.held[len(kept):])
	d.held = kept
	return wait
}

// forEachQueuedLocked calls f for the still-queued items of q, in order.
func (d *device) forEachQueuedLocked(q *qp, f func(*item)) {
	for i := d.head; i < len(d.queue); i++ {
		if d.queue[i].q == q {
			f(&d.queue[i])
		}
	}
	for i := range d.held {
		if d.held[i].q == q {
			f(&d.held[i])
		}
	}
}
