// Thin C helpers for the verbs layer. Every helper takes flat scalars or
// flat arrays of plain structs (never a Go pointer stored in C memory), and
// reports failure through errno so Go can use cgo's two-result form, which
// reads errno inside the same call.
#ifndef FERRY_VERBS_SHIM_H
#define FERRY_VERBS_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

// Layout shared with verbs.WorkRequest (40 bytes).
struct ferry_wr {
	uint64_t wr_id;
	uint64_t laddr;
	uint64_t raddr;
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t op; // 1 = RDMA_READ, 2 = RDMA_WRITE
};

// Layout shared with verbs.Completion (32 bytes).
struct ferry_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t vendor_err;
	uint32_t pad;
};

struct ferry_caps {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_sge;
	uint32_t max_inline;
};

struct ferry_port {
	uint32_t state;
	uint32_t max_mtu;
	uint32_t active_mtu;
	uint32_t gid_tbl_len;
	uint32_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t link_layer;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t pad;
};

struct ferry_gid {
	uint8_t raw[16];
	uint32_t index;
	uint32_t port;
	uint32_t type;
	uint32_t ifindex;
};

#define FERRY_CHAIN 64

// ferry_post_rw links n work requests into chains of up to FERRY_CHAIN on
// the C stack and posts each chain with one ibv_post_send. It returns how
// many were posted; when that is less than n, errno holds the reason
// (EINVAL for a bad opcode or zero length).
static int ferry_post_rw(struct ibv_qp *qp, const struct ferry_wr *wrs, int n) {
	struct ibv_send_wr wr[FERRY_CHAIN];
	struct ibv_sge sge[FERRY_CHAIN];
	int done = 0;
	while (done < n) {
		int m = n - done;
		if (m > FERRY_CHAIN)
			m = FERRY_CHAIN;
		for (int i = 0; i < m; i++) {
			const struct ferry_wr *w = &wrs[done + i];
			if ((w->op != 1 && w->op != 2) || w->len == 0) {
				if (i == 0) {
					errno = EINVAL;
					return done;
				}
				m = i; // post the good prefix; the next round reports the bad one
				break;
			}
			memset(&wr[i], 0, sizeof(wr[i]));
			sge[i].addr = w->laddr;
			sge[i].length = w->len;
			sge[i].lkey = w->lkey;
			wr[i].wr_id = w->wr_id;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].opcode = w->op == 1 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			wr[i].wr.rdma.remote_addr = w->raddr;
			wr[i].wr.rdma.rkey = w->rkey;
			wr[i].next = NULL;
			if (i > 0)
				wr[i - 1].next = &wr[i];
		}
		struct ibv_send_wr *bad = NULL;
		int rc = ibv_post_send(qp, &wr[0], &bad);
		if (rc != 0) {
			int ok = 0;
			if (bad != NULL && bad >= &wr[0] && bad < &wr[m])
				ok = (int)(bad - &wr[0]);
			errno = rc;
			return done + ok;
		}
		done += m;
	}
	return done;
}

// ferry_poll polls up to max completions into out, FERRY_CHAIN at a time.
// It returns the count, or -1 with errno set.
static int ferry_poll(struct ibv_cq *cq, struct ferry_wc *out, int max) {
	struct ibv_wc wc[FERRY_CHAIN];
	int got = 0;
	while (got < max) {
		int want = max - got;
		if (want > FERRY_CHAIN)
			want = FERRY_CHAIN;
		int n = ibv_poll_cq(cq, want, wc);
		if (n < 0) {
			if (got > 0)
				return got;
			errno = EIO;
			return -1;
		}
		for (int i = 0; i < n; i++) {
			struct ferry_wc *o = &out[got + i];
			o->wr_id = wc[i].wr_id;
			o->status = wc[i].status;
			o->opcode = wc[i].opcode;
			o->byte_len = wc[i].byte_len;
			o->qp_num = wc[i].qp_num;
			o->vendor_err = wc[i].vendor_err;
			o->pad = 0;
		}
		got += n;
		if (n < want)
			break;
	}
	return got;
}

