package fakeverbs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/rdma/verbs/fdwait"
)

type channel struct {
	life
	dev  *device
	not  notifier
	wait *fdwait.Waiter

	mu     sync.Mutex
	events []*cq // pending events, oldest first
}

func (d *device) CreateCompChannel() (verbs.CompChannel, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	not, err := newNotifier()
	if err != nil {
		return nil, err
	}
	w, err := fdwait.New(not.fd)
	if err != nil {
		not.close()
		return nil, fmt.Errorf("fakeverbs: %w", err)
	}
	d.children.Add(1)
	return &channel{life: newLife(), dev: d, not: not, wait: w}, nil
}

func (c *channel) Fd() int { return c.not.fd }

func (c *channel) Wait(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := c.wait.Wait(ctx); err != nil {
		if errors.Is(err, fdwait.ErrClosed) {
			return verbs.ErrClosed
		}
		return err
	}
	return nil
}

func (c *channel) GetEvent() (verbs.CQ, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.events) == 0 {
		c.mu.Unlock()
		return nil, verbs.ErrWouldBlock
	}
	q := c.events[0]
	c.events = c.events[:copy(c.events, c.events[1:])]
	if len(c.events) == 0 {
		c.not.clear()
	}
	c.mu.Unlock()
	q.mu.Lock()
	q.unacked++
	q.mu.Unlock()
	return q, nil
}

// signal queues an event for q and makes the fd readable.
func (c *channel) signal(q *cq) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return
	}
	c.events = append(c.events, q)
	c.not.set()
}

func (c *channel) Close() error {
	if done, err := c.begin(); done {
		return err
	}
	c.wait.Close()
	c.mu.Lock()
	c.not.close()
	c.events = nil
	c.mu.Unlock()
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
		q.ch.mu.Lock()
		ev := q.ch.events[:0]
		for _, e := range q.ch.events {
			if e != q {
				ev = append(ev, e)
			}
		}
		q.ch.events = ev
		if len(ev) == 0 {
			q.ch.not.clear()
		}
		q.ch.mu.Unlock()
		q.ch.children.Add(-1)
	}
	q.dev.children.Add(-1)
	q.end()
	return nil
}
