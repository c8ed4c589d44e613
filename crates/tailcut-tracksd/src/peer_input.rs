//! The agent's packet path on whatever reaches it, as one function that the libFuzzer target
//! (`fuzz/fuzz_targets/packet_path.rs`, which also bounds the heap) and the stable property test
//! share: netlink datagrams from the NFQUEUE socket ([`parse_datagram`]), records of the tc-BPF
//! tap's ring buffer ([`parse_record`]), the IPv4 or IPv6 TCP bytes inside them ([`wire::parse`]),
//! and the shim itself ([`shim_packet`], then the shim's timer and
//! injections), as the agent runs them. Raw bytes test the parsers; well-formed segments of a few
//! colliding flows, with arbitrary sequence numbers, flags, SACK blocks and gaps in time, reach the
//! shim's stall detection and spoofing.
//!
//! It panics on a property violation: a panic anywhere on the path, a hang (the shim's timer firing
//! without moving on), a flow table over `max_flows`, or an ACK the agent would inject that does not
//! parse back to the same header.
//!
//! Input: byte 0 picks the shim's options; then records of `[op, dt, len]` followed by `len` bytes.

use crate::addr6::V6Addrs;
use crate::agent::{shim_packet, AgentCounters};
use crate::bpf_tap::{parse_record, record};
use crate::config::real_host_tracks;
use crate::nfq_tap::tap_dir;
use crate::nfqueue::{packet_message, parse_datagram, HOOK_LOCAL_IN, HOOK_LOCAL_OUT};
use crate::tap::{TapDir, CAPTURE_BYTES};
use crate::wire;
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::tracks::{FakeSackBlock, RttSource, Tracks};
use tailcut_proto::{Addr, Dur, FiveTuple, Header, Packet, Proto, Seq, Shim, TcpFlags, TcpHeader, Time};

