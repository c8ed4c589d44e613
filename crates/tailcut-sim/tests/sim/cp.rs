//! CP (Cut Payload, Cheng et al., NSDI'14) end to end: the incast that makes TCP time out completes
//! without timeouts when switches cut payloads and senders act on PACKs. The header headroom is
//! 64 KB here: with 32 senders bursting at once the input is far above the slides' 13.1 x output, so
//! one packet of headroom would drop headers (see docs/cp.md). TCP is the slides' ns-2 sender (DupThresh
//! loss detection, docs/tcp.md).

use tailcut_sim::api;
use tailcut_sim::run::{run, Tables};

use crate::common;

use common::fixtures::{incast_star, run_toml};

fn incast(n: u32, network: &str, schemes: &str) -> Tables {
    run_toml(&incast_star(n, network, schemes))
}

/// (completion of the last response, timeouts, cut packets at switch ports, drops at switch ports).
fn outcome(t: &Tables, scheme: &str) -> (u64, u32, u64, u64) {
    let flows: Vec<_> = t.flows.iter().filter(|f| f.scheme == scheme).collect();
    assert!(
        flows.iter().all(|f| f.finish_ns.is_some()),
        "{scheme}: every response completes"
    );
    let last = flows.iter().filter_map(|f| f.finish_ns).max().unwrap();
    let timeouts = flows.iter().map(|f| f.stats.timeouts).sum();
    let ports = t.ports.iter().filter(|p| p.scheme == scheme);
    let (cut, dropped) = ports.fold((0, 0), |(c, d), p| {
        (c + p.counters.trimmed, d + p.counters.dropped_overflow)
    });
    (last, timeouts, cut, dropped)
}

const SCHEMES: &str = r#"
[[schemes]]
name = "tcp"
transport = "tcp"
params = { min_rto = "200ms", loss_detection = "dupthresh" }
[[schemes]]
name = "cp"
transport = "cp"
params = { min_rto = "200ms", switch_header_headroom = "64KB" }
"#;

#[test]
fn cp_incast_completes_without_timeouts_where_tcp_times_out() {
    let t = incast(32, "", SCHEMES);
    let (tcp_last, tcp_to, tcp_cut, tcp_drop) = outcome(&t, "tcp");
    assert!(
        tcp_to > 0 && tcp_drop > 0 && tcp_cut == 0,
        "TCP must hit the cliff"
    );
    assert!(tcp_last >= 200_000_000, "{tcp_last}");
    let (cp_last, cp_to, cp_cut, cp_drop) = outcome(&t, "cp");
    assert_eq!(cp_to, 0, "CP: no retransmission timeout");
    assert!(cp_cut > 0, "the switch cut payloads");
    assert_eq!(cp_drop, 0, "no header was dropped");
    // 32 x 64 KB = 2 MB at 1 Gbps is about 17 ms; CP stays within a small factor of it.
    assert!(cp_last < 50_000_000, "CP finished at {cp_last} ns");
    assert!(cp_last * 4 < tcp_last, "cp {cp_last} tcp {tcp_last}");
}

#[test]
fn cp_dctcp_takes_the_experiment_ecn_threshold_into_its_trimming_queue() {
    let t = incast(
        16,
        r#"aqm = { kind = "ecn", k = "32KB" }"#,
        r#"
[[schemes]]
name = "cp_dctcp"
transport = "cp_dctcp"
params = { min_rto = "200ms", switch_header_headroom = "64KB" }
"#,
    );
    let (_, to, _, drop) = outcome(&t, "cp_dctcp");
    assert_eq!((to, drop), (0, 0));
    let marked: u64 = t.ports.iter().map(|p| p.counters.ecn_marked).sum();
    assert!(marked > 0, "ECN marking composes with payload cutting");
}

#[test]
fn under_per_packet_spraying_only_the_dupack_sender_retransmits_spuriously() {
    let text = include_str!("../../../../experiments/cp/reorder.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.schemes
        .retain(|s| s.name == "dctcp_spray" || s.name == "cp_dctcp_spray");
    let t = run(&exp, &mut |_| true).expect("runs");
    for scheme in ["dctcp_spray", "cp_dctcp_spray"] {
        let (_, timeouts, _, dropped) = outcome(&t, scheme);
        assert_eq!((timeouts, dropped), (0, 0), "{scheme}: no real loss");
    }
    let rtx = |scheme: &str| -> u64 {
        t.flows
            .iter()
            .filter(|f| f.scheme == scheme)
            .map(|f| f.stats.retransmitted_bytes)
            .sum()
    };
    let cut: u64 = t
        .ports
        .iter()
        .filter(|p| p.scheme == "cp_dctcp_spray")
        .map(|p| p.counters.trimmed)
        .sum();
    // Without loss, DCTCP's retransmissions are reordering read as loss (DupThresh 3); CP, with no
    // dupACK threshold, retransmits only what was cut.
    assert!(rtx("dctcp_spray") > 0, "spraying must reorder");
    assert_eq!(cut, 0);
    assert_eq!(rtx("cp_dctcp_spray"), 0);
}
