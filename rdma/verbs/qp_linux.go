//go:build linux && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

type qp struct {
	h          handle
	pd         *pd
	send, recv *cq
	qp         *C.struct_ibv_qp
	num        uint32
	caps       QPCaps
}

func (p *pd) CreateQP(typ QPType, caps QPCaps, send, recv CQ) (QP, error) {
	if typ != QPTypeRC {
		return nil, fmt.Errorf("%w: QP type %d (only RC is supported)", ErrInvalidArgument, typ)
	}
	if caps.MaxSendWR == 0 || caps.MaxSGE == 0 {
		return nil, fmt.Errorf("%w: QP caps %+v need max_send_wr and max_sge >= 1", ErrInvalidArgument, caps)
	}
	sc, ok1 := send.(*cq)
	rc, ok2 := recv.(*cq)
	if !ok1 || !ok2 || sc.dev != p.dev || rc.dev != p.dev {
		return nil, fmt.Errorf("%w: CQs must come from the PD's device", ErrInvalidArgument)
	}
	hs := [3]*handle{&p.h, &sc.h, &rc.h}
	if sc == rc {
		hs[2] = nil // never read-lock one handle twice
	}
	for _, h := range hs {
		if h == nil {
			continue
		}
		if err := h.use(); err != nil {
			return nil, err
		}
		defer h.done()
	}
	c := C.struct_ferry_caps{max_send_wr: C.uint32_t(caps.MaxSendWR), max_recv_wr: C.uint32_t(caps.MaxRecvWR),
		max_sge: C.uint32_t(caps.MaxSGE), max_inline: C.uint32_t(caps.MaxInline)}
	q, err := C.ferry_create_qp(p.pd, sc.cq, rc.cq, &c)
	if q == nil {
		return nil, verbsErr(fmt.Sprintf("ibv_create_qp(%+v)", caps), err)
	}
	w := &qp{pd: p, send: sc, recv: rc, qp: q, num: uint32(C.ferry_qp_num(q)),
		caps: QPCaps{MaxSendWR: uint32(c.max_send_wr), MaxRecvWR: uint32(c.max_recv_wr),
			MaxSGE: uint32(c.max_sge), MaxInline: uint32(c.max_inline)}}
	p.h.children.Add(1)
	sc.h.children.Add(1)
	rc.h.children.Add(1)
	track(&w.h, w, "qp", q, func(q *C.struct_ibv_qp) { C.ibv_destroy_qp(q) })
	return w, nil
}

func (q *qp) Num() uint32  { return q.num }
func (q *qp) Caps() QPCaps { return q.caps }

func (q *qp) State() (QPState, error) {
	if err := q.h.use(); err != nil {
		return 0, err
	}
	defer q.h.done()
	var s C.uint32_t
	if rc, err := C.ferry_qp_state(q.qp, &s); rc != 0 {
		return 0, verbsErr("ibv_query_qp", err)
	}
	return QPState(s), nil
}

// modifyErr maps EINVAL from ibv_modify_qp (a transition the QP's state
// does not allow, or bad attributes such as a wrong GID index) to
// ErrQPState while keeping the errno.
func modifyErr(call string, err error) error {
	if errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%w: %s: %w", ErrQPState, call, err)
	}
	return verbsErr(call, err)
}

func (q *qp) ToInit(a InitAttr) error {
	if a.Port == 0 {
		return fmt.Errorf("%w: INIT port 0 (ports are 1-based)", ErrInvalidArgument)
	}
	if err := q.h.use(); err != nil {
		return err
	}
	defer q.h.done()
	if rc, err := C.ferry_qp_to_init(q.qp, C.uint8_t(a.Port), C.uint16_t(a.PKeyIndex), C.int(a.Access)); rc != 0 {
		return modifyErr("ibv_modify_qp(INIT)", err)
	}
	return nil
}

