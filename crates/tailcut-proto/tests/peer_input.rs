//! Engine receive paths on what a misbehaving peer may send, as property tests on stable Rust (the
//! libFuzzer targets in `fuzz/` run the same kind of input for longer and count heap bytes): no panic,
//! and the engine goes on answering. DCQUIC's tail-FEC state has its own property test in
//! `dcquic/tailfec.rs`, which checks the bytes it holds.

use proptest::prelude::*;
use std::sync::Arc;
use tailcut_proto::cloudburst::{Block, CbHeader, CloudBurstConfig, CloudBurstEndpoint, Codec, Kind};
use tailcut_proto::dcquic::{DcquicConfig, DcquicEngine, Shared};
use tailcut_proto::packet::{Addr, FiveTuple, Packet, Proto};
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::{Dur, Engine, Time};

fn tuple() -> FiveTuple {
    FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 100,
        dst_port: 200,
        proto: Proto::Udp,
    }
}

/// Drains every output after an input, as the simulator does, and runs the timers that are due.
fn drain(e: &mut dyn Engine, now: Time) {
    let mut buf = Vec::new();
    for _ in 0..64 {
        while e.poll_transmit(now, &mut buf).is_some() {
            buf.clear();
        }
        while e.poll_event().is_some() {}
        match e.poll_timeout() {
            Some(t) if t <= now => e.handle_timeout(now),
            _ => return,
        }
    }
}

/// A packet of CloudBurst input: raw bytes, or a header with consistent sizes and arbitrary fields.
#[derive(Clone, Debug)]
enum CbInput {
    Raw(Vec<u8>),
    Header {
        packets: u8,
        extra: u16,
        msg_id: u8,
        kind: u8,
        name: u64,
        symbol: Vec<u8>,
    },
}

