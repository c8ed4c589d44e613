//! End-to-end DCQUIC in the simulator: the migration experiment (experiments/dcquic/migration.toml)
//! scaled down, the TLS 1.3 baseline, MPS on the wire, determinism.

use tailcut_sim::metrics::FlowRecord;
use tailcut_sim::summary::{percentile, Summary};
use tailcut_sim::{api, run, Experiment};

fn migration(keep: &[&str], delay_phase: bool) -> Experiment {
    let text = include_str!("../../../../experiments/dcquic/migration.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.schemes.retain(|s| keep.contains(&s.name.as_str()));
    exp.topology = tailcut_sim::topo::TopologyConfig::File(tailcut_sim::topo::File {
        path: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../experiments/dcquic/migration_topo.toml"
        )
        .into(),
    });
    if !delay_phase {
        exp.faults.remove(0);
    }
    exp.max_time = tailcut_proto::Dur::from_millis(7_500);
    exp.workload[0].until = Some(tailcut_proto::Dur::from_millis(6_900));
    exp
}

fn in_failure(f: &&FlowRecord) -> bool {
    // Started once the failure (5 s .. 7 s) is established and well before it ends.
    f.start_ns >= 5_300_000_000 && f.start_ns < 6_500_000_000
}

#[test]
fn failure_phase_dcquic_migrates_and_keeps_completing_while_tcp_stalls() {
    let exp = migration(&["dcquic", "dctcp", "dctcp_reconnect"], false);
    let t = run(&exp, &mut |_| true).expect("runs");
    let q: Vec<&FlowRecord> = t
        .flows
        .iter()
        .filter(|f| f.scheme == "dcquic")
        .filter(in_failure)
        .collect();
    let d: Vec<&FlowRecord> = t
        .flows
        .iter()
        .filter(|f| f.scheme == "dctcp")
        .filter(in_failure)
        .collect();
    assert!(q.len() > 100, "{}", q.len());
    // DCQUIC: every RPC of the failure phase completes, and quickly (on the second NIC).
    assert!(q.iter().all(|f| f.finish_ns.is_some_and(|e| e < 7_000_000_000)));
    let slow = q.iter().filter(|f| f.fct_ns().unwrap() > 10_000_000).count();
    assert!(slow * 20 < q.len(), "{slow} of {} slow", q.len());
    let run_q = t.runs.iter().find(|r| r.scheme == "dcquic").unwrap();
    assert!(
        run_q.engine_counters["dcquic_migrations"] >= 3,
        "{:?}",
        run_q.engine_counters
    );
    // DCTCP stays on the dead path: nothing started in the failure completes before it ends.
    assert!(!d.is_empty());
    assert!(d.iter().all(|f| f.finish_ns.is_none_or(|e| e >= 7_000_000_000)));
    // The reconnecting client stalls for its timeout, then completes from its second NIC.
    let r: Vec<&FlowRecord> = t.flows.iter().filter(|f| f.scheme == "dctcp_reconnect").collect();
    let failed_at = 5_000_000_000;
    let stalled: Vec<_> = r
        .iter()
        .filter(|f| f.start_ns >= failed_at && f.start_ns < failed_at + 500_000_000)
        .collect();
    assert!(!stalled.is_empty());
    assert!(
        stalled.iter().all(|f| f
            .finish_ns
            .is_some_and(|e| e >= failed_at + 1_000_000_000 && e < 7_000_000_000)),
        "{stalled:?}"
    );
    let late: Vec<_> = r
        .iter()
        .filter(|f| f.start_ns > 6_200_000_000 && f.start_ns < 6_900_000_000)
        .collect();
    let fast = late
        .iter()
        .filter(|f| f.fct_ns().is_some_and(|x| x < 10_000_000))
        .count();
    assert!(
        late.len() > 50 && fast * 10 >= late.len() * 9,
        "after reconnecting RPCs are fast: {fast} of {}",
        late.len()
    );
    let run_r = t.runs.iter().find(|r| r.scheme == "dctcp_reconnect").unwrap();
    assert_eq!(run_r.engine_counters["tcp_reconnects"], 3, "one per client");
}

#[test]
fn same_seed_same_dcquic_results() {
    let mut exp = migration(&["dcquic"], true);
    exp.max_time = tailcut_proto::Dur::from_millis(2_500);
    // The black hole at 5 s would come after the shortened run, which validation refuses; the delay
    // phase from 2 s stays.
    exp.faults.truncate(1);
    let a = run(&exp, &mut |_| true).expect("runs");
    let b = run(&exp, &mut |_| true).expect("runs");
    let key = |t: &tailcut_sim::Tables| -> Vec<(u64, Option<u64>)> {
        t.flows.iter().map(|f| (f.flow_id, f.finish_ns)).collect()
    };
    assert_eq!(key(&a), key(&b));
    assert_eq!(a.runs[0].engine_counters, b.runs[0].engine_counters);
    assert_eq!(a.runs[0].events, b.runs[0].events);
}

