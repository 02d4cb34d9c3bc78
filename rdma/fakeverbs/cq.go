package fakeverbs

import (
	"context"
	"fmt"
	"sync"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

type channel struct {
	life
	dev    *device
	events *eventQueue[*cq]
}

func (d *device) CreateCompChannel() (verbs.CompChannel, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	ev, err := newEventQueue[*cq]()
	if err != nil {
		return nil, err
	}
	d.children.Add(1)
	return &channel{life: newLife(), dev: d, events: ev}, nil
}

func (c *channel) Fd() int { return c.events.fd() }

func (c *channel) Wait(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.events.await(ctx)
}

func (c *channel) GetEvent() (verbs.CQ, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var one [1]*cq
	if c.events.take(one[:]) == 0 {
		return nil, verbs.ErrWouldBlock
	}
	q := one[0]
	q.mu.Lock()
	q.unacked++
	q.mu.Unlock()
	return q, nil
}

// signal queues an event for q and makes the fd readable.
func (c *channel) signal(q *cq) {
	if c.closed.Load() {
		return
	}
	c.events.push(q)
}

func (c *channel) Close() error {
	if done, err := c.begin(); done {
		return err
	}
	c.events.close()
	c.dev.children.Add(-1)
	c.end()
	return nil
}

type cq struct {
	life
	dev   *device
	ch    *channel
	depth int

	mu      sync.Mutex
	ring    []verbs.Completion
	head, n int
	armed   bool
	overrun bool
	unacked int
}

func (d *device) CreateCQ(depth int, ch verbs.CompChannel) (verbs.CQ, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if depth < 1 || depth > d.nic.cfg.Attr.MaxCQE {
		return nil, fmt.Errorf("%w: CQ depth %d (1..%d)", verbs.ErrInvalidArgument, depth, d.nic.cfg.Attr.MaxCQE)
	}
	var c *channel
	if ch != nil {
		var ok bool
		c, ok = ch.(*channel)
		if !ok || c.dev != d {
			return nil, fmt.Errorf("%w: completion channel of another device or provider", verbs.ErrInvalidArgument)
		}
		if err := c.check(); err != nil {
			return nil, err
		}
		c.children.Add(1)
	}
	d.children.Add(1)
	return &cq{life: newLife(), dev: d, ch: c, depth: depth, ring: make([]verbs.Completion, depth)}, nil
}

func (q *cq) Depth() int { return q.depth }

func (q *cq) Poll(out []verbs.Completion) (int, error) {
	if err := q.check(); err != nil {
		return 0, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.overrun {
		return 0, verbs.ErrCQOverrun
	}
	k := 0
	for k < len(out) && q.n > 0 {
		out[k] = q.ring[q.head]
		q.head++
		if q.head == q.depth {
			q.head = 0
		}
		q.n--
		k++
	}
	return k, nil
}

func (q *cq) ReqNotify(solicitedOnly bool) error {
	if err := q.check(); err != nil {
		return err
	}
	q.mu.Lock()
	q.armed = true
	q.mu.Unlock()
	return nil
}

func (q *cq) AckEvents(n int) {
	q.mu.Lock()
	if n > q.unacked {
		n = q.unacked
	}
	if n > 0 {
		q.unacked -= n
	}
	q.mu.Unlock()
}

// push adds a completion. A full CQ overruns: the completion is lost,
// polls fail from then on and the device gets a CQ_ERR event.
func (q *cq) push(c verbs.Completion) {
	q.mu.Lock()
	if q.closed.Load() || q.overrun {
		q.mu.Unlock()
		return
	}
	if q.n == q.depth {
		q.mu.Unlock()
		q.setOverrun()
		return
	}
	i := q.head + q.n
	if i >= q.depth {
		i -= q.depth
	}
	q.ring[i] = c
	q.n++
	notify := q.armed && q.ch != nil
	q.armed = false
	q.mu.Unlock()
	if notify {
		q.ch.signal(q)
	}
}

func (q *cq) setOverrun() {
	q.mu.Lock()
	was := q.overrun
	q.overrun = true
	q.mu.Unlock()
	if !was {
		q.dev.pushAsync(verbs.AsyncEvent{Type: verbs.EventCQErr})
	}
}

func (q *cq) Close() error {
	if done, err := q.begin(); done {
		return err
	}
	if q.ch != nil {
		q.ch.events.drop(func(e *cq) bool { return e == q })
		q.ch.children.Add(-1)
	}
	q.dev.children.Add(-1)
	q.end()
	return nil
}