fn cb_input() -> impl Strategy<Value = CbInput> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(CbInput::Raw),
        (
            1u8..=64,
            any::<u16>(),
            any::<u8>(),
            0u8..3,
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..20),
        )
            .prop_map(|(packets, extra, msg_id, kind, name, symbol)| CbInput::Header {
                packets,
                extra,
                msg_id,
                kind,
                name,
                symbol,
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn cloudburst_endpoint_takes_any_input(
        raptorq: bool,
        carry_bytes: bool,
        blocks: bool,
        inputs in proptest::collection::vec((cb_input(), 0u64..200), 0..120),
    ) {
        let base = if blocks { CloudBurstConfig::default() } else { CloudBurstConfig::paper() };
        let cfg = CloudBurstConfig {
            codec: if raptorq { Codec::Raptorq } else { Codec::Lt },
            carry_bytes,
            symbol_bytes: 16,
            ..base
        };
        let mut e = CloudBurstEndpoint::new(cfg.clone(), tuple(), rng::stream(1, Stream::Engine, 0))
            .expect("the default config is valid");
        let pkt = Packet { tuple: tuple().reversed(), ..Packet::default() };
        let mut now = Time::ZERO;
        let mut payload = Vec::new();
        for (input, step) in inputs {
            now += Dur::from_micros(step);
            payload.clear();
            match input {
                CbInput::Raw(bytes) => payload.extend_from_slice(&bytes),
                CbInput::Header { packets, extra, msg_id, kind, name, symbol } => {
                    let p = packets as u32;
                    let message_bytes = ((p - 1) * cfg.symbol_bytes + 1 + extra as u32 % cfg.symbol_bytes)
                        .min(p * cfg.symbol_bytes);
                    let mask = if packets == 64 { u64::MAX } else { (1 << packets) - 1 };
                    let kind = match (kind, cfg.codec) {
                        (0, _) => Kind::Stop,
                        (_, Codec::Lt) if name & mask != 0 => Kind::Coded { set: name & mask },
                        (_, Codec::Lt) => Kind::Stop,
                        (_, Codec::Raptorq) => Kind::Symbol { esi: name as u32 & 0xff_ffff },
                    };
                    // Blocks of messages of up to 4 blocks; only full blocks may precede the last.
                    let block = if blocks {
                        let last = (extra >> 8) % 4;
                        Block { index: ((extra >> 10) % 4).min(last), last }
                    } else {
                        Block::ONLY
                    };
                    let message_bytes = if block.index < block.last { p * cfg.symbol_bytes } else { message_bytes };
                    CbHeader { packets, message_bytes, msg_id, kind, block }.emit_to_vec(cfg.layout(), &mut payload);
                    if !matches!(kind, Kind::Stop) {
                        payload.extend_from_slice(&symbol);
                        // Mostly the right symbol length (so the decoders are reached), sometimes not.
                        let want = match (cfg.carry_bytes, cfg.codec) {
                            (true, _) => cfg.symbol_bytes as usize,
                            (false, Codec::Lt) => 0,
                            (false, Codec::Raptorq) => 8,
                        };
                        if name % 8 != 0 {
                            payload.resize(cfg.layout().header_bytes() + want, 0x5a);
                        }
                    }
                }
            }
            e.handle_packet(now, &pkt, &payload);
            drain(&mut e, now);
            // Decoded messages (with carry_bytes) wait for the application; it takes them.
            let id = payload.get(3).copied().unwrap_or(0);
            while e.take_bytes(id.into()).is_some() {}
        }
    }
}

fn epoch() -> std::time::Instant {
    #[allow(clippy::disallowed_methods)] // quinn's time type; only differences from it are used
    std::time::Instant::now()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary UDP payloads to a DCQUIC server and a connecting client: quinn-proto parses them
    /// (they never decrypt, so this covers its packet parsing, version negotiation and the engine's
    /// datagram path), without a panic.
    #[test]
    fn dcquic_engine_takes_any_datagram(
        tail_fec: bool,
        datagrams in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..1400), 0u64..500),
            0..24,
        ),
    ) {
        let shared = Arc::new(Shared::new(DcquicConfig { tail_fec, ..DcquicConfig::default() }, epoch()));
        let t = tuple();
        let mut server = DcquicEngine::new(
            shared.clone(), t.reversed(), false, vec![t.dst], 10_000,
            rng::stream(1, Stream::Engine, 0), Time::ZERO,
        );
        let mut client = DcquicEngine::new(
            shared, t, true, vec![t.src], 10_000, rng::stream(1, Stream::Engine, 1), Time::ZERO,
        );
        client.send_message(Time::ZERO, 1, 5000);
        let mut now = Time::ZERO;
        for (bytes, step) in datagrams {
            now += Dur::from_micros(step);
            let to_server = Packet { tuple: t, ..Packet::default() };
            server.handle_packet(now, &to_server, &bytes);
            drain(&mut server, now);
            let to_client = Packet { tuple: t.reversed(), ..Packet::default() };
            client.handle_packet(now, &to_client, &bytes);
            drain(&mut client, now);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// TCP's receive path over the TCP-in-UDP encapsulation: the `tcp_endpoint` fuzz target's driver
    /// (`tcp::peer_input`) on arbitrary input; half of its records are well-formed segments whatever
    /// the bytes, so arbitrary input reaches the engine's windows.
    #[test]
    fn tcp_endpoints_survive_arbitrary_segments(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
        tailcut_proto::tcp::peer_input::exercise(&data);
    }

    /// MPTCP's and FUSO's receive path over the same encapsulation, on every sub-flow: the
    /// `mptcp_endpoint` fuzz target's driver (`mptcp::peer_input`).
    #[test]
    fn mptcp_endpoints_survive_arbitrary_segments(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
        tailcut_proto::mptcp::peer_input::exercise(&data);
    }
}

/// Found by the `mptcp_endpoint` fuzz target: a forged ACK shrank a sub-flow's peer window below the
/// chunk queued on it, the sub-flow sent the chunk in pieces, and the rest later went out in one
/// segment with the next chunk under the first one's DSN (bytes past the written stream). Each piece
/// now carries its own DSN and no chunk joins an unsent rest.
#[test]
fn an_mptcp_chunk_sent_in_pieces_keeps_each_piece_s_dsn() {
    tailcut_proto::mptcp::peer_input::exercise(include_bytes!("data/mptcp_partial_chunk.bin"));
}
