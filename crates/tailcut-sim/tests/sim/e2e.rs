//! Whole small experiments with TCP, asserting the direction of effects the papers rely on.

use proptest::prelude::*;
use tailcut_sim::api;
use tailcut_sim::run::run;
use tailcut_sim::summary::percentile;

use crate::common;

use common::fixtures::{incast_star, run_toml};

/// The classic incast sender (ns-2 style): loss detected by duplicate ACKs only, so a window that loses
/// its tail waits for the RTO. `tests/tcp_linux.rs`-style checks of RACK-TLP are below.
const TCP_200MS: &str = r#"
[[schemes]]
name = "tcp"
transport = "tcp"
params = { min_rto = "200ms", loss_detection = "dupthresh" }
"#;

fn incast(n: u32) -> String {
    incast_star(n, "", TCP_200MS)
}

/// Completion time of the whole incast (the last response), and total timeouts.
fn incast_outcome(n: u32) -> (u64, u32) {
    let t = run_toml(&incast(n));
    assert!(
        t.flows.iter().all(|f| f.finish_ns.is_some()),
        "every response completes within 5 s"
    );
    let last = t.flows.iter().filter_map(|f| f.finish_ns).max().unwrap();
    (last, t.flows.iter().map(|f| f.stats.timeouts).sum())
}

#[test]
fn incast_shows_the_completion_time_cliff_once_the_buffer_overflows() {
    // 2 x 64 KB fit the 128 KB buffer: about 1 ms at 1 Gbps, no timeout.
    let (small, to_small) = incast_outcome(2);
    assert_eq!(to_small, 0);
    assert!(
        small < 5_000_000,
        "2 senders should finish in a few ms, took {small} ns"
    );
    // 32 x 64 KB = 2 MB through a 128 KB buffer: synchronized losses, a 200 ms RTO, the cliff.
    let (big, to_big) = incast_outcome(32);
    assert!(to_big > 0, "the large incast must hit retransmission timeouts");
    assert!(
        big >= 200_000_000,
        "the cliff is at least one min RTO, got {big} ns"
    );
}

#[test]
fn one_percent_random_loss_makes_a_visible_share_of_small_flows_time_out() {
    let t = run_toml(
        r#"
name = "loss"
max_time = "20s"
[topology]
kind = "dumbbell"
left = 4
right = 4
host_rate = "10Gbps"
bottleneck_rate = "10Gbps"
link_delay = "10us"
[network]
buffer = "512KB"
[[faults]]
kind = "loss"
link = { between = ["swl", "swr"] }
model = { kind = "bernoulli", p = 0.01 }
[[workload]]
name = "small"
pattern = { kind = "rack_to_rack", src_rack = 0, dst_rack = 1 }
fixed = "10KB"
load = 0.05
flows = 4000
[[schemes]]
name = "dupthresh"
transport = "tcp"
params = { min_rto = "5ms", loss_detection = "dupthresh" }
[[schemes]]
name = "rack_tlp"
transport = "tcp"
params = { min_rto = "5ms" }
"#,
    );
    let timeout_fraction = |scheme: &str| {
        let flows: Vec<_> = t.flows.iter().filter(|f| f.scheme == scheme).collect();
        assert!(flows.iter().all(|f| f.finish_ns.is_some()));
        flows.iter().filter(|f| f.stats.timeouts > 0).count() as f64 / flows.len() as f64
    };
    // FUSO Sec. 2.2 (a DupThresh sender with early retransmit): P(timeout) >= p for a small flow; ACK
    // losses add to it.
    let dupthresh = timeout_fraction("dupthresh");
    assert!((0.005..0.06).contains(&dupthresh), "timeout fraction {dupthresh}");
    // Those flows pay at least the 5 ms min RTO: the p99 FCT is dominated by timeouts.
    let mut fct: Vec<u64> = t
        .flows
        .iter()
        .filter(|f| f.scheme == "dupthresh")
        .filter_map(|f| f.fct_ns())
        .collect();
    fct.sort_unstable();
    assert!(percentile(&fct, 0, 995) >= 5e6);
    assert!(percentile(&fct, 0, 500) < 1e6);
    // RACK-TLP (Linux's default) probes a lost tail after 2 SRTT + 2 ms instead of waiting for the RTO.
    let rack = timeout_fraction("rack_tlp");
    assert!(rack < dupthresh / 2.0, "RACK-TLP {rack} vs DupThresh {dupthresh}");
}

fn small_experiment(seed: u64, loss: f64) -> String {
    format!(
        r#"
name = "det"
seed = {seed}
max_time = "1s"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "10Gbps"
[network]
buffer = "100KB"
aqm = {{ kind = "ecn", k = "30KB" }}
[[faults]]
kind = "loss"
link = {{ between = ["leaf0", "spine1"] }}
model = {{ kind = "bernoulli", p = {loss} }}
[[workload]]
name = "q"
pattern = {{ kind = "all_to_all" }}
cdf = "websearch"
max_size = "200KB"
load = 0.4
flows = 300
connection = "persistent"
[[schemes]]
name = "tcp"
transport = "tcp"
params = {{ min_rto = "2ms" }}
[[schemes]]
name = "dctcp"
transport = "dctcp"
params = {{ min_rto = "2ms" }}
"#
    )
}

fn flow_table(seed: u64, loss: f64) -> String {
    let exp = api::parse_toml(&small_experiment(seed, loss)).unwrap();
    let t = run(&exp, &mut |_| true).unwrap();
    let mut v = api::tables_json(&t, &exp);
    // Wall time is the only field allowed to differ between identical runs.
    for r in v["runs"].as_array_mut().unwrap() {
        r["wall_seconds"] = 0.into();
    }
    v.to_string()
}

#[test]
fn same_seed_gives_identical_tables() {
    assert_eq!(flow_table(5, 0.02), flow_table(5, 0.02));
    assert_ne!(flow_table(5, 0.02), flow_table(6, 0.02));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// Conservation holds (the run would fail otherwise) and every flow is reported, for any seed and
    /// loss rate.
    #[test]
    fn conservation_and_full_reporting_for_any_seed(seed in 0u64..1_000_000, loss in 0.0f64..0.2) {
        let exp = api::parse_toml(&small_experiment(seed, loss)).unwrap();
        let t = run(&exp, &mut |_| true).unwrap();
        prop_assert_eq!(t.flows.len(), 600);
        for r in &t.runs {
            prop_assert!(r.conservation.ok);
            prop_assert_eq!(r.conservation.injected, r.conservation.delivered + r.conservation.dropped + r.conservation.in_flight);
        }
    }
}

/// One file serves both worlds: the simulator carries a `[testbed]` section unread (the testbed checks
/// it) and runs the rest, so `tailcut run` and `tailcut testbed run` compare the same experiment.
#[test]
fn a_testbed_file_runs_in_the_simulator() {
    let text = include_str!("../../../tailcut-testbed/experiments/fuso_edge_loss.toml");
    let mut exp = api::parse_toml(text).expect("the simulator accepts the testbed's file");
    assert!(exp.testbed.as_ref().is_some_and(|t| t.is_object()));
    exp.max_time = tailcut_proto::Dur::from_millis(300);
    let t = run(&exp, &mut |_| true).expect("runs");
    assert!(t.flows.iter().any(|f| f.finish_ns.is_some()));
}
