//! CloudBurst RPCs over real UDP sockets on loopback. Functional facts only (bytes, counters), never
//! timings: the machine running the tests is shared.

mod common;

use common::{answer, calls_through, eventually, expected, faults, settled, taken, LOOPBACK};
use rand::{Rng as _, SeedableRng};
use serde_json::json;
use std::net::{SocketAddr, UdpSocket};
use tailcut_net::{Client, NetConfig, SendLoss, Server};
use tailcut_proto::cloudburst::{Block, CbHeader, Kind};
use tailcut_proto::rng::{mix64, Rng};

/// The defaults with timeouts that survive a runtime thread descheduled for hundreds of
/// milliseconds: the tests run in parallel on a shared 2-vCPU machine (and in CI beside other test
/// binaries; 100 ms failed calls there), and CloudBurst gives a message up for good at its
/// transmission timeout. The price is the id quarantine (2.1 s): past 256 calls a client waits for
/// ids, so the 1,000-call tests take seconds.
fn config() -> NetConfig {
    config_with(json!({}))
}

/// [`config`] with more CloudBurst `params`.
fn config_with(more: serde_json::Value) -> NetConfig {
    common::loaded_machine_config_with("cloudburst", more)
}

/// The largest request of one block (64 x 1444 B at the socket defaults, less the call number):
/// the many-call tests stay within one, and `megabyte_calls_in_blocks_*` take many.
fn one_block(cfg: &NetConfig) -> usize {
    (cfg.engine_config().block_bytes() - 8) as usize
}

/// Sizes from 1 byte to `max`, and contents, from a seed.
fn request(seed: u64, i: u64, max: usize) -> Vec<u8> {
    let mut rng = Rng::seed_from_u64(mix64(seed ^ i));
    let len = match i % 4 {
        0 => rng.random_range(1..200),
        1 => rng.random_range(200..4_000),
        2 => rng.random_range(4_000..20_000),
        _ => rng.random_range(20_000..max - 4),
    };
    (0..len).map(|_| rng.random()).collect()
}

fn server(cfg: NetConfig) -> Server {
    Server::bind(LOOPBACK.parse().unwrap(), cfg, answer).unwrap()
}

#[test]
fn thousand_mixed_rpcs_arrive_byte_exact() {
    let cfg = config();
    let max = one_block(&cfg);
    let s = server(cfg.clone());
    let c = Client::connect(s.local_addr(), cfg).unwrap();
    let mut redundant = 0;
    for i in 0..1_000 {
        let req = request(7, i, max);
        let r = c.call(&req).unwrap_or_else(|e| {
            panic!(
                "call {i} ({} B): {e}\n{:?}\n{:?}",
                req.len(),
                c.stats(),
                s.stats()
            )
        });
        assert_eq!(r.bytes, expected(&req), "call {i}");
        redundant += r.stats.request.redundant_bytes;
    }
    let ss = settled(&s, |st| st.requests == 1_000);
    let cs = eventually(|| c.stats(), |st| st.calls_completed == 1_000);
    assert_eq!(ss.requests, 1_000, "{ss:?}\n{cs:?}");
    assert_eq!(cs.calls_completed, 1_000);
    assert_eq!(cs.calls_timed_out, 0);
    assert_eq!(ss.associations, 1);
    // Coded multipath: every path carried datagrams, and the code sent more than the message.
    assert!(redundant > 0);
    assert!(cs.tx.datagrams > 1_000);
}

#[test]
fn rpcs_from_several_threads_share_one_client() {
    let cfg = config();
    let max = one_block(&cfg);
    let s = server(cfg.clone());
    let c = Client::connect(s.local_addr(), cfg).unwrap();
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let (c, s) = (&c, &s);
            sc.spawn(move || {
                for i in 0..100 {
                    let req = request(t, i, max);
                    let r = c.call(&req).unwrap_or_else(|e| {
                        panic!("thread {t} call {i}: {e}\n{:?}\n{:?}", c.stats(), s.stats())
                    });
                    assert_eq!(r.bytes, expected(&req));
                }
            });
        }
    });
    // Each call's request reached the handler once.
    assert_eq!(settled(&s, |st| st.requests == 400).requests, 400);
}

#[test]
fn dropped_datagrams_still_deliver_byte_exact() {
    let cfg = config();
    let max = one_block(&cfg);
    let loss = |seed| {
        Some(SendLoss {
            rate: 0.05,
            seed,
            ..SendLoss::default()
        })
    };
    let (ss, cs, _) = calls_through(&cfg, loss, 300, |i| request(11, i, max));
    assert!(cs.dropped_by_hook > 100, "{cs:?}");
    assert!(ss.dropped_by_hook > 20, "{ss:?}");
}