/// The table size the small-table configs use, so eviction is reached.
const SMALL_TABLE: usize = 4;
/// The IPv6 flows' addresses: fd00::1 (local) and fd00::2.
const V6_LOCAL: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6_PEER: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn byte(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// A segment of one of four flows between 10.0.0.1 (local) and 10.0.0.2, or fd00::1 and fd00::2
/// (bit 3 of `b[0]`), built from `b`: sequence and ACK numbers near each other (so the shim sees
/// progress, stalls and duplicates), any flags, payload, window, timestamps and up to three SACK
/// blocks. Egress packets carry data from the local side, ingress packets ACKs from the peer.
fn segment(b: &[u8], egress: bool, syn: bool) -> Vec<u8> {
    let port = 40_000 + u16::from(byte(b, 0) & 3);
    let (local, peer) = (
        (Addr(0x0a00_0001), port),
        (Addr(0x0a00_0002), 7000 + u16::from(byte(b, 0) >> 6)),
    );
    let ((src, sp), (dst, dp)) = if egress { (local, peer) } else { (peer, local) };
    let at = |i: usize| {
        1_000_000u32.wrapping_add(u32::from(u16::from_le_bytes([byte(b, i), byte(b, i + 1)])) * 1448)
    };
    let mut flags = TcpFlags(byte(b, 5));
    if syn {
        flags = flags | TcpFlags::SYN;
    }
    let mut h = TcpHeader {
        seq: Seq(at(1)),
        ack: Seq(at(3)),
        flags,
        window: u32::from(u16::from_le_bytes([byte(b, 6), byte(b, 7)])),
        ts_val: u32::from(byte(b, 8)) * 1000,
        ts_ecr: u32::from(byte(b, 9)) * 1000,
        ..TcpHeader::default()
    };
    for k in 0..usize::from(byte(b, 10) % 4) {
        let left = at(11 + 4 * k);
        h.sack.push(
            Seq(left),
            Seq(left.wrapping_add(u32::from(byte(b, 13 + 4 * k)) * 1448)),
        );
    }
    let pkt = Packet {
        tuple: FiveTuple {
            src,
            dst,
            src_port: sp,
            dst_port: dp,
            proto: Proto::Tcp,
        },
        header: Header::Tcp(h),
        ..Packet::default()
    };
    let timestamps = byte(b, 0) & 4 != 0;
    // A payload the tap did not copy (NFQUEUE copies the headers only): the IP length says it.
    let payload = usize::from(byte(b, 24)) * 8 * usize::from(egress);
    let mut bytes = if byte(b, 0) & 8 != 0 {
        let (l6, p6) = (V6_LOCAL, V6_PEER);
        let (s6, d6) = if egress { (l6, p6) } else { (p6, l6) };
        wire::build_ack_v6(&pkt, s6, d6, timestamps)
    } else {
        wire::build_ack(&pkt, timestamps)
    }
    .expect("a TCP packet builds");
    wire::claim_payload(&mut bytes, payload);
    bytes
}

/// Whatever the shim would inject builds to bytes that parse back to the same header (an IPv6
/// flow's to the addresses its ids name). Returns how many it injected.
fn check_injected(shim: &mut Tracks, addrs: &V6Addrs, now: Time) -> u64 {
    let mut n = 0;
    while let Some((_, pkt)) = shim.poll_inject(now) {
        let Some(h) = pkt.tcp() else {
            continue;
        };
        let Some(bytes) = wire::spoofed_ack(&pkt, addrs) else {
            // Only an IPv6 id the bounded table gave to another address since.
            let t = pkt.tuple;
            assert!(
                V6Addrs::is_id(t.src) && addrs.addr(t.src).is_none()
                    || V6Addrs::is_id(t.dst) && addrs.addr(t.dst).is_none(),
                "a TCP packet builds"
            );
            continue;
        };
        let seg = wire::parse(&bytes).expect("the agent's own ACK parses");
        let back = seg.packet.tcp().expect("and is TCP");
        assert_eq!((back.seq, back.ack, back.flags), (h.seq, h.ack, h.flags));
        match seg.v6 {
            Some((s, d)) => {
                assert_eq!(
                    (addrs.addr(pkt.tuple.src), addrs.addr(pkt.tuple.dst)),
                    (Some(s), Some(d))
                );
                let ports = |t: FiveTuple| (t.src_port, t.dst_port);
                assert_eq!(ports(seg.packet.tuple), ports(pkt.tuple));
            }
            None => assert_eq!(seg.packet.tuple, pkt.tuple),
        }
        let room = if seg.timestamps { 3 } else { 4 };
        assert!(back.sack.iter().eq(h.sack.iter().take(room)));
        n += 1;
    }
    n
}

/// Runs the shim's timer up to `now`. Each firing must move the deadline on, or the agent would spin.
fn run_timers(shim: &mut Tracks, addrs: &V6Addrs, now: Time) -> u64 {
    let mut injected = 0;
    for _ in 0..100_000 {
        match shim.poll_timeout() {
            Some(t) if t <= now => {
                shim.handle_timeout(now);
                injected += check_injected(shim, addrs, now);
            }
            _ => return injected,
        }
    }
    panic!("the shim's timer fires without end at {now:?}");
}

/// Runs one input (see the module's documentation). Returns the number of spoofed ACKs the agent
/// would have injected.
pub fn exercise(data: &[u8]) -> u64 {
    let Some((&sel, mut rest)) = data.split_first() else {
        return 0;
    };
    let mut cfg = real_host_tracks();
    if sel & 1 != 0 {
        cfg.rtt_source = RttSource::Timestamps;
    }
    cfg.pass_sack_dupacks = sel & 2 == 0;
    cfg.skip_sack_flows = sel & 4 == 0;
    if sel & 8 != 0 {
        cfg.fake_sack_block = FakeSackBlock::Highest;
    }
    cfg.sack = sel & 16 != 0;
    cfg.fake_sack = sel & 32 != 0;
    if sel & 64 != 0 {
        cfg.max_flows = SMALL_TABLE;
    }
    if sel & 128 != 0 {
        cfg.fixed_beta = Some(Dur::from_millis(1));
    }
    if cfg.validate().is_err() {
        return 0;
    }
    let max_flows = cfg.max_flows;
    let mut shim = Tracks::new(cfg, stream(1, Stream::Shim, 0));
    let mut counters = AgentCounters::default();
    // Small on purpose, so that raw IPv6 bytes reach the table's reassignment.
    let mut addrs = V6Addrs::new(2 * max_flows + 2);
    let mut now = Time::ZERO;
    let mut framed = Vec::new();
    let mut queued = Vec::new();
    let mut id = 0u32;
    let mut injected = 0;
    while rest.len() >= 3 {
        let (r, tail) = rest.split_at(3);
        let n = usize::from(r[2]).min(tail.len());
        let (body, tail) = tail.split_at(n);
        rest = tail;
        let op = r[0];
        let dir = if op & 4 != 0 {
            TapDir::Egress
        } else {
            TapDir::Ingress
        };
        // Gaps up to ~10 ms, so stalls of beta (>= 1 ms) and idle expiry are reached.
        now += Dur::from_micros(u64::from(r[1]) * 40);
        injected += run_timers(&mut shim, &addrs, now);
        let bytes = match op & 3 {
            // Raw bytes as a tc-BPF ring record: whatever packet it holds.
            0 if op & 16 != 0 => {
                if let Some(t) = parse_record(body) {
                    shim_packet(&mut shim, &mut counters, &mut addrs, now, t.dir, t.bytes());
                }
                None
            }
            // Raw bytes, as the netlink socket delivered them: whatever packets they hold.
            0 => {
                queued.clear();
                parse_datagram(body, &mut queued);
                for q in queued.drain(..) {
                    if let Some(d) = tap_dir(q.hook) {
                        shim_packet(&mut shim, &mut counters, &mut addrs, now, d, &q.bytes);
                    }
                }
                None
            }
            // Raw bytes as an IP packet.
            1 => Some(body.to_vec()),
            s => Some(segment(body, dir == TapDir::Egress, s == 3)),
        };
        if let Some(mut bytes) = bytes {
            if op & 16 != 0 {
                // Through a tc-BPF ring record, as the program writes it (headers only).
                let rec = record(0, dir, &bytes, op & 32 != 0);
                let t = parse_record(&rec).expect("the program's record parses");
                assert_eq!((t.dir, t.kernel_dropped), (dir, Some(op & 32 != 0)));
                assert_eq!(t.bytes(), &bytes[..bytes.len().min(CAPTURE_BYTES)]);
                bytes = t.bytes().to_vec();
            }
            if op & 8 != 0 {
                // Through the netlink framing, as the kernel queues it.
                id = id.wrapping_add(1);
                let hook = if dir == TapDir::Egress {
                    HOOK_LOCAL_OUT
                } else {
                    HOOK_LOCAL_IN
                };
                packet_message(id, hook, &bytes, &mut framed);
                queued.clear();
                parse_datagram(&framed, &mut queued);
                assert_eq!(queued.len(), 1, "a framed packet parses to one queued packet");
                assert_eq!((queued[0].id, tap_dir(queued[0].hook)), (id, Some(dir)));
                assert_eq!(queued[0].bytes, bytes);
            }
            shim_packet(&mut shim, &mut counters, &mut addrs, now, dir, &bytes);
        }
        // After every record, whichever way its packets came.
        injected += check_injected(&mut shim, &addrs, now);
        assert!(
            shim.tracked_flows() <= max_flows,
            "{} flows tracked, over max_flows = {max_flows}",
            shim.tracked_flows()
        );
    }
    // Long after the last packet: every timer runs out and nothing is left to spin.
    injected += run_timers(&mut shim, &addrs, now + Dur::from_millis(10_000));
    injected
}

#[cfg(test)]
mod tests {
    use super::exercise;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The stable twin of the `packet_path` fuzz target.
        #[test]
        fn the_packet_path_survives_arbitrary_input(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            exercise(&data);
        }
    }

    /// The driver reaches the shim's spoofing, so its checks of injected ACKs are not vacuous: egress
    /// data of one flow, one ACK, then silence past beta; over IPv4 and over IPv6.
    #[test]
    fn a_stalled_flow_gets_spoofed_acks_through_the_driver() {
        for family in [0u8, 8] {
            stalled_flow(family);
        }
    }

    fn stalled_flow(family: u8) {
        // Fixed beta (1 ms), SACK off, the real host's defaults otherwise.
        let mut input = vec![0x80];
        let mut record = |op: u8, dt: u8, fields: &[(usize, u8)]| {
            let mut body = [0u8; 25];
            body[0] = family;
            for &(i, v) in fields {
                body[i] = v;
            }
            input.extend_from_slice(&[op, dt, body.len() as u8]);
            input.extend_from_slice(&body);
        };
        // Egress data segments 0..4 (seq steps of 1448), ACK flag, 1448-byte payloads; then the peer
        // ACKs the first one; then 25 ms of silence.
        for k in 0..4u8 {
            record(2 | 4, 1, &[(1, k), (5, 0x10), (24, 181)]);
        }
        record(2, 1, &[(3, 1), (5, 0x10)]);
        for _ in 0..10 {
            record(1, 250, &[]);
        }
        assert!(
            exercise(&input) > 0,
            "no spoofed ACK ({}): the driver does not reach the shim's recovery",
            if family == 8 { "IPv6" } else { "IPv4" }
        );
    }
}
