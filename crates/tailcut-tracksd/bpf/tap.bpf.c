// SPDX-License-Identifier: (MIT OR Apache-2.0) OR GPL-2.0
//
// T-RACKs packet tap for tc (tcx) egress and ingress of one NIC (docs/tracks.md, "tc-BPF tap").
// Packets never wait for user space: each TCP packet the shim needs is copied (headers only) into a
// ring buffer and passes at once. The one decision made here is the paper's drop of real duplicate
// ACKs during a recovery episode (Algorithm 1 lines 34-38): the agent puts a flow in `recovering`
// with the cumulative ACK it is recovering at, and pure ACKs of that flow repeating it are dropped.
// A dead agent takes its tcx links, and so this program, with it: traffic then passes untouched.
//
// Built at the agent's start by the machine's clang (-O2 -g -target bpf); loaded by aya, which sets
// the `const volatile` globals below and the maps' sizes.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define CAP 128      // bytes copied from the IP header on: IPv4 (<= 60) or IPv6 (40) + TCP (<= 60)
#define MAX_OPT 40   // TCP option bytes
#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_SACK 5

// Link-layer header before the IP header: 14 on Ethernet, 0 on an L3 device (TUN).
const volatile __u32 l2_len = 14;
// Flows that carried more bytes (both directions, IP lengths) are not reported: gamma in the kernel.
const volatile __u64 gamma_bytes = ~0ULL;
// Duplicate ACKs that carry SACK blocks pass during a recovery (the shim's `pass_sack_dupacks`).
const volatile __u32 pass_sack_dupacks = 1;

// One connection, from the local host's side; addresses (IPv6, or IPv4-mapped ::ffff:a.b.c.d) and
// ports in network byte order.
struct flow_key {
	__u8 local_addr[16];
	__u8 remote_addr[16];
	__u16 local_port;
	__u16 remote_port;
};

// What user space reads: the packet's first bytes from the IP header on.
struct record {
	__u64 ktime_ns;  // CLOCK_MONOTONIC when the packet crossed the hook
	__u32 wire_len;  // IP packet length (skb length without the link-layer header)
	__u16 cap_len;   // bytes copied into `bytes`
	__u8 dir;        // 0 egress, 1 ingress
	__u8 dropped;    // 1: this program dropped it (a real duplicate ACK during a recovery)
	__u8 bytes[CAP];
};

// Bytes per flow, for the gamma cut-off. LRU: an evicted flow counts again from zero.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, __u64);
} flow_bytes SEC(".maps");

// Flows in a recovery episode -> the cumulative ACK (network order) whose duplicates are dropped.
// Only the agent writes it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, __u32);
} recovering SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

// Counters: see the STAT_ names.
enum { STAT_RING_FULL, STAT_DROPPED, STAT_PAST_GAMMA, STAT_NOT_COPIED, STAT_N };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += 1;
}

// Whether the TCP options at `off` (`len` bytes) hold a SACK block. Indices are 64-bit and pinned
// to one register (the empty asm), so the verifier sees the bounds checked on the register used.
static __always_inline int has_sack(struct __sk_buff *skb, __u32 off, __u64 len)
{
	__u8 opt[MAX_OPT] = {};
	if (len == 0 || len > MAX_OPT)
		return 0;
	if (bpf_skb_load_bytes(skb, off, opt, len) < 0)
		return 0;
	__u64 i = 0;
	for (int n = 0; n < MAX_OPT; n++) {
		asm volatile("" : "+r"(i));
		if (i >= len || i > MAX_OPT - 1)
			break;
		__u8 kind = opt[i];
		if (kind == TCPOPT_EOL)
			break;
		if (kind == TCPOPT_NOP) {
			i++;
			continue;
		}
		if (kind == TCPOPT_SACK)
			return 1;
		if (i + 1 >= len || i > MAX_OPT - 2)
			break;
		__u8 olen = opt[i + 1];
		if (olen < 2)
			break;
		i += olen;
	}
	return 0;
}

