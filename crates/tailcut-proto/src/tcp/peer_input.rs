//! A TCP endpoint's receive path (`TcpEndpoint::handle_packet`) on what a peer may send over the
//! TCP-in-UDP encapsulation (`wire::tcp_udp`), as one function that the libFuzzer target
//! (`fuzz/fuzz_targets/tcp_endpoint.rs`, which also bounds the heap) and the stable property test
//! (`tests/peer_input.rs`) share: arbitrary datagrams through `parse` (the only way the MPTCP /
//! TCP-IR / coded-ACK extensions arrive), and well-formed segments with sequence and ACK numbers near
//! the connection's (so they land in its windows), any flags, SACK blocks, timestamps, ECN and trimmed
//! payloads, at arbitrary times. The endpoint is a sender (client with a message in flight) or a receiver (server
//! expecting one), under each loss detection, with CP, delayed ACKs, the handshake, ECN and carrying
//! real bytes (with TCP-IR's rebuild when CP is also on) on or off.
//!
//! It panics on a property violation: a hang (a timer that fires without moving its deadline on, an
//! output loop without end) or any panic inside the engine.
//!
//! Input: byte 0 picks the configuration; then records of `[dt, op, len]` followed by `len` bytes.

use crate::engine::Engine;
use crate::engine::Outgoing;
use crate::packet::{Addr, Ecn, FiveTuple, Header, Packet, Proto, TcpFlags, TcpHeader};
use crate::seq::Seq;
use crate::tcp::{DelayedAck, LossDetection, Role, TcpConfig, TcpEndpoint, TcpIrConfig};
use crate::time::{Dur, Time};
use crate::wire::tcp_udp::{build, parse};

/// Initial sequence numbers of the endpoint under test and of the (fuzzed) peer.
const ISN: Seq = Seq(1_000);
const PEER_ISN: Seq = Seq(9_000_000);

/// The message the client sends or the server expects: 200 segments, so the scoreboard and the
/// receiver's out-of-order ranges have room to grow.
const MESSAGE: u64 = 200 * 1448;

/// Output loops end: an endpoint that keeps offering packets at one instant is a bug (a hang in the
/// runtime's drain loop).
const MAX_OUTPUT: usize = 100_000;

pub(crate) fn drain(e: &mut impl Engine, now: Time, buf: &mut Vec<u8>) {
    for _ in 0..MAX_OUTPUT {
        buf.clear();
        let Some(p) = e.poll_transmit(now, buf) else {
            while e.poll_event().is_some() {}
            return;
        };
        // With bytes, a packet's bytes are its payload; without, there are none.
        assert!(
            buf.is_empty() || buf.len() == p.payload_len() as usize,
            "payload bytes disagree with the header"
        );
    }
    panic!("poll_transmit offers packets without end at {now:?}");
}

pub(crate) fn run_timers(e: &mut impl Engine, now: Time, buf: &mut Vec<u8>) {
    for _ in 0..MAX_OUTPUT {
        match e.poll_timeout() {
            Some(t) if t <= now => {
                e.handle_timeout(now);
                drain(e, now, buf);
            }
            _ => return,
        }
    }
    panic!("the timer fires without end at {now:?}");
}

