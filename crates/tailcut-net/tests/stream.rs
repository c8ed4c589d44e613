//! The stream schemes over real UDP sockets on loopback: tailcut's TCP, MPTCP and FUSO engines
//! (TCP-in-UDP, calls framed on the stream). Functional facts only (bytes, counters), never timings:
//! the machine running the tests is shared.

mod common;

use common::{answer, calls_through, expected, faults, settled, taken, LOOPBACK};
use rand::{Rng as _, SeedableRng};
use serde_json::json;
use std::net::{SocketAddr, UdpSocket};
use tailcut_net::{Client, NetConfig, Network, SendLoss, Server, ServerStats};
use tailcut_proto::rng::{mix64, Rng};
use tailcut_proto::tcp::CongestionControl;
use tailcut_proto::wire::tcp_udp;
use tailcut_proto::{Dur, Seq, TcpFlags, TcpHeader};

const SCHEMES: [&str; 3] = ["tcp", "mptcp", "fuso"];

/// `scheme` with datacenter timers (5 ms minimum RTO), so lost tails cost milliseconds, not Linux's
/// 200; three sub-flows for the multipath schemes.
fn config_of(scheme: &str) -> NetConfig {
    config_with(scheme, json!({}))
}

/// [`config_of`] with more of the scheme's `params`.
fn config_with(scheme: &str, more: serde_json::Value) -> NetConfig {
    let mut params = json!({"min_rto": "5ms", "initial_rto": "20ms"});
    if ["mptcp", "fuso"].contains(&scheme) {
        params["subflows"] = json!(3);
    }
    if let (Some(p), serde_json::Value::Object(m)) = (params.as_object_mut(), more) {
        p.extend(m);
    }
    NetConfig::default().scheme_json(scheme, params).unwrap()
}

fn config() -> NetConfig {
    config_of("tcp")
}

/// Sizes from 0 bytes to ~100 KB, and contents, from a seed.
fn request(seed: u64, i: u64) -> Vec<u8> {
    let mut rng = Rng::seed_from_u64(mix64(seed ^ i));
    let len = match i % 4 {
        0 => rng.random_range(0..200),
        1 => rng.random_range(200..4_000),
        2 => rng.random_range(4_000..20_000),
        _ => rng.random_range(20_000..100_000),
    };
    (0..len).map(|_| rng.random()).collect()
}

fn server(cfg: NetConfig) -> Server {
    Server::bind(LOOPBACK.parse().unwrap(), cfg, answer).unwrap()
}

/// 1,000 calls of `scheme`, every response checked, through each side's send hook.
fn thousand_calls(
    scheme: &str,
    hook: impl Fn(u64) -> Option<SendLoss>,
) -> (ServerStats, tailcut_net::ClientStats, u64) {
    thousand_calls_with(config_of(scheme), hook)
}

/// 1,000 calls with `cfg` on both ends, through each side's send hook.
fn thousand_calls_with(
    cfg: NetConfig,
    hook: impl Fn(u64) -> Option<SendLoss>,
) -> (ServerStats, tailcut_net::ClientStats, u64) {
    let (ss, cs, resent) = calls_through(&cfg, hook, 1_000, |i| request(7, i));
    assert_eq!(ss.associations, 1, "{:?}", cfg.scheme);
    assert_eq!(ss.protocol_errors + cs.protocol_errors, 0, "{:?}", cfg.scheme);
    (ss, cs, resent)
}

#[test]
fn thousand_mixed_rpcs_arrive_byte_exact_through_loss_reordering_and_duplication() {
    for scheme in SCHEMES {
        let (ss, cs, resent) = thousand_calls(scheme, faults);
        // The hook did drop, and the scheme repaired it by sending again.
        assert!(
            cs.dropped_by_hook > 0 && ss.dropped_by_hook > 0,
            "{scheme:?}: {cs:?}\n{ss:?}"
        );
        assert!(resent > 0, "{scheme:?}");
    }
}

