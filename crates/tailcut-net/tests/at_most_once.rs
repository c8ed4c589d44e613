//! At most once: every runtime scheme hands each call's request to the handler once, through
//! duplicated, reordered and lost datagrams both ways, a handler slow enough that the client's
//! packets pile up behind it, and (CloudBurst) a request decoded again after the server's engine
//! forgot it or after its association was dropped and reopened. Counts only, never timings.

mod common;

use common::{
    eventually, expected, loaded_machine_config_with, one_packet_request, settled, RawPeer, LOOPBACK,
};
use proptest::prelude::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tailcut_net::{Client, NetConfig, SendLoss, Server};
use tailcut_proto::cloudburst::Codec;
use tailcut_proto::Dur;

/// A server whose handler answers as [`common::answer`], counts its invocations, and sleeps a few
/// milliseconds on every `slow_every`-th request.
fn counting_server(cfg: NetConfig, slow_every: u64) -> (Server, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    let s = Server::bind(
        LOOPBACK.parse().unwrap(),
        cfg,
        move |req: &[u8], out: &mut Vec<u8>| {
            let n = c.fetch_add(1, Ordering::SeqCst) + 1;
            if slow_every > 0 && n.is_multiple_of(slow_every) {
                std::thread::sleep(std::time::Duration::from_millis(4));
            }
            common::answer(req, out);
        },
    )
    .unwrap();
    (s, count)
}

/// Calls may wait behind the slow handler and injected faults: 30 s bounds only a failing one.
fn config_of(scheme: &str) -> NetConfig {
    config_with(scheme, json!({}))
}

/// [`config_of`] with more of the scheme's `params`.
fn config_with(scheme: &str, params: serde_json::Value) -> NetConfig {
    NetConfig {
        stream_call_timeout: Dur::from_millis(30_000),
        ..loaded_machine_config_with(scheme, params)
    }
}

fn request(i: u64, max: u64) -> Vec<u8> {
    let len = [1u64, 100, 1_500, 9_000, 40_000][(i % 5) as usize].min(max);
    (0..len).map(|k| (k * 7 + i) as u8).collect()
}

/// `n` calls through `faults` on both sides; the handler must have run exactly `n` times.
fn calls_run_once(scheme: &str, faults: SendLoss, slow_every: u64, n: u64) {
    let cfg = config_of(scheme);
    // The server's engine forgets a decoded request 1 ms after its last packet, so packets that
    // keep coming (the STOP is in flight, lost, or the handler is sleeping) decode it again.
    let server_scheme = match scheme {
        "cloudburst" => config_with(scheme, json!({"decoder_timeout": "1ms"})).scheme,
        _ => cfg.scheme.clone(),
    };
    let mut server_cfg = NetConfig {
        scheme: server_scheme,
        send_loss: Some(SendLoss {
            seed: faults.seed ^ 1,
            ..faults
        }),
        ..cfg.clone()
    };
    // The client's close is one datagram per path, which a server socket full of coded packets
    // (behind the slow handler) may drop: then the association goes by this rule instead.
    server_cfg.association_idle_timeout = Dur::from_millis(5_000);
    let (s, handled) = counting_server(server_cfg, slow_every);
    let client_cfg = NetConfig {
        send_loss: Some(SendLoss {
            seed: faults.seed ^ 2,
            ..faults
        }),
        ..cfg.clone()
    };
    let max = client_cfg.max_message_bytes();
    let c = Client::connect(s.local_addr(), client_cfg).unwrap();
    for i in 0..n {
        let req = request(i, max);
        let r = c
            .call(&req)
            .unwrap_or_else(|e| panic!("{scheme:?} call {i}: {e}\n{:?}\n{:?}", c.stats(), s.stats()));
        assert_eq!(r.bytes, expected(&req), "{scheme:?} call {i}");
    }
    // Closed (or, if the close was dropped, expired), so the association goes and nothing of it is
    // left to decode: a second delivery from late packets would have happened by then (a reopened
    // CloudBurst association refuses them).
    drop(c);
    let ss = settled(&s, |st| st.requests == n && st.associations == 0);
    assert_eq!(ss.requests, n, "{scheme:?}: {ss:?}");
    assert_eq!(handled.load(Ordering::SeqCst), n, "{scheme:?}: {ss:?}");
}

