//! End-to-end T-RACKs: unmodified TCP senders (min RTO 200 ms) behind the shim in the paper's incast
//! (experiments/tracks/case1_20.toml, Sec. V-A CASE 1, 20 flows x 5 rounds).

use tailcut_sim::summary::Summary;
use tailcut_sim::{api, run};

fn incast(keep: &[&str], sack: bool) -> tailcut_sim::Experiment {
    let text = include_str!("../../../../experiments/tracks/case1_20.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.schemes.retain(|s| keep.contains(&s.name.as_str()));
    for s in &mut exp.schemes {
        s.params.insert("sack".into(), sack.into());
    }
    exp
}

#[test]
fn newreno_behind_the_shim_fast_retransmits_instead_of_timing_out() {
    let exp = incast(&["droptail", "droptail+tracks"], false);
    let t = run(&exp, &mut |_| true).expect("runs");
    let (tcp, tracks) = (
        Summary::of(&t.flows, "droptail"),
        Summary::of(&t.flows, "droptail+tracks"),
    );
    assert_eq!(tcp.completed, 100, "{tcp:?}");
    assert_eq!(tracks.completed, 100, "{tracks:?}");
    assert!(tcp.timeout_fraction > 0.1, "incast must cause timeouts: {tcp:?}");
    assert!(
        tracks.timeout_fraction < 0.3 * tcp.timeout_fraction,
        "tracks {tracks:?} tcp {tcp:?}"
    );
    assert!(tcp.p95_fct_ns > 150e6, "{tcp:?}");
    assert!(tracks.p95_fct_ns < 30e6, "{tracks:?}");
    let run = t.runs.iter().find(|r| r.scheme == "droptail+tracks").unwrap();
    assert!(
        run.shim_counters["tracks_recoveries"] > 0,
        "{:?}",
        run.shim_counters
    );
    assert!(run.shim_counters["tracks_spoofed_acks"] >= run.shim_counters["tracks_recoveries"]);
    let plain = t.runs.iter().find(|r| r.scheme == "droptail").unwrap();
    assert!(plain.shim_counters.is_empty());
}

#[test]
fn dctcp_behind_the_shim_is_helped_too() {
    let exp = incast(&["dctcp", "dctcp+tracks"], false);
    let t = run(&exp, &mut |_| true).expect("runs");
    let (tcp, tracks) = (
        Summary::of(&t.flows, "dctcp"),
        Summary::of(&t.flows, "dctcp+tracks"),
    );
    assert_eq!(tracks.completed, 100);
    assert!(
        tracks.timeout_fraction < 0.3 * tcp.timeout_fraction,
        "{tracks:?} {tcp:?}"
    );
}

/// SACK senders (the same files with `sack = true`): the fake SACK block makes the spoofed ACKs
/// duplicates in RFC 6675's sense, and the sender's reneging handling recovers the segments the block
/// claimed but the receiver never had (docs/tracks.md, "SACK").
fn sack_senders_are_helped(plain: &str, shimmed: &str) {
    let exp = incast(&[plain, shimmed], true);
    let t = run(&exp, &mut |_| true).expect("runs");
    let (tcp, tracks) = (Summary::of(&t.flows, plain), Summary::of(&t.flows, shimmed));
    assert_eq!(tcp.completed, 100, "{tcp:?}");
    assert_eq!(tracks.completed, 100, "{tracks:?}");
    assert!(tcp.p95_fct_ns > 150e6, "{tcp:?}");
    assert!(tracks.p95_fct_ns < 40e6, "{tracks:?}");
    assert!(tracks.mean_fct_ns < 0.25 * tcp.mean_fct_ns, "{tracks:?} {tcp:?}");
    let run = t.runs.iter().find(|r| r.scheme == shimmed).unwrap();
    assert!(run.shim_counters["tracks_recoveries"] > 0);
}

#[test]
fn newreno_sack_senders_are_helped() {
    sack_senders_are_helped("droptail", "droptail+tracks");
}

#[test]
fn dctcp_sack_senders_are_helped() {
    sack_senders_are_helped("dctcp", "dctcp+tracks");
}

#[test]
fn shim_parameters_are_checked() {
    let mut exp = incast(&["droptail+tracks"], false);
    let text = r#"{ "kind": "tracks", "phi": 0 }"#;
    exp.schemes[0].shim = Some(serde_json::from_str(text).unwrap());
    let err = run(&exp, &mut |_| true).err().expect("rejected").to_string();
    assert!(err.contains("schemes[0].shim.phi"), "{err}");
    let bad: Result<tailcut_sim::config::ShimConfig, _> =
        serde_json::from_str(r#"{ "kind": "tracks", "alpah": 3 }"#);
    assert!(bad.is_err());
}

/// A hypervisor reads SACK from the SYN options of any TCP, whatever rides on it: the shim takes the
/// scheme's `sack` over MPTCP, TLS and the reconnecting client as over plain TCP.
#[test]
fn the_shim_learns_sack_from_every_tcp_based_transport() {
    for transport in ["tcp", "dctcp", "mptcp", "fuso", "tcp_tls13", "dctcp_reconnect"] {
        for sack in [true, false] {
            let mut exp = incast(&["droptail+tracks"], sack);
            exp.schemes[0].transport = transport.into();
            if matches!(transport, "mptcp" | "fuso") {
                // Sub-flows start established.
                exp.schemes[0].params.remove("handshake");
            }
            let prep = run::prepare(&exp).unwrap_or_else(|e| panic!("{transport}: {e}"));
            let Some(tailcut_sim::config::ShimConfig::Tracks(c)) = &prep.schemes[0].shim else {
                panic!("{transport}: no shim")
            };
            assert_eq!(c.sack, sack, "{transport}");
        }
    }
}