/// CP as the simulator's `cp` scheme sets it (PACKs, SACK, no duplicate-ACK threshold): with nothing
/// cutting payloads on loopback, losses are repaired by RACK and the timer, and every byte arrives.
#[test]
fn cp_delivers_byte_exact_through_loss_reordering_and_duplication() {
    // The scheme layer refuses CP on a network without trimming ports; loopback has none, and this
    // tests only the endpoint's delivery, so the network is declared trimming for it.
    let cfg = NetConfig {
        network: Network { trims: true },
        ..NetConfig::default()
    }
    .scheme_json("cp", json!({"min_rto": "5ms", "initial_rto": "20ms"}))
    .unwrap();
    let c = cfg.tcp_config();
    assert!(c.cp && c.sack && c.dupack_threshold == u32::MAX);
    let (ss, cs, resent) = thousand_calls_with(cfg, faults);
    assert!(cs.dropped_by_hook > 0 && ss.dropped_by_hook > 0, "{cs:?}\n{ss:?}");
    assert!(resent > 0);
}

#[test]
fn multipath_schemes_complete_every_call_with_one_of_three_paths_black_holed() {
    let hole = |seed| {
        Some(SendLoss {
            rate: 1.0,
            seed,
            path: Some(1),
            ..SendLoss::default()
        })
    };
    for scheme in ["mptcp", "fuso"] {
        let (ss, cs, _) = thousand_calls(scheme, hole);
        assert!(
            cs.dropped_by_hook > 0 && ss.dropped_by_hook > 0,
            "{scheme:?}: {cs:?}\n{ss:?}"
        );
    }
}

#[test]
fn dctcp_over_udp_delivers_byte_exact_through_loss() {
    let dctcp = |seed| {
        let mut cfg = config_with("dctcp", json!({}));
        assert!(matches!(
            cfg.tcp_config().congestion_control,
            CongestionControl::Dctcp { .. }
        ));
        cfg.send_loss = faults(seed);
        cfg
    };
    let s = server(dctcp(3));
    let c = Client::connect(s.local_addr(), dctcp(4)).unwrap();
    for i in 0..300 {
        let req = request(9, i);
        assert_eq!(c.call(&req).unwrap().bytes, expected(&req), "call {i}");
    }
    assert_eq!(settled(&s, |st| st.requests == 300).requests, 300);
}

/// Busy-polling before each sleep changes when datagrams are taken, not what arrives.
#[test]
fn spinning_runtimes_deliver_every_call() {
    let cfg = NetConfig {
        spin: Dur::from_micros(50),
        ..config()
    };
    let (ss, _, _) = calls_through(&cfg, faults, 200, |i| request(21, i));
    assert!(ss.dropped_by_hook > 0);
}

#[test]
fn pipelined_calls_from_several_threads_share_one_connection() {
    for scheme in SCHEMES {
        let s = server(config_of(scheme));
        let c = Client::connect(s.local_addr(), config_of(scheme)).unwrap();
        std::thread::scope(|sc| {
            for t in 0..4u64 {
                let c = &c;
                sc.spawn(move || {
                    for i in 0..100 {
                        let req = request(t, i);
                        assert_eq!(c.call(&req).unwrap().bytes, expected(&req), "{scheme:?}");
                    }
                });
            }
        });
        let st = settled(&s, |st| st.requests == 400);
        assert_eq!((st.requests, st.associations), (400, 1), "{scheme:?}");
    }
}

/// A caller takes the sockets for the time of its call (`Client::call`) and gives them back. The
/// runtime thread's own closed loop, running meanwhile (its responses then taken by the callers)
/// and after (by the runtime thread alone again), gets every response.
#[test]
fn callers_and_the_runtime_thread_take_turns_at_the_sockets() {
    for scheme in SCHEMES {
        let s = server(config_of(scheme));
        let c = Client::connect(s.local_addr(), config_of(scheme)).unwrap();
        std::thread::scope(|sc| {
            let c = &c;
            let in_loop = sc.spawn(move || c.closed_loop(&[5; 3_000], 300).unwrap());
            for t in 0..2u64 {
                sc.spawn(move || {
                    for i in 0..100 {
                        let req = request(10 + t, i);
                        assert_eq!(c.call(&req).unwrap().bytes, expected(&req), "{scheme:?}");
                    }
                });
            }
            let report = in_loop.join().unwrap();
            // The server reverses the bytes: no response is the echo the loop expects.
            assert_eq!((report.calls.len(), report.not_echoed), (300, 300), "{scheme:?}");
        });
        let alone = c.closed_loop(&[6; 100], 50).unwrap();
        assert_eq!(alone.calls.len(), 50, "{scheme:?}");
        let st = settled(&s, |st| st.requests == 550);
        assert_eq!(st.requests, 550, "{scheme:?}");
    }
}

