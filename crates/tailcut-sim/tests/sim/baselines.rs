//! End-to-end checks of the baseline schemes on small scenarios: the direction of each scheme's
//! effect, and the replica plumbing of the simulator.

use crate::common;
use std::sync::atomic::{AtomicU32, Ordering};
use tailcut_proto::rng::Rng;
use tailcut_proto::{Dur, Engine, Time};
use tailcut_sim::net::aqm::AqmConfig;
use tailcut_sim::net::Network;
use tailcut_sim::scheme;
use tailcut_sim::sim::{ComponentRun, ConnMode, Sim};
use tailcut_sim::summary::Summary;
use tailcut_sim::topo::{self, SwitchQueues, TopologyConfig};
use tailcut_sim::transport::{ConnSetup, EngineFactory, Transport};
use tailcut_sim::workload::FlowSpec;
use tailcut_sim::{api, run};

fn lossy_dumbbell(flows: u64) -> tailcut_sim::Experiment {
    let text = include_str!("../../../../experiments/baselines/lossy_dumbbell.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.workload[0].flows = Some(flows);
    exp
}

#[test]
fn tlp_and_tcp_ir_cut_timeouts_and_copies_double_the_bytes() {
    let exp = lossy_dumbbell(800);
    let t = run(&exp, &mut |_| true).expect("runs");
    let s = |name: &str| Summary::of(&t.flows, name);
    let (tcp, tlp, ir) = (s("tcp"), s("tlp"), s("tcp_ir"));
    for x in ["tcp", "tlp", "tcp_ir", "proactive", "repflow"] {
        assert_eq!(s(x).completed, 800, "{x}: {:?}", s(x));
    }
    assert!(
        tcp.timeout_fraction > 0.02,
        "the path must be lossy enough: {tcp:?}"
    );
    assert!(
        tlp.timeout_fraction < 0.6 * tcp.timeout_fraction,
        "tlp {tlp:?} tcp {tcp:?}"
    );
    assert!(
        ir.timeout_fraction < 0.6 * tcp.timeout_fraction,
        "tcp_ir {ir:?} tcp {tcp:?}"
    );
    assert!(
        ir.redundant_bytes_ratio > 0.0 && ir.redundant_bytes_ratio < 0.5,
        "{ir:?}"
    );
    assert_eq!(tcp.redundant_bytes_ratio, 0.0);
    for x in ["proactive", "repflow"] {
        let r = s(x).extra_bytes_ratio;
        assert!((0.8..=1.3).contains(&r), "{x}: extra bytes {r}");
    }
}

#[test]
fn baseline_runs_are_deterministic() {
    let exp = lossy_dumbbell(150);
    let a = run(&exp, &mut |_| true).expect("runs");
    let b = run(&exp, &mut |_| true).expect("runs");
    let key = |t: &tailcut_sim::Tables| -> Vec<(String, Option<u64>, u64, u64)> {
        t.flows
            .iter()
            .map(|f| {
                (
                    f.scheme.clone(),
                    f.finish_ns,
                    f.stats.sent_bytes,
                    f.stats.redundant_bytes,
                )
            })
            .collect()
    };
    assert_eq!(key(&a), key(&b), "seed {}", exp.seed);
}

/// Connections alternate between a slow and a fast paced engine, so the two copies of a replicated
/// flow finish at very different times.
struct AlternatingPace {
    fast: Dur,
    slow: Dur,
    fast_first: bool,
    copies: u32,
    opened: AtomicU32,
}

impl EngineFactory for AlternatingPace {
    fn connect(&self, s: &ConnSetup, a: Rng, b: Rng) -> (Box<dyn Engine>, Box<dyn Engine>) {
        let n = self.opened.fetch_add(1, Ordering::Relaxed);
        let fast = n.is_multiple_of(2) == self.fast_first;
        let gap = if fast { self.fast } else { self.slow };
        common::PacedFactory { gap, path: false }.connect(s, a, b)
    }
    fn framing(&self) -> (u64, u64) {
        (1460, 40)
    }
    fn replicas(&self, _size: u64) -> u32 {
        self.copies
    }
}

fn one_flow_fct(copies: u32, fast_first: bool) -> (u64, u64) {
    let cfg: TopologyConfig =
        toml::from_str("kind = \"star\"\nhosts = 2\nhost_rate = \"10Gbps\"\nlink_delay = \"1us\"").unwrap();
    let spec = topo::build(&cfg, &SwitchQueues::default()).unwrap();
    let net = Network::build(&spec, 1);
    let flows = vec![FlowSpec {
        id: 0,
        component: 0,
        src: 0,
        dst: 1,
        size_bytes: 146_000,
        start: Time(1_000),
        request_bytes: 0,
    }];
    let comps = vec![ComponentRun {
        transport: Transport::new(AlternatingPace {
            fast: Dur::from_micros(5),
            slow: Dur::from_micros(50),
            fast_first,
            copies,
            opened: AtomicU32::new(0),
        }),
        conn_mode: ConnMode::PerFlow,
    }];
    let mut sim = Sim::new(net, &flows, &comps, Vec::new(), 1, Dur::from_millis(100));
    sim.run(&mut |_| true).unwrap();
    let rec = sim.flow_records("x", &["c".to_string()]);
    let info = sim.run_info("x", 0.0);
    assert!(info.conservation.ok);
    (rec[0].fct_ns().expect("finished"), info.flows_finished)
}

#[test]
fn a_replicated_flow_finishes_with_its_first_copy() {
    let (fast_alone, _) = one_flow_fct(1, true);
    let (slow_alone, _) = one_flow_fct(1, false);
    assert!(slow_alone > 5 * fast_alone);
    for fast_first in [true, false] {
        let (fct, finished) = one_flow_fct(2, fast_first);
        assert_eq!(finished, 1);
        // The fast copy decides; the slow one only adds a little serialisation on the shared NIC.
        assert!(
            fct >= fast_alone && fct < fast_alone + fast_alone / 20,
            "fast_first={fast_first}: {fct} vs {fast_alone}"
        );
    }
}

#[test]
fn registry_resolves_every_baseline_and_names_bad_fields() {
    let names: Vec<&str> = scheme::registry().iter().map(|i| i.name).collect();
    for n in [
        "tcp",
        "dctcp",
        "tlp",
        "tcp_ir",
        "proactive",
        "repflow",
        "replicated_dctcp",
        "pias",
        "pfabric",
    ] {
        assert!(names.contains(&n), "{n}");
        scheme::resolve(n, &serde_json::Map::new()).unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    let bad = |name: &str, json: &str| -> String {
        let m: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json).unwrap();
        match scheme::resolve(name, &m) {
            Ok(_) => panic!("{name} {json} should fail"),
            Err(e) => e.to_string(),
        }
    };
    assert!(bad("tlp", r#"{"pto_floor": "0ms"}"#).starts_with("params.pto_floor:"));
    assert!(bad("tlp", r#"{"pto_floor": "fast"}"#).starts_with("params.pto_floor"));
    assert!(bad("tlp", r#"{"sack": false}"#).starts_with("params.sack:"));
    assert!(bad("tcp_ir", r#"{"max_block_segments": 0}"#).starts_with("params.max_block_segments:"));
    assert!(bad("repflow", r#"{"copies": 5}"#).starts_with("params.copies:"));
    assert!(bad("pias", r#"{"thresholds": ["95KB", "10KB"]}"#).starts_with("params.thresholds:"));
    assert!(bad("pfabric", r#"{"switch_buffer": "1KB"}"#).starts_with("params.switch_buffer:"));
    assert!(bad("pfabric", r#"{"probe_after_timeouts": 0}"#).starts_with("params.probe_after_timeouts:"));
    assert!(bad("proactive", r#"{"copies": 2}"#).starts_with("params"));

    // Replica policies.
    let t = Transport::from(scheme::resolve("repflow", &serde_json::Map::new()).unwrap());
    assert_eq!((t.replicas(99_999), t.replicas(100_000)), (2, 1));
    let m = serde_json::from_str(r#"{"copies": 3}"#).unwrap();
    let t = Transport::from(scheme::resolve("replicated_dctcp", &m).unwrap());
    assert_eq!(t.replicas(10_000_000), 3);
}

#[test]
fn pias_and_pfabric_bring_their_switch_queues() {
    let base = SwitchQueues::default();
    let pias = Transport::from(scheme::resolve("pias", &serde_json::Map::new()).unwrap());
    let q = pias.switch_queues(&base);
    assert_eq!(q.classes.len(), 2);
    assert_eq!(q.classes[1].classes, vec![1]);
    assert_eq!(q.buffer, base.buffer);
    assert!(q.host_classes.is_empty(), "deployed PIAS: host NIC FIFO");
    let m: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"host_priority": true}"#).unwrap();
    let ideal = Transport::from(scheme::resolve("pias", &m).unwrap()).switch_queues(&base);
    assert_eq!(
        ideal.host_classes, q.classes,
        "idealised PIAS: host NIC by priority"
    );
    let pf = Transport::from(scheme::resolve("pfabric", &serde_json::Map::new()).unwrap());
    let q = pf.switch_queues(&base);
    assert_eq!(q.aqm, AqmConfig::Pfabric);
    assert_eq!(q.buffer.0, 51_000);
    let tcp = Transport::from(scheme::resolve("tcp", &serde_json::Map::new()).unwrap());
    assert_eq!(tcp.switch_queues(&base), base);
}

#[test]
fn pias_and_pfabric_cut_small_flow_fct_under_large_flows() {
    let text = include_str!("../../../../experiments/baselines/pias_pfabric.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.workload[0].flows = Some(250);
    exp.schemes.retain(|s| s.name != "tcp");
    let t = run(&exp, &mut |_| true).expect("runs");
    let small = |name: &str| Summary::of_where(&t.flows, name, |f| f.size_bytes < 100_000);
    let (dctcp, pias, pfabric) = (small("dctcp"), small("pias"), small("pfabric"));
    for s in [&dctcp, &pias, &pfabric] {
        assert_eq!(s.completed, s.flows, "{s:?}");
    }
    // Deployed PIAS (host NICs FIFO) halves the median; its mean is held up by the small flows that
    // wait behind a long flow in their own host's NIC, which only switch priority cannot help.
    assert!(
        pias.p50_fct_ns < 0.7 * dctcp.p50_fct_ns,
        "pias {pias:?} dctcp {dctcp:?}"
    );
    assert!(
        pfabric.mean_fct_ns < 0.7 * dctcp.mean_fct_ns,
        "pfabric {pfabric:?} dctcp {dctcp:?}"
    );
}

#[test]
fn a_scheme_runs_on_its_transport_queues_unless_it_gives_its_own() {
    let text = r#"
name = "queues"
[topology]
kind = "star"
hosts = 3
[network]
aqm = { kind = "ecn", k = "30KB" }
[[workload]]
name = "w"
pattern = { kind = "pairs", pairs = [[0, 1]] }
fixed = "10KB"
[[schemes]]
name = "pias"
transport = "pias"
[[schemes]]
name = "pfabric"
transport = "pfabric"
[[schemes]]
name = "pias_own"
transport = "pias"
network = { buffer = "64KB" }
[[schemes]]
name = "pias_host_priority"
transport = "pias"
params = { host_priority = true }
"#;
    let exp = api::parse_toml(text).expect("valid");
    let prep = tailcut_sim::run::prepare(&exp).expect("prepares");
    // Every star link joins a host (end a) and the switch (end b).
    let link = &prep.schemes[0].topology.links[0];
    assert_eq!(link.aqm_b.classes.len(), 2, "switch port: two PIAS classes");
    assert!(link.aqm_a.classes.is_empty(), "host NIC: one FIFO");
    assert!(
        matches!(link.aqm_b.aqm, AqmConfig::Ecn { .. }),
        "PIAS keeps ECN marking"
    );
    let link = &prep.schemes[1].topology.links[0];
    assert_eq!(
        (link.aqm_b.aqm.clone(), link.buffer_b),
        (AqmConfig::Pfabric, 51_000)
    );
    assert_eq!(link.aqm_a.aqm, AqmConfig::Pfabric, "host NIC sends by priority");
    let link = &prep.schemes[2].topology.links[0];
    assert!(link.aqm_b.classes.is_empty() && link.buffer_b == 64_000);
    let link = &prep.schemes[3].topology.links[0];
    assert_eq!(link.aqm_a.classes.len(), 2, "host NIC: two PIAS classes");
}

/// Host 1 sends a 20 MB bulk flow to host 2 on a 1 Gbps star (without TCP small queues, so the bulk
/// flow's window waits in host 1's own NIC); ten 10 KB flows leave host 1 for host 0 once it has grown.
/// Deployed PIAS (switch priority only) leaves them behind that backlog; the idealised variant, whose
/// host NIC serves the top class first, lets them overtake it.
#[test]
fn pias_host_nic_is_fifo_unless_host_priority_is_asked_for() {
    let run_with = |params: &str| {
        let text = format!(
            r#"
name = "pias_nic"
max_time = "2s"
[topology]
kind = "star"
hosts = 3
host_rate = "1Gbps"
link_delay = "10us"
[network]
buffer = "256KB"
host_tsq = 0
[[workload]]
name = "bulk"
pattern = {{ kind = "pairs", pairs = [[1, 2]] }}
fixed = "20MB"
[[workload]]
name = "small"
pattern = {{ kind = "pairs", pairs = [[1, 0]] }}
fixed = "10KB"
rate_per_host = 1000
start = "40ms"
flows = 10
[[schemes]]
name = "pias"
transport = "pias"
params = {{ {params} }}
"#
        );
        let exp = api::parse_toml(&text).expect("valid");
        let t = run(&exp, &mut |_| true).expect("runs");
        let s = Summary::of_where(&t.flows, "pias", |f| f.size_bytes < 100_000);
        assert_eq!(s.completed, 10, "{s:?}");
        s.p999_fct_ns
    };
    let fifo = run_with("");
    let prio = run_with("host_priority = true");
    // At 1 Gbps a 10 KB flow takes ~0.1 ms alone; behind the bulk backlog it waits milliseconds.
    assert!(fifo > 2_000_000.0, "FIFO NIC: small flows wait, max {fifo} ns");
    assert!(
        prio < 500_000.0,
        "priority NIC: small flows overtake, max {prio} ns"
    );
}