#[test]
fn thousand_rpcs_arrive_byte_exact_through_loss_reordering_and_duplication() {
    let cfg = config();
    let max = one_block(&cfg);
    let (ss, cs, _) = calls_through(&cfg, faults, 1_000, |i| request(19, i, max));
    assert!(cs.dropped_by_hook > 0 && ss.dropped_by_hook > 0);
}

/// Requests of many blocks (up to 2 MB), each through 5% loss both ways with `params`: every call
/// comes back byte-exact, and each request's counters cover all of its blocks.
fn megabyte_calls(params: serde_json::Value) {
    let cfg = config_with(params);
    let block = one_block(&cfg);
    let sizes = [block + 1, 3 * block, 1 << 20, 150_000, 2 << 20, 10 * block - 1];
    let loss = |seed| {
        Some(SendLoss {
            rate: 0.05,
            seed,
            ..SendLoss::default()
        })
    };
    let with = |seed| NetConfig {
        send_loss: loss(seed),
        ..cfg.clone()
    };
    let s = server(with(1));
    let c = Client::connect(s.local_addr(), with(2)).unwrap();
    for (i, &len) in sizes.iter().enumerate() {
        let mut rng = Rng::seed_from_u64(mix64(29 ^ i as u64));
        let req: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let r = c
            .call(&req)
            .unwrap_or_else(|e| panic!("call {i} ({len} B): {e}\n{:?}\n{:?}", c.stats(), s.stats()));
        assert_eq!(r.bytes, expected(&req), "call {i} ({len} B)");
        assert!(
            r.stats.request.sent_bytes >= len as u64,
            "call {i}: {:?}",
            r.stats
        );
    }
    let n = sizes.len() as u64;
    let ss = settled(&s, |st| st.requests == n);
    assert_eq!(ss.requests, n, "{ss:?}");
    let cs = c.stats();
    assert_eq!((cs.calls_completed, cs.calls_timed_out), (n, 0), "{cs:?}");
    assert!(cs.dropped_by_hook > 0 && ss.dropped_by_hook > 0, "{cs:?}\n{ss:?}");
}

#[test]
fn megabyte_calls_in_blocks_arrive_byte_exact_through_loss() {
    megabyte_calls(json!({}));
}

#[test]
fn megabyte_calls_in_raptorq_blocks_arrive_byte_exact_through_loss() {
    megabyte_calls(json!({"codec": "raptorq"}));
}

/// A call that takes longer than its call timeout (2 x 300 ms + 100 ms) completes: paced at
/// 50 Mbit/s, a 4 MB request and its 4 MB response take about 1.4 s, and the timeout counts from
/// each STOP or response packet, not from the call's start.
#[test]
fn a_call_longer_than_its_timeout_completes_while_it_progresses() {
    let cfg = config_with(json!({
        "nic_rate": "50Mbps",
        "transmission_timeout": "300ms",
        "decoder_timeout": "100ms",
    }));
    assert_eq!(cfg.call_timeout(), tailcut_proto::Dur::from_millis(700));
    let s = server(cfg.clone());
    let c = Client::connect(s.local_addr(), cfg).unwrap();
    let mut rng = Rng::seed_from_u64(31);
    let req: Vec<u8> = (0..4 << 20).map(|_| rng.random()).collect();
    let r = c
        .call(&req)
        .unwrap_or_else(|e| panic!("{e}\n{:?}\n{:?}", c.stats(), s.stats()));
    assert_eq!(r.bytes, expected(&req));
    // It did outlast the timeout: the timeout rule, not a fast machine, let it finish.
    assert!(
        r.stats.latency > tailcut_proto::Dur::from_millis(700),
        "{:?}",
        r.stats
    );
}

#[test]
fn one_black_holed_path_of_three_loses_no_call() {
    let cfg = config_with(json!({"paths": 3}));
    let max = one_block(&cfg);
    let hole = |seed| {
        Some(SendLoss {
            rate: 1.0,
            seed,
            path: Some(1),
            ..SendLoss::default()
        })
    };
    let (ss, cs, _) = calls_through(&cfg, hole, 300, |i| request(13, i, max));
    // About a third of every round went into the hole, both ways.
    assert!(cs.dropped_by_hook * 4 > cs.tx.datagrams, "{cs:?}");
    assert!(ss.dropped_by_hook > 0);
}