func (q *qp) ToRTR(a RTRAttr) error {
	if a.Port == 0 || a.PathMTU.Bytes() == 0 || a.DestQPNum >= 1<<24 {
		return fmt.Errorf("%w: RTR port %d, MTU %d, dest QP %d", ErrInvalidArgument, a.Port, a.PathMTU, a.DestQPNum)
	}
	if err := q.h.use(); err != nil {
		return err
	}
	defer q.h.done()
	dgid := a.DGID // a local copy; its address is valid for the call
	rc, err := C.ferry_qp_to_rtr(q.qp, C.uint8_t(a.Port), C.uint32_t(a.PathMTU), C.uint32_t(a.DestQPNum),
		(*C.uint8_t)(unsafe.Pointer(&dgid[0])), C.uint8_t(a.SGIDIndex), C.uint16_t(a.DLID), C.uint8_t(a.SL),
		C.uint8_t(a.TrafficClass), C.uint8_t(a.HopLimit), C.uint32_t(a.RQPSN), C.uint8_t(a.MaxDestRdAtomic),
		C.uint8_t(a.MinRNRTimer))
	if rc != 0 {
		return modifyErr("ibv_modify_qp(RTR)", err)
	}
	return nil
}

func (q *qp) ToRTS(a RTSAttr) error {
	if a.RetryCount > 7 || a.RNRRetry > 7 || a.Timeout > 31 || a.SQPSN >= 1<<24 {
		return fmt.Errorf("%w: RTS %+v (retry and rnr <= 7, timeout <= 31, psn < 2^24)", ErrInvalidArgument, a)
	}
	if err := q.h.use(); err != nil {
		return err
	}
	defer q.h.done()
	rc, err := C.ferry_qp_to_rts(q.qp, C.uint8_t(a.Timeout), C.uint8_t(a.RetryCount), C.uint8_t(a.RNRRetry),
		C.uint32_t(a.SQPSN), C.uint8_t(a.MaxRdAtomic))
	if rc != 0 {
		return modifyErr("ibv_modify_qp(RTS)", err)
	}
	return nil
}

func (q *qp) toState(s QPState) error {
	if err := q.h.use(); err != nil {
		return err
	}
	defer q.h.done()
	if rc, err := C.ferry_qp_to_state(q.qp, C.uint32_t(s)); rc != 0 {
		return modifyErr("ibv_modify_qp("+s.String()+")", err)
	}
	return nil
}

func (q *qp) ToError() error { return q.toState(QPStateErr) }
func (q *qp) ToReset() error { return q.toState(QPStateReset) }

func (q *qp) PostRW(wrs []WorkRequest) (int, error) {
	if len(wrs) == 0 {
		return 0, nil
	}
	if i, err := checkWRs(wrs); err != nil {
		return i, err
	}
	if err := q.h.use(); err != nil {
		return 0, err
	}
	defer q.h.done()
	cgoCalls.Add(1)
	n, err := C.ferry_post_rw(q.qp, (*C.struct_ferry_wr)(unsafe.Pointer(&wrs[0])), C.int(len(wrs)))
	if int(n) == len(wrs) {
		return int(n), nil
	}
	return int(n), postErr(int(n), err)
}

func postErr(i int, err error) error {
	switch {
	case errors.Is(err, syscall.ENOMEM):
		return fmt.Errorf("%w: ibv_post_send at work request %d: %w", ErrQueueFull, i, err)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("%w: ibv_post_send rejected work request %d (QP not in RTS?): %w", ErrQPState, i, err)
	}
	return verbsErr(fmt.Sprintf("ibv_post_send at work request %d", i), err)
}

func (q *qp) Close() error {
	if done, err := q.h.beginClose(); done {
		return err
	}
	var err error
	if rc := C.ibv_destroy_qp(q.qp); rc != 0 {
		err = verbsErr("ibv_destroy_qp", syscall.Errno(rc))
	}
	q.h.endClose(err)
	if err == nil {
		q.pd.h.children.Add(-1)
		q.send.h.children.Add(-1)
		q.recv.h.children.Add(-1)
	}
	return err
}
