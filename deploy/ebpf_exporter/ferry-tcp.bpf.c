// SPDX-License-Identifier: MIT
//
// Per-port TCP byte and retransmit counters for Ferry's TCP transport,
// handshake daemon and offload RPCs. A socket is counted when its local or
// remote port lies in [ferry_min_port, ferry_max_port] (Mooncake's
// MC_MIN_RPC_PORT..MC_MAX_RPC_PORT by default). Build with clang -target
// bpf against a vmlinux.h for the running kernel (see README.md).

#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define MAX_PORTS 4096

const volatile u16 ferry_min_port = 15000;
const volatile u16 ferry_max_port = 17000;

// The map key matches the labels in ferry-tcp.yaml: port (2 bytes),
// direction (2 bytes: 0 = local port matched, 1 = remote port matched),
// padding (4 bytes).
struct port_key {
	u16 port;
	u16 direction;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, struct port_key);
	__type(value, u64);
} ferry_tcp_sent_bytes_total SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, struct port_key);
	__type(value, u64);
} ferry_tcp_received_bytes_total SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, struct port_key);
	__type(value, u64);
} ferry_tcp_retransmits_total SEC(".maps");

static __always_inline int ferry_key(struct sock *sk, struct port_key *key)
{
	u16 local = BPF_CORE_READ(sk, __sk_common.skc_num);
	u16 remote = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));

	key->pad = 0;
	if (local >= ferry_min_port && local <= ferry_max_port) {
		key->port = local;
		key->direction = 0;
		return 1;
	}
	if (remote >= ferry_min_port && remote <= ferry_max_port) {
		key->port = remote;
		key->direction = 1;
		return 1;
	}
	return 0;
}

static __always_inline void add(void *map, struct port_key *key, u64 n)
{
	u64 zero = 0, *val;

	val = bpf_map_lookup_elem(map, key);
	if (!val) {
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		val = bpf_map_lookup_elem(map, key);
		if (!val)
			return;
	}
	__sync_fetch_and_add(val, n);
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(ferry_tcp_sendmsg, struct sock *sk, struct msghdr *msg, size_t size)
{
	struct port_key key;

	if (ferry_key(sk, &key))
		add(&ferry_tcp_sent_bytes_total, &key, size);
	return 0;
}

SEC("kprobe/tcp_cleanup_rbuf")
int BPF_KPROBE(ferry_tcp_cleanup_rbuf, struct sock *sk, int copied)
{
	struct port_key key;

	if (copied > 0 && ferry_key(sk, &key))
		add(&ferry_tcp_received_bytes_total, &key, copied);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(ferry_tcp_retransmit_skb, const struct sock *sk, const struct sk_buff *skb)
{
	struct port_key key;

	if (ferry_key((struct sock *)sk, &key))
		add(&ferry_tcp_retransmits_total, &key, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