const SCHEMES: [&str; 5] = ["cloudburst", "tcp", "mptcp", "fuso", "dcquic"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() })]

    /// Handler invocations == calls, for every scheme, whatever the mix of faults.
    #[test]
    fn every_scheme_runs_each_call_once(
        seed in any::<u64>(),
        rate in 0.0..0.08f64,
        duplicate in 0.0..0.3f64,
        reorder in 0.0..0.2f64,
        slow_every in 2u64..12,
    ) {
        let faults = SendLoss { rate, seed, path: None, duplicate, reorder, after: 0 };
        for scheme in SCHEMES {
            calls_run_once(scheme, faults, slow_every, 40);
        }
    }
}

/// Re-sends `datagram` (pausing past the server's decoder timeout each time) until the server
/// counts a duplicate request, within a bound: on a loaded machine its engine may still remember
/// the message on the first tries. A full server first answers with a cookie, which the next send
/// echoes.
fn resend_until_duplicate(s: &Server, from: &mut RawPeer, datagram: &[u8], duplicates: u64) {
    for _ in 0..200 {
        from.send(datagram, s.local_addr());
        std::thread::sleep(std::time::Duration::from_millis(10));
        if s.stats().duplicate_requests > duplicates {
            return;
        }
    }
}

#[test]
fn cloudburst_request_decoded_again_or_reopened_is_not_handled_again() {
    let mut cfg = config_with("cloudburst", json!({"decoder_timeout": "1ms"}));
    cfg.max_associations = 1;
    let (s, handled) = counting_server(cfg.clone(), 0);
    assert_eq!(cfg.engine_config().codec, Codec::Lt);
    let mut peer = RawPeer::bind();
    let a = one_packet_request(&cfg, 77, 1 << 8 | 5, b"first");
    peer.send(&a, s.local_addr());
    let st = settled(&s, |st| st.requests == 1);
    assert_eq!(st.requests, 1, "{st:?}");
    // The engine forgot the message (1 ms): the same datagram decodes again, the handler does not run.
    resend_until_duplicate(&s, &mut peer, &a, 0);
    let st = s.stats();
    assert!(st.duplicate_requests >= 1, "{st:?}");
    assert_eq!((st.requests, handled.load(Ordering::SeqCst)), (1, 1), "{st:?}");
    // A new call on the same wire id is a new request.
    let b = one_packet_request(&cfg, 77, 2 << 8 | 5, b"second");
    peer.send(&b, s.local_addr());
    let st = settled(&s, |st| st.requests == 2);
    assert_eq!(st.requests, 2, "{st:?}");
    // Another client takes the only association slot (the full server checks its address first);
    // association 77's old request reopens it and is refused: the server remembered how far its
    // calls had got.
    let other = one_packet_request(&cfg, 78, 1 << 8 | 9, b"other");
    peer.open(&other, &s, st.associations_opened);
    let st = settled(&s, |st| st.requests == 3 && st.associations_evicted >= 1);
    assert_eq!((st.requests, st.associations_evicted), (3, 1), "{st:?}");
    assert!(st.address_checks >= 1 && st.addresses_validated >= 1, "{st:?}");
    let dups = st.duplicate_requests;
    resend_until_duplicate(&s, &mut peer, &a, dups);
    let st = s.stats();
    assert!(st.duplicate_requests > dups, "{st:?}");
    assert!(st.associations_evicted >= 2, "{st:?}");
    assert_eq!((st.requests, handled.load(Ordering::SeqCst)), (3, 3), "{st:?}");
}

#[test]
fn cloudburst_call_reports_final_request_counters() {
    // Many calls in flight from several threads: responses and STOPs of different calls interleave
    // on four paths; every call's request counters are final and cover its request.
    let cfg = config_of("cloudburst");
    let (s, handled) = counting_server(cfg.clone(), 0);
    let c = Client::connect(s.local_addr(), cfg.clone()).unwrap();
    let max = cfg.max_message_bytes();
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let c = &c;
            sc.spawn(move || {
                for i in 0..100 {
                    let req = request(t * 1000 + i, max);
                    let r = c.call(&req).unwrap();
                    assert_eq!(r.bytes, expected(&req));
                    assert!(r.stats.request_final, "{:?}", r.stats);
                    assert!(r.stats.request.sent_bytes >= req.len() as u64, "{:?}", r.stats);
                }
            });
        }
    });
    let st = settled(&s, |st| st.requests == 400);
    assert_eq!(
        (st.requests, handled.load(Ordering::SeqCst)),
        (400, 400),
        "{st:?}"
    );
    let cs = eventually(|| c.stats(), |st| st.calls_completed == 400);
    assert_eq!(cs.calls_completed, 400);
}