pub(crate) fn byte(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

pub(crate) fn word(b: &[u8], i: usize) -> u32 {
    u32::from(u16::from_le_bytes([byte(b, i), byte(b, i + 1)]))
}

/// Sequence numbers are counted in steps of an eighth of the 1448-byte MSS, so that lengths and
/// offsets built from the input line up with the connection's segments as often as not.
const STEP: u32 = 181;

/// A segment from `b`: sequence numbers after the peer's ISN and ACK numbers and SACK edges after
/// ours (`isn`), in `STEP`s (a few MB at most), exact or off by a few bytes; and whether it is
/// trimmed.
pub(crate) fn header(b: &[u8], isn: Seq, peer_isn: Seq) -> (TcpHeader, bool) {
    let jitter = if byte(b, 2) & 8 != 0 {
        u32::from(byte(b, 2) & 7)
    } else {
        0
    };
    let near = |isn: Seq, i: usize| Seq(isn.0.wrapping_add(1 + word(b, i) * STEP + jitter));
    let mut h = TcpHeader {
        seq: near(peer_isn, 0),
        ack: near(isn, 3),
        flags: TcpFlags(byte(b, 5)),
        window: word(b, 6) << (byte(b, 8) & 15),
        payload_len: u32::from(byte(b, 9) % 50) * STEP,
        ts_val: u32::from(byte(b, 11)) << 8,
        ts_ecr: u32::from(byte(b, 12)) << 8,
        ..TcpHeader::default()
    };
    for k in 0..usize::from(byte(b, 13) % 5) {
        let left = near(isn, 14 + 3 * k);
        h.sack.push(
            left,
            Seq(left.0.wrapping_add(u32::from(byte(b, 16 + 3 * k)) * 1448)),
        );
    }
    (h, byte(b, 29) & 1 != 0)
}

/// The records of an input after its configuration byte: `(dt, op, body)` from `[dt, op, len]` and
/// the `len` bytes after it (fewer at the end of the input).
pub(crate) fn records(mut rest: &[u8]) -> impl Iterator<Item = (u8, u8, &[u8])> {
    std::iter::from_fn(move || {
        let (r, tail) = rest.split_first_chunk::<3>()?;
        let n = usize::from(r[2]).min(tail.len());
        let (body, tail) = tail.split_at(n);
        rest = tail;
        Some((r[0], r[1], body))
    })
}

/// Writes a record's datagram into `out`: its body as it is (`op` bit 0), or the segment `segment`
/// makes, built as a sender would with the payload its length says; false if that does not build.
pub(crate) fn build_datagram(
    op: u8,
    body: &[u8],
    segment: impl FnOnce() -> (TcpHeader, bool),
    out: &mut Vec<u8>,
) -> bool {
    const PAYLOAD: [u8; 9000] = [0x5a; 9000];
    out.clear();
    if op & 1 != 0 {
        out.extend_from_slice(body);
        return true;
    }
    let (h, trimmed) = segment();
    let len = if trimmed { 0 } else { h.payload_len as usize };
    build(&h, trimmed, &PAYLOAD[..len], out).is_ok()
}

/// The packet a datagram arriving on `tuple` makes once parsed (what reaches an engine is always what
/// the parser gives it), with the ECN codepoint in `op`'s top two bits, and its payload.
pub(crate) fn arrival(datagram: &[u8], op: u8, tuple: FiveTuple) -> Option<(Packet, &[u8])> {
    let seg = parse(datagram).ok()?;
    let pkt = Packet {
        tuple,
        size_bytes: datagram.len() as u32 + 28,
        ecn: match op >> 6 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect0,
            _ => Ecn::Ce,
        },
        trimmed: seg.trimmed,
        header: Header::Tcp(seg.header),
        ..Packet::default()
    };
    Some((pkt, seg.payload))
}

/// The TCP configuration both drivers (this one and MPTCP's) take from the selector byte `sel`: bit 1
/// SACK, bit 2 RACK-TLP (else DupThresh), bit 3 CP, bit 6 ECN, bit 7 carrying bytes; millisecond
/// timers so that an input's few milliseconds reach timeouts and back-off.
pub(crate) fn driver_tcp(sel: u8) -> TcpConfig {
    let carry = sel & 128 != 0;
    TcpConfig {
        mss_bytes: 1448,
        min_rto: Dur::from_millis(1),
        max_rto: Dur::from_millis(200),
        initial_rto: Dur::from_millis(10),
        sack: sel & 2 != 0,
        loss_detection: if sel & 4 != 0 {
            LossDetection::RackTlp
        } else {
            LossDetection::Dupthresh
        },
        cp: sel & 8 != 0,
        ecn: sel & 64 != 0,
        carry_bytes: carry,
        // A receiver carrying bytes holds up to its window of them (docs/net.md); a socket runtime
        // sizes it, as here, far below the simulator's 16 MB default.
        rcv_window_bytes: if carry { 1 << 20 } else { 16 << 20 },
        ..TcpConfig::default()
    }
}

/// Runs one input (see the module's documentation).
pub fn exercise(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let cfg = TcpConfig {
        delayed_ack: (sel & 16 != 0).then(|| DelayedAck::Fixed(Dur::from_micros(200))),
        handshake: sel & 32 != 0,
        tcp_ir: (sel & 0x88 == 0x88).then(TcpIrConfig::default),
        ..driver_tcp(sel)
    };
    let client = sel & 1 != 0;
    let tuple = FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 1000,
        dst_port: 80,
        proto: Proto::Udp,
    };
    let role = if client { Role::Client } else { Role::Server };
    let mut e = TcpEndpoint::new(cfg, tuple, role, ISN, PEER_ISN);
    let mut now = Time::ZERO;
    let mut buf = Vec::new();
    if client {
        e.send_bytes(now, Outgoing::Message, 1, &vec![0xa5; MESSAGE as usize]);
    } else {
        e.expect_message(1, MESSAGE);
    }
    drain(&mut e, now, &mut buf);
    let mut datagram = Vec::new();
    for (dt, op, body) in records(rest) {
        now += Dur::from_micros(u64::from(dt) * 20);
        run_timers(&mut e, now, &mut buf);
        if !build_datagram(op, body, || header(body, ISN, PEER_ISN), &mut datagram) {
            continue;
        }
        let Some((pkt, payload)) = arrival(&datagram, op, tuple.reversed()) else {
            continue;
        };
        e.handle_packet(now, &pkt, payload);
        drain(&mut e, now, &mut buf);
    }
    // Long after the last packet: the timers back off to their cap and keep ending.
    run_timers(&mut e, now + Dur::from_millis(2_000), &mut buf);
    if let Some(d) = e.take_bytes(1) {
        assert_eq!(d.len() as u64, MESSAGE, "a message's bytes are its length");
    }
}
