//go:build linux && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ferrylabs/ferry/rdma/verbs/fdwait"
)

type compChannel struct {
	h    handle
	dev  *device
	ch   *C.struct_ibv_comp_channel
	wait *fdwait.Waiter

	mu  sync.Mutex
	cqs map[*C.struct_ibv_cq]*cq // CQs bound to this channel, for GetEvent
}

func (d *device) CreateCompChannel() (CompChannel, error) {
	if err := d.h.use(); err != nil {
		return nil, err
	}
	defer d.h.done()
	ch, err := C.ibv_create_comp_channel(d.ctx)
	if ch == nil {
		return nil, verbsErr("ibv_create_comp_channel", err)
	}
	w, werr := fdwait.New(int(C.ferry_comp_fd(ch)))
	if werr != nil {
		C.ibv_destroy_comp_channel(ch)
		return nil, fmt.Errorf("verbs: completion channel fd: %w", werr)
	}
	c := &compChannel{dev: d, ch: ch, wait: w, cqs: make(map[*C.struct_ibv_cq]*cq)}
	d.h.children.Add(1)
	track(&c.h, c, "comp_channel", ch, func(ch *C.struct_ibv_comp_channel) { C.ibv_destroy_comp_channel(ch) })
	return c, nil
}

func (c *compChannel) Fd() int { return int(C.ferry_comp_fd(c.ch)) }

func (c *compChannel) Wait(ctx context.Context) error {
	if err := c.wait.Wait(ctx); err != nil {
		if errors.Is(err, fdwait.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}

func (c *compChannel) GetEvent() (CQ, error) {
	if err := c.h.use(); err != nil {
		return nil, err
	}
	defer c.h.done()
	var ccq *C.struct_ibv_cq
	var cctx unsafe.Pointer
	rc, err := C.ibv_get_cq_event(c.ch, &ccq, &cctx)
	if rc != 0 {
		if errors.Is(err, syscall.EAGAIN) {
			return nil, ErrWouldBlock
		}
		return nil, verbsErr("ibv_get_cq_event", err)
	}
	c.mu.Lock()
	q := c.cqs[ccq]
	c.mu.Unlock()
	if q == nil {
		// Cannot happen while CQs unregister before destroy; ack so the
		// event does not block a later ibv_destroy_cq.
		C.ibv_ack_cq_events(ccq, 1)
		return nil, fmt.Errorf("%w: event for an unknown CQ", ErrClosed)
	}
	q.evMu.Lock()
	q.unacked++
	q.evMu.Unlock()
	return q, nil
}

func (c *compChannel) Close() error {
	if done, err := c.h.beginClose(); done {
		return err
	}
	c.wait.Close()
	var err error
	if rc := C.ibv_destroy_comp_channel(c.ch); rc != 0 {
		err = verbsErr("ibv_destroy_comp_channel", syscall.Errno(rc))
	}
	c.h.endClose(err)
	if err == nil {
		c.dev.h.children.Add(-1)
	}
	return err
}

type cq struct {
	h     handle
	dev   *device
	ch    *compChannel // nil for a poll-only CQ
	cq    *C.struct_ibv_cq
	depth int

	evMu    sync.Mutex
	unacked int // events returned by GetEvent and not yet acknowledged
}

func (d *device) CreateCQ(depth int, ch CompChannel) (CQ, error) {
	if depth < 1 {
		return nil, fmt.Errorf("%w: CQ depth %d", ErrInvalidArgument, depth)
	}
	var cc *compChannel
	var cch *C.struct_ibv_comp_channel
	if ch != nil {
		var ok bool
		cc, ok = ch.(*compChannel)
		if !ok || cc.dev != d {
			return nil, fmt.Errorf("%w: completion channel of another device or provider", ErrInvalidArgument)
		}
		if err := cc.h.use(); err != nil {
			return nil, err
		}
		defer cc.h.done()
		cch = cc.ch
	}
	if err := d.h.use(); err != nil {
		return nil, err
	}
	defer d.h.done()
	c, err := C.ibv_create_cq(d.ctx, C.int(depth), nil, cch, 0)
	if c == nil {
		return nil, verbsErr(fmt.Sprintf("ibv_create_cq(%d)", depth), err)
	}
	q := &cq{dev: d, ch: cc, cq: c, depth: int(C.ferry_cq_depth(c))}
	d.h.children.Add(1)
	if cc != nil {
		cc.h.children.Add(1)
		cc.mu.Lock()
		cc.cqs[c] = q
		cc.mu.Unlock()
	}
	track(&q.h, q, "cq", c, func(c *C.struct_ibv_cq) { C.ibv_destroy_cq(c) })
	return q, nil
}

func (q *cq) Depth() int { return q.depth }

func (q *cq) Poll(out []Completion) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	if err := q.h.use(); err != nil {
		return 0, err
	}
	defer q.h.done()
	cgoCalls.Add(1)
	n, err := C.ferry_poll(q.cq, (*C.struct_ferry_wc)(unsafe.Pointer(&out[0])), C.int(len(out)))
	if n < 0 {
		return 0, verbsErr("ibv_poll_cq", err)
	}
	return int(n), nil
}

func (q *cq) ReqNotify(solicitedOnly bool) error {
	if err := q.h.use(); err != nil {
		return err
	}
	defer q.h.done()
	s := C.int(0)
	if solicitedOnly {
		s = 1
	}
	cgoCalls.Add(1)
	if rc, err := C.ferry_req_notify(q.cq, s); rc != 0 {
		return verbsErr("ibv_req_notify_cq", err)
	}
	return nil
}

func (q *cq) AckEvents(n int) {
	if n <= 0 {
		return
	}
	if q.h.use() != nil {
		return
	}
	defer q.h.done()
	q.evMu.Lock()
	if n > q.unacked {
		n = q.unacked
	}
	q.unacked -= n
	q.evMu.Unlock()
	if n > 0 {
		C.ibv_ack_cq_events(q.cq, C.uint(n))
	}
}

func (q *cq) Close() error {
	if done, err := q.h.beginClose(); done {
		return err
	}
	// ibv_destroy_cq waits for every event to be acknowledged.
	q.evMu.Lock()
	if q.unacked > 0 {
		C.ibv_ack_cq_events(q.cq, C.uint(q.unacked))
		q.unacked = 0
	}
	q.evMu.Unlock()
	var err error
	if rc := C.ibv_destroy_cq(q.cq); rc != 0 {
		err = verbsErr("ibv_destroy_cq", syscall.Errno(rc))
	}
	q.h.endClose(err)
	if err == nil {
		if q.ch != nil {
			q.ch.mu.Lock()
			delete(q.ch.cqs, q.cq)
			q.ch.mu.Unlock()
			q.ch.h.children.Add(-1)
		}
		q.dev.h.children.Add(-1)
	}
	return err
}
