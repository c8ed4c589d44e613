//! An MPTCP (or FUSO) endpoint's receive path (`MptcpEndpoint::handle_packet`) on what a peer may
//! send over the runtime's TCP-in-UDP encapsulation, as one function that the libFuzzer target
//! (`fuzz/fuzz_targets/mptcp_endpoint.rs`, which also bounds the heap) and the stable property test
//! (`tests/peer_input.rs`) share: arbitrary datagrams through `parse`, and well-formed segments on
//! any of the sub-flows (or none) with sub-flow sequence and ACK numbers near the connection's and
//! data sequence numbers and data ACKs near the data level's, any flags, SACK blocks, ECN and
//! trimmed payloads, at arbitrary times. The endpoint is a sender (client with a message in flight)
//! or a receiver (server expecting one), plain MPTCP or FUSO, with CP sub-flows, SACK, RACK-TLP and
//! carrying real bytes on or off.
//!
//! It panics on a property violation: a hang (a timer that fires without moving its deadline on, an
//! output loop without end), a packet whose bytes disagree with its header, or any panic inside the
//! engine.
//!
//! Input: byte 0 picks the configuration; then records of `[dt, op, len]` followed by `len` bytes;
//! `op` bit 0: raw datagram (else built), bits 1-2: the sub-flow (3 is none of them), bits 6-7: ECN.

use super::{MptcpConfig, MptcpEndpoint};
use crate::engine::{Engine, Outgoing};
use crate::packet::{Addr, FiveTuple, Proto, TcpExt};
use crate::rng::Rng;
use crate::seq::Seq;
use crate::tcp::peer_input::{
    arrival, build_datagram, byte, drain, driver_tcp, header, records, run_timers, word,
};
use crate::time::{Dur, Time};
use rand::SeedableRng;

const ISN: Seq = Seq(1_000);
const PEER_ISN: Seq = Seq(9_000_000);
const SUBFLOWS: u32 = 3;
/// The message the client sends or the server expects: 200 segments.
const MESSAGE: u64 = 200 * 1448;

/// Sub-flow `i`'s initial sequence number from the connection's (as `MptcpEndpoint::new` spreads
/// them).
fn spread(isn: Seq, i: u32) -> Seq {
    isn.wrapping_add(i.wrapping_mul(0x3c6e_f35f))
}

/// Runs one input (see the module's documentation).
pub fn exercise(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let tcp = driver_tcp(sel);
    let base = if sel & 16 != 0 {
        MptcpConfig::fuso()
    } else {
        MptcpConfig::default()
    };
    let cfg = MptcpConfig {
        subflows: SUBFLOWS,
        warmup_bytes: if sel & 32 != 0 { 3_000 } else { 0 },
        ..base
    };
    let client = sel & 1 != 0;
    let tuple = FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 1000,
        dst_port: 80,
        proto: Proto::Udp,
    };
    let mut e = MptcpEndpoint::new(tcp, cfg, tuple, ISN, PEER_ISN, Rng::seed_from_u64(u64::from(sel)));
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
        let sub = u32::from(op >> 1) & 3;
        let segment = || {
            let (mut h, trimmed) = header(body, spread(ISN, sub), spread(PEER_ISN, sub));
            h.ext = TcpExt::Dss {
                dsn: u64::from(word(body, 30)) * 181 + u64::from(byte(body, 32) & 7),
                data_ack: u64::from(word(body, 33)) * 181,
            };
            (h, trimmed)
        };
        if !build_datagram(op, body, segment, &mut datagram) {
            continue;
        }
        let port = sub as u16;
        let from = FiveTuple {
            src_port: 80 + port,
            dst_port: 1000 + port,
            ..tuple.reversed()
        };
        let Some((pkt, payload)) = arrival(&datagram, op, from) else {
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
