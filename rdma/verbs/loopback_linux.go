//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "shim.h"

// A loopback "device" in C: a fake ibv_context whose post_send executes
// RDMA READ/WRITE with memcpy inside one address space and whose poll_cq
// returns the completions. It lets tests and benchmarks run the real cgo
// data path (chain building, posting, polling, errno capture) without
// hardware. Its memory comes from calloc; Go never stores pointers in it.
struct ferry_lb {
	struct ibv_context ctx;
	struct ibv_qp qp;
	struct ibv_cq cq;
	uint64_t post_calls;
	uint64_t poll_calls;
	int cap, head, n;
	struct ibv_wc ring[];
};

static int lb_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	struct ferry_lb *lb = (struct ferry_lb *)qp->qp_context;
	lb->post_calls++;
	for (; wr != NULL; wr = wr->next) {
		if (lb->n == lb->cap || wr->num_sge != 1) {
			*bad = wr;
			return lb->n == lb->cap ? ENOMEM : EINVAL;
		}
		void *local = (void *)(uintptr_t)wr->sg_list[0].addr;
		void *remote = (void *)(uintptr_t)wr->wr.rdma.remote_addr;
		uint32_t len = wr->sg_list[0].length;
		struct ibv_wc *wc = &lb->ring[(lb->head + lb->n) % lb->cap];
		memset(wc, 0, sizeof(*wc));
		wc->wr_id = wr->wr_id;
		wc->qp_num = qp->qp_num;
		wc->byte_len = len;
		if (wr->opcode == IBV_WR_RDMA_WRITE) {
			memcpy(remote, local, len);
			wc->opcode = IBV_WC_RDMA_WRITE;
		} else if (wr->opcode == IBV_WR_RDMA_READ) {
			memcpy(local, remote, len);
			wc->opcode = IBV_WC_RDMA_READ;
		} else {
			wc->status = IBV_WC_LOC_QP_OP_ERR;
		}
		lb->n++;
	}
	return 0;
}

static int lb_poll_cq(struct ibv_cq *cq, int max, struct ibv_wc *wc) {
	struct ferry_lb *lb = (struct ferry_lb *)cq->cq_context;
	lb->poll_calls++;
	int k = 0;
	while (k < max && lb->n > 0) {
		wc[k++] = lb->ring[lb->head];
		lb->head = (lb->head + 1) % lb->cap;
		lb->n--;
	}
	return k;
}

static int lb_req_notify(struct ibv_cq *cq, int solicited) { return 0; }

static struct ferry_lb *lb_new(int cap, uint32_t qpn) {
	struct ferry_lb *lb = calloc(1, sizeof(*lb) + (size_t)cap * sizeof(struct ibv_wc));
	if (lb == NULL)
		return NULL;
	lb->cap = cap;
	lb->ctx.ops.post_send = lb_post_send;
	lb->ctx.ops.poll_cq = lb_poll_cq;
	lb->ctx.ops.req_notify_cq = lb_req_notify;
	lb->qp.context = &lb->ctx;
	lb->qp.qp_context = lb;
	lb->qp.qp_num = qpn;
	lb->cq.context = &lb->ctx;
	lb->cq.cq_context = lb;
	lb->cq.cqe = cap;
	return lb;
}

static size_t lb_wr_size(void) { return sizeof(struct ferry_wr); }
static size_t lb_wc_size(void) { return sizeof(struct ferry_wc); }
static size_t lb_wr_off_len(void) { return offsetof(struct ferry_wr, len); }
static size_t lb_wr_off_op(void) { return offsetof(struct ferry_wr, op); }
static size_t lb_wc_off_qpn(void) { return offsetof(struct ferry_wc, qp_num); }
static size_t lb_wc_off_vendor(void) { return offsetof(struct ferry_wc, vendor_err); }
*/
import "C"

import (
	"errors"
	"unsafe"
)

// loopback is a C loopback QP and CQ (see the preamble) wrapped in the
// package's real qp and cq types. Only tests and benchmarks use it.
type loopback struct {
	lb *C.struct_ferry_lb
	qp *qp
	cq *cq
}

// newLoopback returns a loopback whose CQ holds depth completions; the
// send queue is full when depth completions are unpolled. Free it with
// free, never with Close.
func newLoopback(depth int, qpn uint32) (*loopback, error) {
	lb := C.lb_new(C.int(depth), C.uint32_t(qpn))
	if lb == nil {
		return nil, errors.New("verbs: loopback: out of memory")
	}
	c := &cq{cq: &lb.cq, depth: depth}
	q := &qp{qp: &lb.qp, num: qpn, send: c, recv: c,
		caps: QPCaps{MaxSendWR: uint32(depth), MaxRecvWR: uint32(depth), MaxSGE: 1}}
	return &loopback{lb: lb, qp: q, cq: c}, nil
}

func (l *loopback) postCalls() uint64 { return uint64(l.lb.post_calls) }
func (l *loopback) free()             { C.free(unsafe.Pointer(l.lb)) }

// cLayout reports the C shim's struct sizes and a few offsets, so a test
// can check they match WorkRequest and Completion.
func cLayout() (wrSize, wcSize, wrLen, wrOp, wcQPN, wcVendor uintptr) {
	return uintptr(C.lb_wr_size()), uintptr(C.lb_wc_size()), uintptr(C.lb_wr_off_len()),
		uintptr(C.lb_wr_off_op()), uintptr(C.lb_wc_off_qpn()), uintptr(C.lb_wc_off_vendor())
}