#[test]
fn dcquic_sets_up_in_one_round_trip_dctcp_with_tls_in_two() {
    let text = include_str!("../../../../experiments/dcquic/rpc.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    for w in &mut exp.workload {
        w.until = Some(tailcut_proto::Dur::from_millis(300));
    }
    exp.max_time = tailcut_proto::Dur::from_millis(400);
    // About handshake round trips, so DCQUIC keeps its earlier 10-packet initial window: under RFC
    // 9002's cap (18 KB at a 9 KB MPS) a fresh 10 KB RPC is no faster than over DCTCP + TLS 1.3 here
    // (docs/results-dcquic.md, "2b").
    for s in &mut exp.schemes {
        if s.transport == "dcquic" {
            s.params
                .insert("initial_window_limit".into(), 1_000_000_000u64.into());
        }
    }
    let t = run(&exp, &mut |_| true).expect("runs");
    let mean = |scheme: &str, n: &str, d: &str| {
        let r = t.runs.iter().find(|r| r.scheme == scheme).unwrap();
        r.engine_counters[n] as f64 / r.engine_counters[d] as f64
    };
    // Base RTT 100 us plus serialisation.
    let q = mean("dcquic", "dcquic_handshake_ns", "dcquic_handshakes");
    let tls = mean("dctcp_tls13", "tls_handshake_ns", "tls_handshakes");
    assert!((100e3..150e3).contains(&q), "dcquic handshake {q}");
    assert!((200e3..260e3).contains(&tls), "tcp + tls handshake {tls}");
    // So a small RPC on a fresh connection completes sooner over DCQUIC.
    let mean_fct = |scheme: &str| {
        let v: Vec<u64> = t
            .flows
            .iter()
            .filter(|f| f.scheme == scheme && f.size_bytes == 10_000)
            .filter_map(|f| f.fct_ns())
            .collect();
        v.iter().sum::<u64>() as f64 / v.len() as f64
    };
    assert!(mean_fct("dcquic") < 0.8 * mean_fct("dctcp_tls13"));
}