static int ferry_req_notify(struct ibv_cq *cq, int solicited) {
	int rc = ibv_req_notify_cq(cq, solicited);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

static struct ibv_mr *ferry_reg_mr(struct ibv_pd *pd, uintptr_t addr, size_t len, int access) {
	return ibv_reg_mr(pd, (void *)addr, len, access);
}

static int ferry_query_port(struct ibv_context *ctx, uint8_t port, struct ferry_port *out) {
	struct ibv_port_attr a;
	memset(&a, 0, sizeof(a));
	int rc = ibv_query_port(ctx, port, &a);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	out->state = a.state;
	out->max_mtu = a.max_mtu;
	out->active_mtu = a.active_mtu;
	out->gid_tbl_len = a.gid_tbl_len;
	out->pkey_tbl_len = a.pkey_tbl_len;
	out->lid = a.lid;
	out->sm_lid = a.sm_lid;
	out->link_layer = a.link_layer;
	out->active_width = a.active_width;
	out->active_speed = a.active_speed;
	return 0;
}

// ferry_query_gid returns 0, 1 for an empty slot, or -1 with errno.
static int ferry_query_gid(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ferry_gid *out) {
	struct ibv_gid_entry e;
	memset(&e, 0, sizeof(e));
	int rc = ibv_query_gid_ex(ctx, port, index, &e, 0);
	if (rc == ENODATA)
		return 1;
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	memcpy(out->raw, e.gid.raw, 16);
	out->index = e.gid_index;
	out->port = e.port_num;
	out->type = e.gid_type;
	out->ifindex = e.ndev_ifindex;
	return 0;
}

static struct ibv_qp *ferry_create_qp(struct ibv_pd *pd, struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
                                      struct ferry_caps *caps) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof(a));
	a.send_cq = send_cq;
	a.recv_cq = recv_cq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 0;
	a.cap.max_send_wr = caps->max_send_wr;
	a.cap.max_recv_wr = caps->max_recv_wr;
	a.cap.max_send_sge = caps->max_sge;
	a.cap.max_recv_sge = caps->max_sge;
	a.cap.max_inline_data = caps->max_inline;
	struct ibv_qp *qp = ibv_create_qp(pd, &a);
	if (qp != NULL) {
		caps->max_send_wr = a.cap.max_send_wr;
		caps->max_recv_wr = a.cap.max_recv_wr;
		caps->max_sge = a.cap.max_send_sge;
		caps->max_inline = a.cap.max_inline_data;
	}
	return qp;
}

static int ferry_modify_rc(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
	int rc = ibv_modify_qp(qp, a, mask);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

static int ferry_qp_to_init(struct ibv_qp *qp, uint8_t port, uint16_t pkey, int access) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.pkey_index = pkey;
	a.qp_access_flags = access;
	return ferry_modify_rc(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int ferry_qp_to_rtr(struct ibv_qp *qp, uint8_t port, uint32_t mtu, uint32_t dest_qp, const uint8_t *dgid,
                           uint8_t sgid_index, uint16_t dlid, uint8_t sl, uint8_t tclass, uint8_t hop_limit,
                           uint32_t rq_psn, uint8_t max_dest_rd_atomic, uint8_t min_rnr_timer) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dest_qp;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.dlid = dlid;
	a.ah_attr.sl = sl;
	a.ah_attr.port_num = port;
	int global = 0;
	for (int i = 0; i < 16; i++)
		global |= dgid[i];
	if (global) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
		a.ah_attr.grh.sgid_index = sgid_index;
		a.ah_attr.grh.hop_limit = hop_limit;
		a.ah_attr.grh.traffic_class = tclass;
	}
	return ferry_modify_rc(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int ferry_qp_to_rts(struct ibv_qp *qp, uint8_t timeout, uint8_t retry, uint8_t rnr, uint32_t sq_psn,
                           uint8_t max_rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = max_rd_atomic;
	return ferry_modify_rc(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int ferry_qp_to_state(struct ibv_qp *qp, uint32_t state) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = (enum ibv_qp_state)state;
	return ferry_modify_rc(qp, &a, IBV_QP_STATE);
}

static int ferry_qp_state(struct ibv_qp *qp, uint32_t *state) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	*state = a.qp_state;
	return 0;
}

// ferry_get_async reads one async event (the fd is non-blocking: -1 with
// EAGAIN when none), copies what Go needs and acknowledges it.
static int ferry_get_async(struct ibv_context *ctx, uint32_t *type, uint32_t *port, uint32_t *qpn) {
	struct ibv_async_event ev;
	if (ibv_get_async_event(ctx, &ev) != 0)
		return -1;
	*type = ev.event_type;
	*port = 0;
	*qpn = 0;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		if (ev.element.qp != NULL)
			*qpn = ev.element.qp->qp_num;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		*port = (uint32_t)ev.element.port_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 0;
}

static int ferry_async_fd(struct ibv_context *ctx) { return ctx->async_fd; }
static int ferry_comp_fd(struct ibv_comp_channel *ch) { return ch->fd; }
static int ferry_cq_depth(struct ibv_cq *cq) { return cq->cqe; }
static uint32_t ferry_qp_num(struct ibv_qp *qp) { return qp->qp_num; }
static uint32_t ferry_mr_lkey(struct ibv_mr *mr) { return mr->lkey; }
static uint32_t ferry_mr_rkey(struct ibv_mr *mr) { return mr->rkey; }
static const char *ferry_dev_name(struct ibv_device **list, int i) { return list[i]->name; }
static const char *ferry_dev_ibdev_path(struct ibv_device **list, int i) { return list[i]->ibdev_path; }
static struct ibv_device *ferry_dev_at(struct ibv_device **list, int i) { return list[i]; }

#endif
