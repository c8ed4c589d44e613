//! DCQUIC on real sockets, what a server hears from the network: the runtime's connection routing
//! (`dcquic::route`) and a real-mode server engine (ring's TLS provider, the test certificate, the
//! ALPN, FIN-delimited messages, stateless responses; keys from `real_testkit`'s fixed seed) on
//! arbitrary datagrams. Never panics; a route's connection ID lies inside the datagram; stateless
//! answers stay bounded; live heap under 64 MB.
//! Input: records of `[len_hi, len_lo, time step]` followed by `len` bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use tailcut_proto::dcquic::real::RealMode;
use tailcut_proto::dcquic::real_testkit;
use tailcut_proto::dcquic::route::{route, Route};
use tailcut_proto::dcquic::{DcquicConfig, DcquicEngine, Shared};
use tailcut_proto::packet::{Addr, FiveTuple, Packet, Proto};
use tailcut_proto::{Dur, Engine, Time};
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

const LIMIT: usize = 64 << 20;

fn shared() -> Arc<Shared> {
    static SHARED: OnceLock<Arc<Shared>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let mode = RealMode {
                client: None,
                ..real_testkit::mode()
            };
            let cfg = DcquicConfig {
                max_streams: 16,
                ..DcquicConfig::default()
            };
            Arc::new(Shared::real(cfg, std::time::Instant::now(), mode).expect("valid"))
        })
        .clone()
}

fuzz_target!(|data: &[u8]| {
    let t = FiveTuple {
        src: Addr(10),
        dst: Addr(1),
        src_port: 1,
        dst_port: 1,
        proto: Proto::Udp,
    };
    let base = reset_peak();
    {
        let keys = real_testkit::server_keys(7, 1);
        let mut server = DcquicEngine::real_server(shared(), t, keys, Time::ZERO).expect("a server");
        let mut now = Time::ZERO;
        let mut rest = data;
        let mut buf = Vec::new();
        while let Some((rec, tail)) = rest.split_first_chunk::<3>() {
            let n = (u16::from_be_bytes([rec[0], rec[1]]) as usize % 1500).min(tail.len());
            let (bytes, tail) = tail.split_at(n);
            rest = tail;
            match route(bytes) {
                Route::Short { key } => assert_eq!(key.to_be_bytes(), bytes[1..5]),
                Route::Long { dcid, .. } => assert_eq!(dcid, &bytes[6..6 + usize::from(bytes[5])]),
                Route::Foreign => {}
            }
            now += Dur::from_micros(u64::from(rec[2]) * 4);
            let from = Packet {
                tuple: t.reversed(),
                ..Packet::default()
            };
            server.handle_packet(now, &from, bytes);
            let mut sent = 0;
            while server.poll_transmit(now, &mut buf).is_some() {
                buf.clear();
                sent += 1;
                assert!(sent < 10_000, "a server that never stops sending");
            }
            while server.poll_event().is_some() {}
            if server.poll_timeout().is_some_and(|d| d <= now) {
                server.handle_timeout(now);
            }
        }
    }
    check_peak(base, LIMIT, "dcquic real-mode server input");
});
