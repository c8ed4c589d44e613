// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) as a BPF struct_ops TCP congestion control, for the
 * testbed's real Linux hosts, whose kernels are built without tcp_dctcp. Written for tailcut from the
 * paper and the RFC.
 *
 * Licence: this one file is "Dual BSD/GPL", not the project's Apache-2.0, because the kernel lets only
 * GPL-compatible programs call the TCP congestion-control kfuncs (tcp_reno_cong_avoid) it uses.
 *
 * The testbed compiles it at run time (crates/tailcut-testbed/src/dctcp.rs) with
 *   -DTAILCUT_DCTCP_NAME='"..."'   the name the CC registers under (TCP_CONGESTION)
 *   -DTAILCUT_DCTCP_G=N            the EWMA gain g as N / 65536
 * and the loader (dctcp_loader.c) registers it through a BPF link, so that it goes when the loader
 * does. Kernel types are declared below with only the fields used; CO-RE relocates their offsets
 * against the running kernel's BTF, so no generated vmlinux.h (and no bpftool) is needed.
 */

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifndef TAILCUT_DCTCP_NAME
#define TAILCUT_DCTCP_NAME "tailcut_dctcp"
#endif

/* RFC 8257 Sec. 4.2 recommends g = 1/16 (the paper's analysis gives g < 1.386 / sqrt(2 (C x RTT + K))).
 * In units of 1/65536. */
#ifndef TAILCUT_DCTCP_G
#define TAILCUT_DCTCP_G 4096
#endif
#define G_SHIFT 16

/* alpha is a fraction in fixed point with 20 fractional bits: fine enough that, with g = 1/16, it can
 * fall from 1 to below 1e-5 of a window instead of sticking at a coarse floor. */
#define ALPHA_SHIFT 20
#define ALPHA_ONE (1u << ALPHA_SHIFT)
/* RFC 8257 Sec. 3.3 leaves the initial alpha open; 1 makes the first reaction to marks as strong as
 * Reno's, the conservative choice (a new flow knows nothing about the queue yet). */
#define ALPHA_INIT ALPHA_ONE

/* Kernel values that are #defines, not in BTF; stable since they were introduced. */
#define TCP_CONG_NEEDS_ECN 0x2
#define TCP_ECN_DEMAND_CWR 4
#define ICSK_ACK_TIMER 2
#define ICSK_ACK_NOW 16
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define CA_EVENT_LOSS 3
#define CA_EVENT_ECN_NO_CE 4
#define CA_EVENT_ECN_IS_CE 5

char _license[] SEC("license") = "Dual BSD/GPL";

/* Complete (if empty) types: libbpf matches the kfunc's prototype against the kernel's by kind. */
struct sock {
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	struct {
		__u8 pending;
	} icsk_ack;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	__u32 delivered;
	__u32 delivered_ce;
	__u8 ecn_flags;
} __attribute__((preserve_access_index));

struct ack_sample;

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*undo_cwnd)(struct sock *sk);
	void (*init)(struct sock *sk);
	__u32 flags;
	char name[16];
};

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* Per-connection state in icsk_ca_priv (104 bytes on the kernels this runs on). */
struct dctcp {
	/* Sender (RFC 8257 Sec. 3.3): the observation window ends when SND.UNA reaches window_end. */
	__u32 window_end;
	__u32 delivered_at_start;
	__u32 delivered_ce_at_start;
	__u32 alpha;
	/* cwnd when the last reduction was computed: what an undo restores. */
	__u32 prior_cwnd;
	__u32 ca_state;
	/* Receiver (RFC 8257 Sec. 3.2): the CE bit of the last data segment, and rcv_nxt before it. */
	__u32 ce_state;
	__u32 prior_rcv_nxt;
};

