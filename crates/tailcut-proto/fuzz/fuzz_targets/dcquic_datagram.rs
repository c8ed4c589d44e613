//! A DCQUIC engine's datagram input (`handle_packet`) on arbitrary UDP payloads, to a server and to a
//! client that is connecting: quinn-proto parses them (they never decrypt without the keys, so this
//! covers packet parsing, version negotiation, retry and the engine's handling of what quinn returns).
//! It never panics and never holds more heap than the engines' buffers allow (`docs/dcquic.md`,
//! "Limits"). Input: records of `[len_hi, len_lo, time step]` followed by `len` bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use tailcut_proto::dcquic::{DcquicConfig, DcquicEngine, Shared};
use tailcut_proto::packet::{Addr, FiveTuple, Packet, Proto};
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::{Dur, Engine, Time};
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Two engines with their quinn state (1 MB socket buffers by default), with room to spare.
const LIMIT: usize = 64 << 20;

fn shared() -> Arc<Shared> {
    static SHARED: OnceLock<Arc<Shared>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let cfg = DcquicConfig {
                tail_fec: true,
                // quinn sets up a receive slot per stream the peer may open, at every connection's
                // start (1024 + 1024 by default, zeroed pages: a quarter of each input's time). Stream
                // frames are never reached here (the input cannot be decrypted), so fewer cost nothing
                // in coverage.
                max_streams: 16,
                ..DcquicConfig::default()
            };
            Arc::new(Shared::new(cfg, std::time::Instant::now()))
        })
        .clone()
}

fn drain(e: &mut DcquicEngine, now: Time) {
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

fuzz_target!(|data: &[u8]| {
    let shared = shared();
    let t = FiveTuple {
        src: Addr(1),
        dst: Addr(10),
        src_port: 1000,
        dst_port: 2000,
        proto: Proto::Udp,
    };
    let base = reset_peak();
    {
        let mut server = DcquicEngine::new(
            shared.clone(),
            t.reversed(),
            false,
            vec![t.dst],
            10_000,
            rng::stream(1, Stream::Engine, 0),
            Time::ZERO,
        );
        let mut client = DcquicEngine::new(
            shared,
            t,
            true,
            vec![t.src],
            10_000,
            rng::stream(1, Stream::Engine, 1),
            Time::ZERO,
        );
        client.send_message(Time::ZERO, 1, 5000);
        drain(&mut client, Time::ZERO);
        let mut now = Time::ZERO;
        let mut rest = data;
        while let Some((rec, tail)) = rest.split_first_chunk::<3>() {
            let n = (u16::from_be_bytes([rec[0], rec[1]]) as usize % 1500).min(tail.len());
            let (bytes, tail) = tail.split_at(n);
            rest = tail;
            now += Dur::from_micros(rec[2] as u64 * 4);
            server.handle_packet(
                now,
                &Packet {
                    tuple: t,
                    ..Packet::default()
                },
                bytes,
            );
            drain(&mut server, now);
            client.handle_packet(
                now,
                &Packet {
                    tuple: t.reversed(),
                    ..Packet::default()
                },
                bytes,
            );
            drain(&mut client, now);
        }
    }
    check_peak(base, LIMIT, "dcquic datagram input");
});
