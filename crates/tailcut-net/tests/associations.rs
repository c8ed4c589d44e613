//! A server's associations live and die with their clients: a client that closes frees its
//! association at once, an idle one expires by `association_idle_timeout`, and a client whose
//! association went opens a new one, so a long-lived client is never pushed out by short-lived
//! ones. Counts only, never timings: a wait is a bounded poll for a counter.

mod common;

use common::{answer, eventually, expected, settled, LOOPBACK};
use tailcut_net::{Client, NetConfig, Scheme, Server};
use tailcut_proto::Dur;

fn config_of(scheme: Scheme) -> NetConfig {
    let mut cfg = NetConfig {
        scheme,
        max_associations: 8,
        ..NetConfig::default()
    };
    cfg.cloudburst.transmission_timeout = Dur::from_millis(1_000);
    cfg.cloudburst.decoder_timeout = Dur::from_millis(100);
    cfg.tcp.min_rto = Dur::from_millis(5);
    cfg.tcp.initial_rto = Dur::from_millis(20);
    cfg.mptcp.subflows = 2;
    cfg
}

const SCHEMES: [Scheme; 4] = [Scheme::CloudBurst, Scheme::Tcp, Scheme::Mptcp, Scheme::Fuso];

#[test]
fn closed_clients_free_their_associations_and_never_push_a_live_one_out() {
    for scheme in SCHEMES {
        let cfg = config_of(scheme);
        let s = Server::bind(LOOPBACK.parse().unwrap(), cfg.clone(), answer).unwrap();
        let long = Client::connect(s.local_addr(), cfg.clone()).unwrap();
        let req = b"long-lived".to_vec();
        assert_eq!(long.call(&req).unwrap().bytes, expected(&req));
        // Ten times the server's capacity of short-lived clients, one call each, then closed
        // (dropping a client stops its thread after its close datagrams went out).
        for i in 0..80u32 {
            let c = Client::connect(s.local_addr(), cfg.clone()).unwrap();
            let r = i.to_be_bytes();
            assert_eq!(c.call(&r).unwrap().bytes, expected(&r), "{scheme:?} client {i}");
        }
        let st = settled(&s, |st| st.associations_closed == 80);
        assert_eq!(st.associations_closed, 80, "{scheme:?}: {st:?}");
        assert_eq!(st.associations_evicted, 0, "{scheme:?}: {st:?}");
        // The long-lived client was idle all along, and its association is still there.
        for _ in 0..5 {
            assert_eq!(long.call(&req).unwrap().bytes, expected(&req), "{scheme:?}");
        }
        assert_eq!(long.stats().calls_timed_out, 0, "{scheme:?}");
    }
}

#[test]
fn an_idle_association_expires_and_its_client_opens_a_new_one() {
    for scheme in SCHEMES {
        let cfg = NetConfig {
            // Long enough that no runtime thread stall mid-call looks idle (a stream client reopens
            // after half of it without hearing from the server).
            association_idle_timeout: Dur::from_millis(2_000),
            ..config_of(scheme)
        };
        let s = Server::bind(LOOPBACK.parse().unwrap(), cfg.clone(), answer).unwrap();
        let c = Client::connect(s.local_addr(), cfg.clone()).unwrap();
        let req = vec![3u8; 5_000];
        assert_eq!(c.call(&req).unwrap().bytes, expected(&req));
        let st = settled(&s, |st| st.associations_expired == 1 && st.associations == 0);
        assert_eq!(
            (st.associations_expired, st.associations),
            (1, 0),
            "{scheme:?}: {st:?}"
        );
        // The next calls go through: CloudBurst's first coded packet reopens the association at
        // the server; a stream scheme's client opens a new one itself.
        for _ in 0..3 {
            assert_eq!(c.call(&req).unwrap().bytes, expected(&req), "{scheme:?}");
        }
        let cs = eventually(|| c.stats(), |st| st.calls_completed == 4);
        assert_eq!((cs.calls_completed, cs.calls_timed_out), (4, 0), "{scheme:?}");
        if scheme != Scheme::CloudBurst {
            assert!(cs.reopened >= 1, "{scheme:?}: {cs:?}");
        }
        let st = settled(&s, |st| st.requests == 4);
        assert_eq!(st.requests, 4, "{scheme:?}: {st:?}");
    }
}