#[test]
fn a_peer_announcing_a_message_over_the_limit_is_dropped() {
    let s = server(NetConfig {
        stream_max_message_bytes: 1_000,
        ..config()
    });
    // A peer within the limit is served (the default call timeout: this call must succeed).
    let good = Client::connect(s.local_addr(), config()).unwrap();
    assert_eq!(good.call(&[7; 100]).unwrap().bytes, expected(&[7; 100]));
    // The server drops the other silently, so its call can only end by its timeout: short, since the
    // call fails whatever it is, and the request's bytes stay with the engine after the caller gives
    // up, so they reach the server anyway.
    let bad = Client::connect(
        s.local_addr(),
        NetConfig {
            stream_call_timeout: Dur::from_millis(300),
            ..config()
        },
    )
    .unwrap();
    assert!(bad.call(&[7; 5_000]).is_err());
    let st = settled(&s, |st| st.protocol_errors == 1 && st.associations == 1);
    assert_eq!(
        (st.protocol_errors, st.associations),
        (1, 1),
        "the bad peer's association dropped, the good one's kept: {st:?}"
    );
    // A new client is served.
    let c = Client::connect(s.local_addr(), config()).unwrap();
    assert_eq!(c.call(&[9; 500]).unwrap().bytes, expected(&[9; 500]));
}

#[test]
fn garbage_and_forged_syns_keep_memory_bounded_and_service_up() {
    let cfg = NetConfig {
        max_associations: 8,
        ..config()
    };
    let s = server(cfg.clone());
    let to: SocketAddr = s.local_addr();
    let flood = UdpSocket::bind(LOOPBACK).unwrap();
    let mut rng = Rng::seed_from_u64(99);
    let mut buf = Vec::new();
    let mut sent = 0u64;
    for i in 0..30_000u64 {
        buf.clear();
        // A valid preamble for TCP (scheme 2) and a bogus association.
        buf.extend_from_slice(&[1, 2, 0, 0]);
        buf.extend_from_slice(&rng.random_range(0..1_000u64).to_be_bytes());
        match i % 3 {
            0 => buf.extend((0..rng.random_range(0..1600)).map(|_| rng.random::<u8>())),
            // Well-formed segments: SYNs that open associations, and data with any numbers.
            _ => {
                let syn = i % 3 == 1;
                let len = if syn { 0 } else { rng.random_range(0..1300u32) };
                let h = TcpHeader {
                    seq: Seq(rng.random()),
                    ack: Seq(rng.random()),
                    flags: if syn {
                        TcpFlags::SYN
                    } else {
                        TcpFlags(rng.random())
                    },
                    window: rng.random(),
                    payload_len: len,
                    ..TcpHeader::default()
                };
                let payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                tcp_udp::build(&h, false, &payload, &mut buf).unwrap();
            }
        }
        if flood.send_to(&buf, to).is_ok() {
            sent += 1;
        }
        // Flow control instead of pacing: a batch the server's socket buffer holds, then wait until
        // the server has taken all of it, so that no datagram is lost to a descheduled runtime thread.
        if i % 32 == 31 {
            taken(&s, sent);
        }
    }
    taken(&s, sent);
    let c = Client::connect(to, cfg).unwrap();
    for i in 0..50 {
        let req = request(5, i);
        assert_eq!(c.call(&req).unwrap().bytes, expected(&req));
    }
    let st = settled(&s, |st| st.requests >= 50);
    assert_eq!(st.requests, 50, "forged segments are never a request: {st:?}");
    assert!(st.datagrams_in >= sent, "the server took every datagram: {st:?}");
    assert!(st.associations <= 8, "{st:?}");
    assert!(st.associations_evicted > 0, "{st:?}");
    assert!(st.foreign_datagrams > 0, "{st:?}");
}

