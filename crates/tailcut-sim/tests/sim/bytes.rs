//! `check_bytes`: every message carries real bytes through the simulated network, each arrives
//! byte for byte, and the flow tables are the ones of the same run without bytes.

use tailcut_sim::{api, run, Experiment, Tables};

/// FUSO's random-loss experiment (4% on one path, persistent connections, request/response) on
/// fewer flows, with every TCP-family scheme and CloudBurst.
fn lossy() -> Experiment {
    let extra = r#"
[[schemes]]
name = "tcp_rack"
transport = "tcp"
params = { min_rto = "5ms" }

[[schemes]]
name = "dctcp"
transport = "dctcp"
params = { min_rto = "5ms", delayed_ack = "40us" }

[[schemes]]
name = "tcp_ir"
transport = "tcp_ir"
params = { min_rto = "5ms", loss_detection = "dupthresh" }

[[schemes]]
name = "pias"
transport = "pias"
params = { min_rto = "5ms" }

[[schemes]]
name = "pfabric"
transport = "pfabric"
params = { min_rto = "5ms" }

[[schemes]]
name = "cloudburst"
transport = "cloudburst"
"#;
    let text = include_str!("../../../../experiments/fuso/net_loss_4.toml").to_string() + extra;
    let mut exp = api::parse_toml(&text).expect("valid experiment");
    exp.workload[0].flows = Some(150);
    exp
}

/// CP's incast: payloads cut at the switch, PACKs, precise retransmissions.
fn trimming() -> Experiment {
    let text = include_str!("../../../../experiments/cp/incast_4senders.toml");
    let mut exp = api::parse_toml(text).expect("valid experiment");
    exp.max_time = tailcut_proto::Dur::from_millis(2_000);
    exp
}

fn check(exp: Experiment) -> Tables {
    let plain = run(&exp, &mut |_| true).expect("runs");
    let checked = run(
        &Experiment {
            check_bytes: true,
            ..exp
        },
        &mut |_| true,
    )
    .expect("runs");
    assert_eq!(plain.flows.len(), checked.flows.len());
    for (a, b) in plain.flows.iter().zip(&checked.flows) {
        assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "flow tables differ with bytes carried"
        );
    }
    checked
}

fn assert_intact(t: &Tables) {
    for r in &t.runs {
        let c = |k: &str| r.engine_counters.get(k).copied().unwrap_or(u64::MAX);
        let flows = t.flows.iter().filter(|f| f.scheme == r.scheme).count() as u64;
        assert_eq!(c("app_bytes_corrupt_messages"), 0, "{}", r.scheme);
        assert_eq!(c("app_bytes_uncarried_messages"), 0, "{}", r.scheme);
        assert!(
            c("app_bytes_intact_messages") >= flows,
            "{}: {:?}",
            r.scheme,
            r.engine_counters
        );
        assert_eq!(r.flows_finished, flows, "{}", r.scheme);
    }
}

#[test]
fn lossy_paths_deliver_every_message_byte_exact_with_unchanged_flow_tables() {
    assert_intact(&check(lossy()));
}

#[test]
fn cut_payloads_deliver_every_message_byte_exact_with_unchanged_flow_tables() {
    let t = check(trimming());
    assert_intact(&t);
    let cut: u64 = t.ports.iter().map(|p| p.counters.trimmed).sum();
    assert!(cut > 0, "the switch must cut payloads");
}