/* Counters over every connection of this CC, read by the loader for the testbed (docs/testbed.md). */
enum {
	ST_CONNECTIONS,
	ST_WINDOWS,
	ST_WINDOWS_MARKED,
	ST_ALPHA_INSIDE,    /* alpha updates that left it strictly between 0 and 1 */
	ST_ECE_REDUCTIONS,  /* entries into CWR on ECE */
	ST_GENTLE_REDUCTIONS, /* of those, the ones that kept more than half the window */
	ST_LOSS_REDUCTIONS,
	ST_UNDOS,
	ST_CE_CHANGES,      /* receiver: CE state flips */
	ST_ACKS_FLUSHED,    /* receiver: delayed ACKs sent with the old state before a flip */
	ST_ALPHA_SUM,       /* sum of the alphas computed, x 2^20: their mean over ST_WINDOWS */
	ST_COUNT,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ST_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} tailcut_dctcp_stats SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&tailcut_dctcp_stats, &which);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline struct dctcp *state(struct tcp_sock *tp)
{
	return (struct dctcp *)tp->inet_conn.icsk_ca_priv;
}

static __always_inline int seq_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

static __always_inline void new_window(struct tcp_sock *tp, struct dctcp *ca)
{
	ca->window_end = tp->snd_nxt;
	ca->delivered_at_start = tp->delivered;
	ca->delivered_ce_at_start = tp->delivered_ce;
}

SEC("struct_ops/tailcut_dctcp_init")
void BPF_PROG(tailcut_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(tp);

	new_window(tp, ca);
	ca->alpha = ALPHA_INIT;
	ca->prior_cwnd = 0;
	ca->ca_state = 0;
	ca->ce_state = 0;
	ca->prior_rcv_nxt = tp->rcv_nxt;
	count(ST_CONNECTIONS, 1);
}

/* RFC 8257 Sec. 3.3: once a window of data is acknowledged, alpha = (1 - g) alpha + g F, where F is the
 * fraction of it that was marked. The kernel counts delivered segments, and among them those acked with
 * ECE (the precise echo below makes that the marked ones); segments stand in for the RFC's bytes. */
SEC("struct_ops/tailcut_dctcp_pkts_acked")
void BPF_PROG(tailcut_dctcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(tp);
	__u32 delivered, marked, alpha;
	__u64 f, step;

	/* SND.UNA at the old SND.NXT: every byte of the window was acknowledged. */
	if (seq_before(tp->snd_una, ca->window_end))
		return;
	delivered = tp->delivered - ca->delivered_at_start;
	marked = tp->delivered_ce - ca->delivered_ce_at_start;
	if (delivered > 0) {
		if (marked > delivered)
			marked = delivered;
		f = ((__u64)marked << ALPHA_SHIFT) / delivered;
		alpha = ca->alpha;
		if (f >= alpha) {
			step = ((f - alpha) * TAILCUT_DCTCP_G) >> G_SHIFT;
			alpha += (__u32)step;
		} else {
			/* Rounded up, so that without marks alpha reaches 0 as the real EWMA tends to. */
			step = ((alpha - f) * TAILCUT_DCTCP_G + (1u << G_SHIFT) - 1) >> G_SHIFT;
			alpha -= (__u32)step;
		}
		if (alpha > ALPHA_ONE)
			alpha = ALPHA_ONE;
		ca->alpha = alpha;
		count(ST_WINDOWS, 1);
		if (marked)
			count(ST_WINDOWS_MARKED, 1);
		if (alpha > 0 && alpha < ALPHA_ONE)
			count(ST_ALPHA_INSIDE, 1);
		count(ST_ALPHA_SUM, alpha);
	}
	new_window(tp, ca);
}

/* RFC 8257 Sec. 3.4: on ECE, cwnd = cwnd x (1 - alpha / 2). The kernel calls this when an ECE arrives
 * while it is not already reducing (it then stays in CWR for one window, which makes the reduction
 * happen at most once per window of data), and also on loss, where set_state and cwnd_event below
 * replace the result by Reno's half. */
SEC("struct_ops/tailcut_dctcp_ssthresh")
__u32 BPF_PROG(tailcut_dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(tp);
	__u32 cwnd = tp->snd_cwnd;
	__u32 cut = (__u32)(((__u64)cwnd * ca->alpha) >> (ALPHA_SHIFT + 1));

	ca->prior_cwnd = cwnd;
	return cwnd - cut > 2 ? cwnd - cut : 2;
}