#[test]
fn closed_loop_on_the_runtime_thread_echoes_every_call() {
    let s = Server::bind(
        LOOPBACK.parse().unwrap(),
        config(),
        |r: &[u8], o: &mut Vec<u8>| o.extend_from_slice(r),
    )
    .unwrap();
    let c = Client::connect(s.local_addr(), config()).unwrap();
    let req = request(17, 3);
    let rep = c.closed_loop(&req, 500).unwrap();
    assert_eq!((rep.calls.len(), rep.not_echoed), (500, 0));
    assert_eq!(c.call(&req).unwrap().bytes, req);
}

/// A client that sends requests but never reads (acknowledges) the responses: the server's queued
/// responses would grow without end, so its association is dropped once they pass twice the largest
/// message. The client is the runtime's own TCP engine, wire format and framing, driven by hand over
/// a plain socket: it takes the ACK fields of what arrives and never its data.
#[test]
fn a_client_that_never_reads_its_responses_is_dropped() {
    use tailcut_net::clock::Clock;
    use tailcut_net::frame::{Preamble, SCHEME_TCP};
    use tailcut_net::stream::StreamFraming;
    use tailcut_proto::tcp::{Role, TcpEndpoint};
    use tailcut_proto::{Engine, FiveTuple, Header, Packet, Time};

    let cfg = NetConfig {
        stream_max_message_bytes: 1 << 20,
        ..config()
    };
    let s = Server::bind(
        LOOPBACK.parse().unwrap(),
        cfg.clone(),
        |_r: &[u8], o: &mut Vec<u8>| o.resize(1 << 20, 7),
    )
    .unwrap();
    let sock = UdpSocket::bind(LOOPBACK).unwrap();
    sock.connect(s.local_addr()).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut e = TcpEndpoint::new(
        cfg.tcp_config(),
        FiveTuple::default(),
        Role::Client,
        Seq(1),
        Seq(0),
    );
    let mut framing = StreamFraming::new(&mut e, 1 << 20);
    let clock = Clock::start();
    let now = || clock.now();
    let (mut payload, mut datagram, mut buf) = (Vec::new(), Vec::new(), vec![0u8; 65_536]);
    for k in 0..20u64 {
        framing.send(&mut e, now(), k, b"");
    }
    while s.stats().protocol_errors == 0 && now() < Time::ZERO + tailcut_proto::Dur::from_millis(20_000) {
        if e.poll_timeout().is_some_and(|t| t <= now()) {
            e.handle_timeout(now());
        }
        loop {
            payload.clear();
            let Some(p) = e.poll_transmit(now(), &mut payload) else {
                break;
            };
            datagram.clear();
            Preamble {
                scheme: SCHEME_TCP,
                path: 0,
                association: 42,
            }
            .write(&mut datagram);
            tcp_udp::build(p.tcp().unwrap(), false, &payload, &mut datagram).unwrap();
            let _ = sock.send(&datagram);
        }
        while let Ok(n) = sock.recv(&mut buf) {
            let Some((_, rest)) = Preamble::parse(&buf[..n]) else {
                continue;
            };
            let Ok(seg) = tcp_udp::parse(rest) else { continue };
            // Only the ACK fields: the data is never taken, so never acknowledged.
            let mut h = seg.header;
            h.payload_len = 0;
            let pkt = Packet {
                header: Header::Tcp(h),
                ..Packet::default()
            };
            e.handle_packet(now(), &pkt, &[]);
        }
        while e.poll_event().is_some() {}
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let st = settled(&s, |st| st.associations == 0);
    assert_eq!((st.protocol_errors, st.associations), (1, 0), "{st:?}");
    // Two 1 MB responses (with their frame headers) pass the 2 MB bound.
    assert_eq!(st.requests, 2, "answered until the responses piled up: {st:?}");
}