#[test]
fn registry_lists_dcquic_and_its_baselines_and_names_bad_fields() {
    use tailcut_sim::scheme;
    let reg = scheme::registry();
    for n in [
        "dcquic",
        "tcp_tls13",
        "dctcp_tls13",
        "tcp_reconnect",
        "dctcp_reconnect",
    ] {
        let info = reg.iter().find(|i| i.name == n).unwrap_or_else(|| panic!("{n}"));
        assert!(!info.params.is_empty());
        scheme::resolve(n, &serde_json::Map::new()).unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    let bad = |name: &str, json: &str| -> String {
        let m: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json).unwrap();
        match scheme::resolve(name, &m) {
            Ok(_) => panic!("{name} {json} should fail"),
            Err(e) => e.to_string(),
        }
    };
    assert!(bad("dcquic", r#"{"mps": {"small_task": "100B"}}"#).starts_with("params.mps.small_task:"));
    assert!(
        bad("dcquic", r#"{"migration": {"short_window": 50}}"#).starts_with("params.migration.short_window:")
    );
    assert!(bad("dcquic", r#"{"migration": {"alpha": 0}}"#).starts_with("params.migration.alpha:"));
    assert!(
        bad("dcquic", r#"{"congestion_control": {"kind": "dctcp", "g": 2}}"#)
            .starts_with("params.congestion_control.g:")
    );
    assert!(
        bad("dcquic", r#"{"congestion_control": {"kind": "bbr"}}"#).starts_with("params.congestion_control")
    );
    assert!(bad("dcquic", r#"{"mtu": 9000}"#).starts_with("params"));
    assert!(bad("dcquic", r#"{"tail_fec_packets": 0}"#).starts_with("params.tail_fec_packets:"));
    assert!(bad("dcquic", r#"{"tail_fec": "yes"}"#).starts_with("params.tail_fec:"));
    // The compare suite's dcquic_fec parameters.
    scheme::resolve(
        "dcquic",
        &serde_json::from_str(r#"{"tail_fec": true, "tail_fec_packets": 4}"#).unwrap(),
    )
    .unwrap();
    assert!(bad("dctcp_tls13", r#"{"tls_server_flight": "0B"}"#).starts_with("params.tls_server_flight:"));
    assert!(bad("dctcp_reconnect", r#"{"reconnect_after": "0ms"}"#).starts_with("params.reconnect_after:"));
    // Nested tables overlay key by key: the other MPS defaults stay.
    scheme::resolve(
        "dcquic",
        &serde_json::from_str(r#"{"mps": {"negotiate": false}}"#).unwrap(),
    )
    .unwrap();
}

#[test]
fn zero_rtt_resumes_and_stays_deterministic() {
    let text = include_str!("../../../../experiments/dcquic/rpc.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.schemes
        .retain(|s| s.name == "dcquic_cubic" || s.name == "dcquic_0rtt");
    for w in &mut exp.workload {
        w.until = Some(tailcut_proto::Dur::from_millis(200));
    }
    exp.max_time = tailcut_proto::Dur::from_millis(300);
    let a = run(&exp, &mut |_| true).expect("runs");
    let b = run(&exp, &mut |_| true).expect("runs");
    let key = |t: &tailcut_sim::Tables| -> Vec<(u64, Option<u64>)> {
        t.flows.iter().map(|f| (f.flow_id, f.finish_ns)).collect()
    };
    assert_eq!(key(&a), key(&b));
    for (ra, rb) in a.runs.iter().zip(&b.runs) {
        assert_eq!(ra.engine_counters, rb.engine_counters);
        assert_eq!(ra.events, rb.events);
    }
    let c = |scheme: &str, n: &str| {
        let r = a.runs.iter().find(|r| r.scheme == scheme).unwrap();
        r.engine_counters.get(n).copied().unwrap_or(0)
    };
    assert_eq!(c("dcquic_cubic", "dcquic_0rtt_attempts"), 0);
    let (att, acc) = (
        c("dcquic_0rtt", "dcquic_0rtt_attempts"),
        c("dcquic_0rtt", "dcquic_0rtt_accepted"),
    );
    // Every client meets each server more than once in 200 ms: most connections resume.
    assert!(acc > 0 && acc == att, "attempts {att} accepted {acc}");
    let fb = |s: &str| c(s, "dcquic_first_byte_ns") as f64 / c(s, "dcquic_first_bytes") as f64;
    assert!(
        fb("dcquic_0rtt") < fb("dcquic_cubic"),
        "{} {}",
        fb("dcquic_0rtt"),
        fb("dcquic_cubic")
    );
}

/// experiments/dcquic/tail_fec.toml with its workloads cut to `until`.
fn tail_fec(until_ms: u64) -> Experiment {
    let text = include_str!("../../../../experiments/dcquic/tail_fec.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    for w in &mut exp.workload {
        w.until = Some(tailcut_proto::Dur::from_millis(until_ms));
    }
    exp.max_time = tailcut_proto::Dur::from_millis(until_ms + 500);
    exp
}

/// FCTs (ns, sorted) of one scheme's flows of one component, and whether all completed.
fn fcts(t: &tailcut_sim::Tables, scheme: &str, component: &str) -> (Vec<u64>, bool) {
    let fs: Vec<&FlowRecord> = t
        .flows
        .iter()
        .filter(|f| f.scheme == scheme && f.component == component)
        .collect();
    let mut v: Vec<u64> = fs.iter().filter_map(|f| f.fct_ns()).collect();
    v.sort_unstable();
    let all = v.len() == fs.len() && !v.is_empty();
    (v, all)
}

#[test]
fn tail_fec_cuts_the_tail_of_small_rpcs_under_random_loss() {
    let exp = tail_fec(300);
    let t = run(&exp, &mut |_| true).expect("runs");
    let counter = |scheme: &str, n: &str| {
        let r = t.runs.iter().find(|r| r.scheme == scheme).unwrap();
        r.engine_counters.get(n).copied().unwrap_or(0)
    };
    assert!(counter("dcquic", "dcquic_lost_packets") > 10);
    assert_eq!(counter("dcquic", "dcquic_fec_repairs"), 0);
    assert!(counter("dcquic_fec", "dcquic_fec_recovered") > 5);
    for c in ["rpc4k", "rpc30k"] {
        let (plain, all_p) = fcts(&t, "dcquic", c);
        let (fec, all_f) = fcts(&t, "dcquic_fec", c);
        assert!(all_p && all_f, "{c}: every RPC completes");
        // Same flows; the median RPC sees no loss either way.
        assert_eq!(plain.len(), fec.len());
        let pct = |v: &[u64], per_mille| percentile(v, 0, per_mille);
        assert!(pct(&fec, 500) <= pct(&plain, 500) + 5e3, "{c}");
        // A 4 KB response is one packet: its parity follows it and halves the p99. A 30 KB one is
        // larger than RFC 9002's 18 KB initial window, so its parity often leaves before its
        // congestion-blocked last packets and cannot repair them; with QUIC's probe timeout near 2 ms
        // (1 ms ACK delay) the parity's cwnd share then costs more than it saves (docs/dcquic.md).
        if c == "rpc4k" {
            assert!(
                2.0 * pct(&fec, 990) < pct(&plain, 990),
                "{c}: p99 {} vs {}",
                pct(&fec, 990),
                pct(&plain, 990)
            );
        }
    }
    // The repairs are extra bytes of the flows, and only with tail_fec.
    let redundant = |scheme: &str| -> u64 {
        t.flows
            .iter()
            .filter(|f| f.scheme == scheme)
            .map(|f| f.stats.redundant_bytes)
            .sum()
    };
    assert_eq!(redundant("dcquic"), 0);
    assert_eq!(
        redundant("dcquic_fec"),
        counter("dcquic_fec", "dcquic_fec_repair_bytes")
    );
}

#[test]
fn tail_fec_same_seed_same_results() {
    let exp = tail_fec(100);
    let a = run(&exp, &mut |_| true).expect("runs");
    let b = run(&exp, &mut |_| true).expect("runs");
    let key = |t: &tailcut_sim::Tables| -> Vec<(u64, Option<u64>, u64)> {
        t.flows
            .iter()
            .map(|f| (f.flow_id, f.finish_ns, f.stats.sent_bytes))
            .collect()
    };
    assert_eq!(key(&a), key(&b));
    for (ra, rb) in a.runs.iter().zip(&b.runs) {
        assert_eq!(ra.engine_counters, rb.engine_counters);
    }
}

/// The numbers of docs/results-dcquic.md, "DCQUIC with FEC-protected tails" (the full experiment).
#[test]
#[ignore = "prints the experiment's table; run with --ignored --nocapture"]
fn tail_fec_experiment() {
    let text = include_str!("../../../../experiments/dcquic/tail_fec.toml");
    let exp = api::parse_toml(text).expect("valid experiment");
    let t = run(&exp, &mut |_| true).expect("runs");
    for scheme in ["dcquic", "dcquic_fec"] {
        for c in ["rpc4k", "rpc30k"] {
            let (v, all) = fcts(&t, scheme, c);
            let s = Summary::over(t.flows.iter().filter(|f| f.scheme == scheme && f.component == c));
            println!(
                "{scheme:<11} {c:<7} flows {:>5} all done {all}  p50 {:>8.1} us  p99 {:>8.1} us  p99.9 {:>8.1} us  max {:>8.1} us  mean {:>7.1} us  extra/payload {:.3}  redundant/payload {:.3}",
                s.flows,
                s.p50_fct_ns / 1e3,
                s.p99_fct_ns / 1e3,
                s.p999_fct_ns / 1e3,
                *v.last().unwrap() as f64 / 1e3,
                s.mean_fct_ns / 1e3,
                s.extra_bytes_ratio,
                s.redundant_bytes_ratio,
            );
        }
        let r = t.runs.iter().find(|r| r.scheme == scheme).unwrap();
        let c = |n: &str| r.engine_counters.get(n).copied().unwrap_or(0);
        println!(
            "{scheme:<11} lost packets {}  fec recovered {} ({} B)  repairs {} ({} B)",
            c("dcquic_lost_packets"),
            c("dcquic_fec_recovered"),
            c("dcquic_fec_recovered_bytes"),
            c("dcquic_fec_repairs"),
            c("dcquic_fec_repair_bytes")
        );
    }
}

#[test]
fn lost_packets_count_as_retransmitted_bytes_of_the_messages() {
    let mut exp = tail_fec(100);
    exp.schemes.retain(|s| s.name == "dcquic");
    let lossy = run(&exp, &mut |_| true).expect("runs");
    exp.faults.clear();
    let clean = run(&exp, &mut |_| true).expect("runs");
    let retransmitted =
        |t: &tailcut_sim::Tables| -> u64 { t.flows.iter().map(|f| f.stats.retransmitted_bytes).sum() };
    assert_eq!(retransmitted(&clean), 0);
    let lost_packets = lossy.runs[0].engine_counters["dcquic_lost_packets"];
    assert!(lost_packets > 5, "{lost_packets}");
    // Every lost packet is charged to a message in flight on its connection: at least a header each.
    assert!(
        retransmitted(&lossy) > 40 * lost_packets,
        "{}",
        retransmitted(&lossy)
    );
    for f in lossy.flows.iter().filter(|f| f.finish_ns.is_some()) {
        assert_eq!(
            f.stats.sent_bytes,
            f.size_bytes + f.request_bytes + f.stats.retransmitted_bytes,
            "flow {}",
            f.flow_id
        );
    }
}