#[test]
fn garbage_flood_keeps_memory_bounded_and_service_up() {
    let cfg = NetConfig {
        max_associations: 8,
        ..config()
    };
    let max = one_block(&cfg);
    let ecfg = cfg.engine_config();
    let s = server(cfg.clone());
    let to: SocketAddr = s.local_addr();
    let flood = UdpSocket::bind(LOOPBACK).unwrap();
    let mut rng = Rng::seed_from_u64(99);
    let mut buf = Vec::new();
    let mut sent = 0u64;
    for i in 0..30_000u64 {
        buf.clear();
        match i % 3 {
            // Random bytes.
            0 => buf.extend((0..rng.random_range(0..1600)).map(|_| rng.random::<u8>())),
            // A valid preamble and a coded CloudBurst header: bogus associations and message ids.
            _ => {
                buf.extend_from_slice(&[1, 1, rng.random_range(0..4), 0]);
                buf.extend_from_slice(&rng.random_range(0..1_000u64).to_be_bytes());
                let packets = rng.random_range(1..=64u8);
                let symbol = ecfg.symbol_bytes;
                let h = CbHeader {
                    packets,
                    message_bytes: u32::from(packets) * symbol - rng.random_range(0..symbol),
                    msg_id: rng.random(),
                    kind: Kind::Coded {
                        set: rng.random::<u64>() >> (64 - u32::from(packets)) | 1,
                    },
                    block: Block::ONLY,
                };
                h.emit_to_vec(ecfg.layout(), &mut buf);
                buf.extend((0..symbol).map(|_| rng.random::<u8>()));
            }
        }
        if flood.send_to(&buf, to).is_ok() {
            sent += 1;
        }
        // Flow control, not pacing: a batch the server's socket buffer holds, then wait until the
        // server took all of it, so no datagram is lost to a descheduled runtime thread.
        if i % 32 == 31 {
            taken(&s, sent);
        }
    }
    taken(&s, sent);
    // Service continues, and the garbage is all accounted for once the real calls are through.
    let c = Client::connect(to, cfg.clone()).unwrap();
    for i in 0..50 {
        let req = request(5, i, max);
        assert_eq!(c.call(&req).unwrap().bytes, expected(&req));
    }
    // Forged one-packet messages decode like any request (nothing authenticates a client), so the
    // handler ran more than 50 times; the 50 real calls are the acknowledged responses.
    let st = settled(&s, |st| st.responses_acked >= 50);
    assert!(st.responses_acked >= 50, "{st:?}");
    assert!(st.datagrams_in >= sent, "{st:?}");
    assert!(st.associations <= 8, "{st:?}");
    assert!(st.associations_evicted > 0, "{st:?}");
    assert!(st.foreign_datagrams > 0, "{st:?}");
    let per_engine = cfg.engine_config().max_decoders as usize;
    assert!(st.tables.decoders <= 8 * per_engine, "{st:?}");
    assert!(st.tables.finished <= 8 * 256, "{st:?}");
    assert!(st.tables.untaken == 0, "{st:?}");
}

#[test]
fn closed_loop_on_the_runtime_thread_echoes_every_call() {
    let cfg = config();
    let s = Server::bind(
        LOOPBACK.parse().unwrap(),
        cfg.clone(),
        |r: &[u8], o: &mut Vec<u8>| o.extend_from_slice(r),
    )
    .unwrap();
    let c = Client::connect(s.local_addr(), cfg).unwrap();
    let req = request(17, 2, 60_000);
    let rep = c.closed_loop(&req, 500).unwrap();
    assert_eq!(rep.calls.len(), 500);
    assert_eq!(rep.not_echoed, 0);
    // Every call's request counters are final (the response ended the request) and cover it.
    assert!(rep
        .calls
        .iter()
        .all(|s| s.request_final && s.request.sent_bytes >= req.len() as u64));
    // A plain call still works after the loop.
    assert_eq!(c.call(&req).unwrap().bytes, req);
}

/// With `stop_repeat_gap` longer than the test, a receiver answers a decoded block's surplus packets
/// (a one-packet request's round carries four) without another STOP, and drops them undecoded:
/// each end sent at most one STOP per block it decoded, however far behind its thread fell. With
/// the paper's rule (a STOP per further packet) the server alone would send three per small call.
#[test]
fn surplus_packets_of_a_decoded_block_get_no_second_stop_within_the_gap() {
    let cfg = config_with(json!({"stop_repeat_gap": "100s"}));
    let max = one_block(&cfg);
    let (ss, cs, _) = calls_through(&cfg, |_| None, 200, |i| request(23, i, max));
    let (c, s) = (cs.cloudburst, ss.cloudburst);
    assert!(s.blocks_decoded >= 200 && c.blocks_decoded >= 200, "{c:?}\n{s:?}");
    assert!(s.stops_sent <= s.blocks_decoded, "{s:?}");
    assert!(c.stops_sent <= c.blocks_decoded, "{c:?}");
    // The coded packets outnumber the blocks: there were surplus packets to answer.
    assert!(c.coded_packets_sent > 2 * s.blocks_decoded, "{c:?}\n{s:?}");
}
