//! `Client::reconnect`: a new connection (or association) on the same runtime thread and sockets,
//! for every scheme family. Counts and bytes only, never timings: a wait is a bounded poll for a
//! counter.

mod common;

use common::{answer, eventually, expected, loaded_machine_config, settled, LOOPBACK};
use serde_json::json;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use tailcut_net::tls::TlsConfig;
use tailcut_net::{CallError, Client, NetConfig, Server};
use tailcut_proto::Dur;

fn dcquic_config() -> NetConfig {
    NetConfig {
        scheme: NetConfig::default()
            .scheme_json("dcquic", json!({}))
            .unwrap()
            .scheme,
        tls: TlsConfig::generate(&["localhost".into()]).unwrap().0,
        stream_call_timeout: Dur::from_millis(20_000),
        ..NetConfig::default()
    }
}

/// Each reconnection closes the old association at the server (its close arrived) and opens a new
/// one from the same client sockets, and every call before and after is byte-exact.
#[test]
fn each_reconnection_opens_a_new_association_and_closes_the_old_one() {
    let configs = ["tcp", "mptcp", "cloudburst"]
        .map(|s| (s, loaded_machine_config(s)))
        .into_iter()
        .chain([("dcquic", dcquic_config())]);
    for (scheme, cfg) in configs {
        let s = Server::bind(LOOPBACK.parse().unwrap(), cfg.clone(), answer).unwrap();
        let c = Client::connect(s.local_addr(), cfg).unwrap();
        let ports = c.local_addrs().to_vec();
        for i in 0..4u32 {
            if i > 0 {
                c.reconnect().unwrap();
            }
            let req: Vec<u8> = (0..3_000 + i).map(|k| (k * 7 + i) as u8).collect();
            assert_eq!(c.call(&req).unwrap().bytes, expected(&req), "{scheme} call {i}");
        }
        assert_eq!(c.local_addrs(), &ports[..], "{scheme}: the same sockets");
        let st = settled(&s, |st| st.associations_opened == 4 && st.associations <= 1);
        assert_eq!(st.associations_opened, 4, "{scheme}: {st:?}");
        assert_eq!(st.associations, 1, "{scheme}: the old ones went: {st:?}");
        assert_eq!(st.associations_evicted, 0, "{scheme}: {st:?}");
        let cs = c.stats();
        assert_eq!(cs.calls_completed, 4, "{scheme}");
        assert_eq!(cs.reopened, 0, "{scheme}: not the idle rule");
        if let Some(q) = cs.dcquic {
            assert_eq!(q.handshakes, 4, "{scheme}: a handshake per connection");
            assert_eq!(q.reconnects, 3, "{scheme}");
        }
    }
}

/// A call still waiting for its response keeps its connection: the reconnection is refused, and
/// the call completes.
#[test]
fn a_reconnection_with_a_call_outstanding_is_refused() {
    for (scheme, cfg) in [("tcp", loaded_machine_config("tcp")), ("dcquic", dcquic_config())] {
        // The handler answers only once the test let it, so the call is outstanding meanwhile.
        let (arrived_tx, arrived) = mpsc::channel::<()>();
        let (go, go_rx) = mpsc::channel::<()>();
        let arrived_tx = Mutex::new(arrived_tx);
        let go_rx = Mutex::new(go_rx);
        let s = Server::bind(
            LOOPBACK.parse().unwrap(),
            cfg.clone(),
            move |req: &[u8], out: &mut Vec<u8>| {
                let _ = arrived_tx.lock().unwrap().send(());
                let _ = go_rx.lock().unwrap().recv();
                answer(req, out);
            },
        )
        .unwrap();
        let c = Arc::new(Client::connect(s.local_addr(), cfg).unwrap());
        let caller = {
            let c = c.clone();
            std::thread::spawn(move || c.call(b"outstanding"))
        };
        arrived.recv().unwrap();
        match c.reconnect() {
            Err(CallError::InFlight { calls: 1 }) => {}
            other => panic!("{scheme}: {other:?}"),
        }
        go.send(()).unwrap();
        assert_eq!(
            caller.join().unwrap().unwrap().bytes,
            expected(b"outstanding"),
            "{scheme}"
        );
        // Answered, the connection can go (the next call's answer let through beforehand).
        c.reconnect().unwrap();
        go.send(()).unwrap();
        assert_eq!(c.call(b"after").unwrap().bytes, expected(b"after"), "{scheme}");
        eventually(|| s.stats(), |st| st.associations_opened == 2);
    }
}