static __always_inline void halve(struct tcp_sock *tp, __u32 cwnd)
{
	tp->snd_ssthresh = cwnd / 2 > 2 ? cwnd / 2 : 2;
	count(ST_LOSS_REDUCTIONS, 1);
}

SEC("struct_ops/tailcut_dctcp_set_state")
void BPF_PROG(tailcut_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(tp);

	if (new_state == TCP_CA_CWR && ca->ca_state != TCP_CA_CWR) {
		count(ST_ECE_REDUCTIONS, 1);
		if ((__u64)tp->snd_ssthresh * 2 > ca->prior_cwnd)
			count(ST_GENTLE_REDUCTIONS, 1);
	}
	/* RFC 8257 Sec. 3.5: loss is answered as conventional TCP does, by halving. Fast recovery entered
	 * from CWR halves the window being reduced. */
	if (new_state == TCP_CA_Recovery && ca->ca_state != TCP_CA_Recovery)
		halve(tp, tp->snd_cwnd);
	ca->ca_state = new_state;
}

/* The receiver's side (RFC 8257 Sec. 3.2): ECE on an ACK says exactly whether the data it acknowledges
 * arrived with CE. When the CE bit of arriving data flips, a delayed ACK still owed for the earlier
 * segments goes out at once with the old ECE value, and the segment that flipped it is ACKed at once
 * with the new one. The kernel sets ECE on outgoing ACKs while TCP_ECN_DEMAND_CWR is set. */
static __always_inline void echo(struct tcp_sock *tp, __u32 ce)
{
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

SEC("struct_ops/tailcut_dctcp_cwnd_event")
void BPF_PROG(tailcut_dctcp_cwnd_event, struct sock *sk, int ev)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(tp);
	__u32 ce;

	if (ev == CA_EVENT_LOSS) {
		/* Called right after ssthresh on a retransmission timeout, with cwnd not yet collapsed. */
		halve(tp, ca->prior_cwnd);
		return;
	}
	if (ev != CA_EVENT_ECN_IS_CE && ev != CA_EVENT_ECN_NO_CE)
		return;
	ce = ev == CA_EVENT_ECN_IS_CE;
	if (ce != ca->ce_state) {
		if (tp->inet_conn.icsk_ack.pending & ICSK_ACK_TIMER) {
			echo(tp, ca->ce_state);
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
			count(ST_ACKS_FLUSHED, 1);
		}
		tp->inet_conn.icsk_ack.pending |= ICSK_ACK_NOW;
		count(ST_CE_CHANGES, 1);
	}
	ca->ce_state = ce;
	ca->prior_rcv_nxt = tp->rcv_nxt;
	echo(tp, ce);
}

/* RFC 8257 Sec. 3.5: outside reductions, the window grows as conventional TCP's (slow start, then one
 * segment per RTT). */
SEC("struct_ops/tailcut_dctcp_cong_avoid")
void BPF_PROG(tailcut_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* A reduction the kernel finds spurious (DSACK, timestamps) is undone to the window before it. */
SEC("struct_ops/tailcut_dctcp_undo_cwnd")
__u32 BPF_PROG(tailcut_dctcp_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(tp);

	count(ST_UNDOS, 1);
	return tp->snd_cwnd > ca->prior_cwnd ? tp->snd_cwnd : ca->prior_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops tailcut_dctcp = {
	.init = (void *)tailcut_dctcp_init,
	.pkts_acked = (void *)tailcut_dctcp_pkts_acked,
	.ssthresh = (void *)tailcut_dctcp_ssthresh,
	.set_state = (void *)tailcut_dctcp_set_state,
	.cwnd_event = (void *)tailcut_dctcp_cwnd_event,
	.cong_avoid = (void *)tailcut_dctcp_cong_avoid,
	.undo_cwnd = (void *)tailcut_dctcp_undo_cwnd,
	/* Both ends negotiate ECN and send ECT whatever net.ipv4.tcp_ecn says (RFC 8257 Sec. 3.1). */
	.flags = TCP_CONG_NEEDS_ECN,
	.name = TAILCUT_DCTCP_NAME,
};
