//! `Server::bind_observed`: every scheme's server reports each response's final counters under the
//! tag its request's handler returned, exactly once, and under loss they count the resending.

mod common;

use common::{answer, eventually, expected, loaded_machine_config, LOOPBACK};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tailcut_net::{Client, SendLoss, Server};
use tailcut_proto::MessageStats;

const SCHEMES: [&str; 5] = ["cloudburst", "tcp", "mptcp", "fuso", "dcquic"];

/// Runs `calls` calls of 20 KB requests answered with 30 KB responses, the server dropping `loss` of
/// its datagrams; returns what the observer got per tag (the request's first byte).
fn observed(scheme: &str, calls: u8, loss: f64) -> BTreeMap<u64, Vec<MessageStats>> {
    let got: Arc<Mutex<BTreeMap<u64, Vec<MessageStats>>>> = Arc::default();
    let mut cfg = loaded_machine_config(scheme);
    if loss > 0.0 {
        cfg.send_loss = Some(SendLoss {
            rate: loss,
            seed: 3,
            ..SendLoss::default()
        });
    }
    let sink = got.clone();
    let server = Server::bind_observed(
        LOOPBACK.parse().unwrap(),
        cfg.clone(),
        |req: &[u8], out: &mut Vec<u8>| {
            answer(&req[..30_000.min(req.len())], out);
            out.resize(30_000, 7);
            u64::from(req[0])
        },
        move |tag, stats| sink.lock().unwrap().entry(tag).or_default().push(stats),
    )
    .unwrap();
    let client_cfg = tailcut_net::NetConfig {
        send_loss: None,
        ..cfg
    };
    let client = Client::connect(server.local_addr(), client_cfg).unwrap();
    for k in 0..calls {
        let req = vec![k; 20_000];
        let mut want = expected(&req);
        want.resize(30_000, 7);
        assert_eq!(client.call(&req).unwrap().bytes, want, "{scheme}: call {k}");
    }
    eventually(|| got.lock().unwrap().len(), |&n| n == usize::from(calls));
    drop(client);
    let _ = server.shutdown();
    let out = got.lock().unwrap().clone();
    out
}

#[test]
fn each_response_is_reported_once_under_its_tag() {
    for scheme in SCHEMES {
        let got = observed(scheme, 8, 0.0);
        assert_eq!(
            got.keys().copied().collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>(),
            "{scheme}"
        );
        for (tag, stats) in &got {
            assert_eq!(stats.len(), 1, "{scheme}: tag {tag} reported once");
            assert!(stats[0].sent_bytes >= 30_000, "{scheme}: {:?}", stats[0]);
        }
    }
}

/// With the server's datagrams lost, the responses' counters show what was sent again (a coded
/// scheme's extra packets are redundant, not retransmitted).
#[test]
fn a_lossy_servers_responses_count_their_recovery() {
    for scheme in ["cloudburst", "tcp", "fuso"] {
        let got = observed(scheme, 8, 0.05);
        let again: u64 = got
            .values()
            .flatten()
            .map(|s| s.retransmitted_bytes + s.redundant_bytes)
            .sum();
        assert!(again > 0, "{scheme}: {got:?}");
    }
}
