//! TCP small queues (`network.host_tsq`): a connection end may keep only a bounded number of bytes in
//! its host's NIC queue, so a small flow leaving the same host as a bulk flow does not wait behind
//! megabytes of it.

use crate::common;

use common::fixtures::run_toml;
use tailcut_sim::run::Tables;

/// Host 1 sends a 20 MB bulk flow to host 2 on a 1 Gbps star: every link runs at the same rate, so the
/// queue builds in host 1's own NIC. Ten 10 KB flows from host 1 to host 0 start once it has grown.
fn shared_nic(network: &str, transport: &str) -> Tables {
    run_toml(&format!(
        r#"
name = "shared_nic"
max_time = "2s"
[topology]
kind = "star"
hosts = 3
host_rate = "1Gbps"
link_delay = "10us"
[network]
buffer = "256KB"
{network}
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
name = "s"
transport = "{transport}"
"#
    ))
}

fn small_fct_max_us(t: &Tables) -> f64 {
    let fcts: Vec<u64> = t
        .flows
        .iter()
        .filter(|f| f.component == "small")
        .map(|f| f.fct_ns().expect("every small flow finishes"))
        .collect();
    assert_eq!(fcts.len(), 10);
    *fcts.iter().max().unwrap() as f64 / 1e3
}

fn host1_nic_peak(t: &Tables) -> u64 {
    t.ports
        .iter()
        .filter(|p| p.node == "h1")
        .map(|p| p.counters.max_occupancy_bytes)
        .max()
        .expect("host 1 has a NIC port")
}

#[test]
fn small_flows_skip_the_bulk_backlog_of_their_own_nic() {
    for transport in ["tcp", "dctcp"] {
        let fifo = shared_nic("host_tsq = 0", transport);
        let tsq = shared_nic("host_tsq = \"64KB\"", transport);
        let (fifo_us, tsq_us) = (small_fct_max_us(&fifo), small_fct_max_us(&tsq));
        // Without a budget the bulk flow's window sits in the NIC (megabytes, tens of ms at 1 Gbps);
        // with one, at most 64 KB plus a packet of it, beside the small flows' own few packets.
        assert!(
            host1_nic_peak(&fifo) > 1_000_000,
            "{transport}: {}",
            host1_nic_peak(&fifo)
        );
        assert!(
            host1_nic_peak(&tsq) < 100_000,
            "{transport}: {}",
            host1_nic_peak(&tsq)
        );
        assert!(tsq_us < 1_000.0, "{transport}: small flows {tsq_us} us with TSQ");
        assert!(
            fifo_us > 3.0 * tsq_us,
            "{transport}: FIFO {fifo_us} us, TSQ {tsq_us} us"
        );
        // The bulk flow still runs at line rate: holding it back costs it nothing.
        let bulk = |t: &Tables| {
            t.flows
                .iter()
                .find(|f| f.component == "bulk")
                .and_then(|f| f.fct_ns())
                .expect("bulk flow finishes") as f64
        };
        assert!(
            bulk(&tsq) < 1.02 * bulk(&fifo),
            "{transport}: bulk {} vs {}",
            bulk(&tsq),
            bulk(&fifo)
        );
        assert!(tsq.runs[0].conservation.ok);
        assert!(tsq.runs[0].engine_counters["host_tsq_holds"] > 0);
    }
}

#[test]
fn the_budget_keeps_runs_deterministic_and_conserving() {
    let a = shared_nic("host_tsq = \"16KB\"", "tcp");
    let b = shared_nic("host_tsq = \"16KB\"", "tcp");
    let key = |t: &Tables| -> Vec<(u64, Option<u64>)> {
        t.flows.iter().map(|f| (f.flow_id, f.finish_ns)).collect()
    };
    assert_eq!(key(&a), key(&b));
    assert_eq!(a.runs[0].events, b.runs[0].events);
    assert!(a.runs[0].conservation.ok, "{:?}", a.runs[0].conservation);
}

#[test]
fn without_a_budget_no_engine_is_held() {
    let t = shared_nic("host_tsq = 0", "tcp");
    assert!(!t.runs[0].engine_counters.contains_key("host_tsq_holds"));
}

/// The default host is a Linux host: at 1 Gbps TSQ's limit is two 64 KB skbs (131072 B, above 1 ms of
/// line rate), so the bulk flow keeps at most that plus one packet in its NIC, beside the small flows'
/// own packets (a few flows of 7 packets each).
#[test]
fn the_default_host_keeps_linux_tsq_limit_in_its_nic() {
    for transport in ["tcp", "dctcp"] {
        let t = shared_nic("", transport);
        let peak = host1_nic_peak(&t);
        assert!(
            (100_000..=131_072 + 30 * 1_500).contains(&peak),
            "{transport}: NIC peak {peak}"
        );
        assert!(t.runs[0].engine_counters["host_tsq_holds"] > 0);
    }
}

#[test]
fn every_transport_finishes_under_a_tight_budget() {
    // A budget below one packet holds an engine after every packet; engines whose deadline is due
    // while held (TCP-IR's redundant copies, paced senders) must wait for the wake-up, not spin.
    for transport in [
        "tcp",
        "dctcp",
        "tlp",
        "tcp_ir",
        "proactive",
        "repflow",
        "mptcp",
        "fuso",
        "cp",
        "pias",
        "pfabric",
        "dcquic",
    ] {
        let t = shared_nic("host_tsq = \"1KB\"", transport);
        let run = &t.runs[0];
        assert!(run.conservation.ok, "{transport}: {:?}", run.conservation);
        assert_eq!(run.flows_finished, run.flows_started, "{transport}");
        assert!(run.engine_counters["host_tsq_holds"] > 0, "{transport}");
    }
}