static __always_inline int tap(struct __sk_buff *skb, __u8 ingress)
{
	__u32 l2 = l2_len;
	__u8 ip[40];
	if (skb->len < l2 + 20 || bpf_skb_load_bytes(skb, l2, ip, 20) < 0)
		return TC_ACT_OK;
	struct flow_key key = {};
	__u8 src[16] = {}, dst[16] = {};
	__u32 ihl, tot_len;
	if ((ip[0] >> 4) == 4) {
		// TCP, not a later fragment (no TCP header to read).
		if (ip[9] != 6 || ((ip[6] & 0x1f) | ip[7]) != 0)
			return TC_ACT_OK;
		ihl = (ip[0] & 0x0f) * 4;
		tot_len = ((__u32)ip[2] << 8) | ip[3];
		if (ihl < 20 || ihl > 60)
			return TC_ACT_OK;
		// IPv4-mapped (::ffff:a.b.c.d), as the agent writes the keys.
		src[10] = dst[10] = 0xff;
		src[11] = dst[11] = 0xff;
		__builtin_memcpy(&src[12], &ip[12], 4);
		__builtin_memcpy(&dst[12], &ip[16], 4);
	} else if ((ip[0] >> 4) == 6) {
		// The fixed header only: a packet with extension headers is not followed (it passes).
		if (skb->len < l2 + 40 || bpf_skb_load_bytes(skb, l2, ip, 40) < 0 || ip[6] != 6)
			return TC_ACT_OK;
		ihl = 40;
		tot_len = 40 + (((__u32)ip[4] << 8) | ip[5]);
		__builtin_memcpy(src, &ip[8], 16);
		__builtin_memcpy(dst, &ip[24], 16);
	} else {
		return TC_ACT_OK;
	}
	__u8 tcp[20];
	if (bpf_skb_load_bytes(skb, l2 + ihl, tcp, 20) < 0)
		return TC_ACT_OK;
	__u32 doff = (tcp[12] >> 4) * 4;
	__u8 flags = tcp[13];
	if (doff < 20 || ihl + doff > tot_len)
		return TC_ACT_OK;
	__u32 payload = tot_len - ihl - doff;
	int syn = flags & 0x02, fin = flags & 0x01, rst = flags & 0x04, ack = flags & 0x10;
	// Egress: only data and SYNs matter to the shim (its outgoing handler ignores pure ACKs).
	if (!ingress && payload == 0 && !syn && !fin)
		return TC_ACT_OK;

	if (ingress) {
		__builtin_memcpy(key.local_addr, dst, 16);
		__builtin_memcpy(key.remote_addr, src, 16);
		__builtin_memcpy(&key.local_port, &tcp[2], 2);
		__builtin_memcpy(&key.remote_port, &tcp[0], 2);
	} else {
		__builtin_memcpy(key.local_addr, src, 16);
		__builtin_memcpy(key.remote_addr, dst, 16);
		__builtin_memcpy(&key.local_port, &tcp[0], 2);
		__builtin_memcpy(&key.remote_port, &tcp[2], 2);
	}

	if (gamma_bytes != ~0ULL) {
		__u64 *seen = bpf_map_lookup_elem(&flow_bytes, &key);
		__u64 total = tot_len;
		if (seen) {
			// Racy across CPUs (no atomic add): a flow may be cut off a few packets late.
			total += *seen;
			*seen = total;
		} else {
			// A flow first seen mid-way (the agent started late) counts from here.
			bpf_map_update_elem(&flow_bytes, &key, &total, BPF_ANY);
		}
		if (total > gamma_bytes) {
			count(STAT_PAST_GAMMA);
			return TC_ACT_OK;
		}
	}

	__u8 dropped = 0;
	if (ingress && ack && !syn && !fin && !rst && payload == 0) {
		__u32 *at = bpf_map_lookup_elem(&recovering, &key);
		__u32 ackno;
		__builtin_memcpy(&ackno, &tcp[8], 4);
		if (at && *at == ackno &&
		    !(pass_sack_dupacks && has_sack(skb, l2 + ihl + 20, doff - 20)))
			dropped = 1;
	}

	struct record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		// The agent is behind: the packet passes unseen (a dupACK we would drop passes too).
		count(STAT_RING_FULL);
		return TC_ACT_OK;
	}
	// 64 bits: clang compares 32-bit values on shifted copies, and the verifier would not see the
	// bounds on the register passed to the helper.
	__u64 n = (__u64)skb->len - l2;
	if (n > CAP)
		n = CAP;
	// One register for the clamped length, or clang passes the unclamped one to the helper and the
	// verifier cannot bound it.
	asm volatile("" : "+r"(n));
	if (n < 40 || n < ihl + 20 || n > CAP || bpf_skb_load_bytes(skb, l2, r->bytes, n) < 0) {
		count(STAT_NOT_COPIED);
		bpf_ringbuf_discard(r, 0);
		return TC_ACT_OK;
	}
	r->ktime_ns = bpf_ktime_get_ns();
	r->wire_len = skb->len - l2;
	r->cap_len = n;
	r->dir = ingress;
	r->dropped = dropped;
	bpf_ringbuf_submit(r, 0);
	if (dropped) {
		count(STAT_DROPPED);
		return TC_ACT_SHOT;
	}
	return TC_ACT_OK;
}

SEC("classifier/egress")
int tailcut_tracks_egress(struct __sk_buff *skb)
{
	return tap(skb, 0);
}

SEC("classifier/ingress")
int tailcut_tracks_ingress(struct __sk_buff *skb)
{
	return tap(skb, 1);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
