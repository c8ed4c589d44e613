//! The reconnecting RPC clients (`tcp_reconnect`, `dctcp_reconnect`) on real hosts: a client with two
//! NICs whose first NIC's path becomes a black hole. Needs root (namespaces, TUN); skipped otherwise.

mod common;

use common::realnet;
use common::run_text;
use tailcut_testbed::experiment::{FlowRow, SchemeSummary};

/// DCQUIC Sec. 4.3's topology (`experiments/dcquic/migration_topo_1g.toml`): clients c1-c3 with their
/// first NIC via sw2 and their second via sw3, the server srv on sw0. Client c1 calls the server on
/// one persistent connection (20 KB each way, 40 calls/s until 1 s); from 300 ms on the link sw2-sw0
/// loses every packet, both ways, for good.
fn black_hole(schemes: &str) -> String {
    let topo = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../python/tailcut/data/experiments/dcquic/migration_topo_1g.toml"
    );
    format!(
        r#"name = "reconnect"
seed = 1
max_time = "1500ms"

[topology]
kind = "file"
path = "{topo}"

[[faults]]
kind = "loss"
link = {{ between = ["sw2", "sw0"] }}
model = {{ kind = "bernoulli", p = 1.0 }}
at = "300ms"

[[workload]]
name = "rpc"
pattern = {{ kind = "one_to_all", clients = [1] }}
server_hosts = [0]
fixed = "20KB"
request_bytes = "20KB"
rate_per_host = 40
until = "1s"
connection = "persistent"

{schemes}
[testbed]
grace = "3s"
"#
    )
}

const HOLE_AT_NS: u64 = 300_000_000;

/// The reconnecting client gives its connection up after 200 ms without progress, reconnects from its
/// second NIC and re-sends the unanswered calls there: every call is answered, each reply checked to be
/// its own call's (the agent fails a flow whose reply names another), and the second NIC's path
/// carried them. The same file with Linux's TCP or DCTCP, which stay on the first NIC, answers no call
/// that started after the path died.
#[test]
fn a_reconnecting_client_moves_to_its_second_nic_and_plain_tcp_stays_in_the_hole() {
    let Some(_g) = realnet("a_reconnecting_client_moves_to_its_second_nic_and_plain_tcp_stays_in_the_hole")
    else {
        return;
    };
    let schemes = r#"[[schemes]]
name = "dctcp_reconnect"
transport = "dctcp_reconnect"
params = { min_rto = "5ms", reconnect_after = "200ms" }

[[schemes]]
name = "dctcp"
transport = "dctcp"
params = { min_rto = "5ms" }

[[schemes]]
name = "tcp"
transport = "tcp"
params = { min_rto = "5ms" }
"#;
    let (rows, summaries) = run_text(&black_hole(schemes));
    let of = |scheme: &str| -> Vec<&FlowRow> { rows.iter().filter(|r| r.scheme == scheme).collect() };
    let flows = of("dctcp_reconnect").len();
    assert!(flows > 20, "{flows} calls");
    let late = of("dctcp_reconnect")
        .into_iter()
        .filter(|r| r.start_ns >= HOLE_AT_NS)
        .count();
    assert!(late > 10, "{late} calls after the hole opened");

    let failed: Vec<_> = of("dctcp_reconnect")
        .into_iter()
        .filter(|r| !r.completed || r.error.is_some())
        .map(|r| (r.flow_id, r.error.clone()))
        .collect();
    assert!(
        failed.is_empty(),
        "every call answered, its own reply: {failed:?}"
    );
    let s = &summaries[0];
    assert_eq!(s.scheme, "dctcp_reconnect");
    let reconnects = s
        .reconnects
        .expect("a reconnecting scheme counts its reconnections");
    assert!(reconnects >= 1, "{reconnects}");
    assert!(
        of("dctcp_reconnect").into_iter().all(|r| r.reconnects.is_some()),
        "every flow of a reconnecting scheme says how often it was re-sent"
    );
    let resent = of("dctcp_reconnect")
        .into_iter()
        .filter(|r| r.reconnects.unwrap() > 0)
        .count();
    assert!(resent >= 1, "the stalled calls were re-sent");
    let port = |s: &SchemeSummary, a: &str, b: &str| s.fabric.port(a, b).unwrap().counters;
    assert!(
        port(s, "sw2", "sw0").dropped_link_loss > 0,
        "the first NIC's path dropped calls"
    );
    assert!(
        port(s, "sw3", "sw0").tx_packets > 0,
        "the second NIC's path carried calls"
    );

    for s in &summaries[1..] {
        assert_eq!(s.reconnects, None, "{} never reconnects", s.scheme);
        assert!(of(&s.scheme).into_iter().all(|r| r.reconnects.is_none()));
        let answered_late: Vec<u64> = of(&s.scheme)
            .into_iter()
            .filter(|r| r.start_ns >= HOLE_AT_NS && r.completed)
            .map(|r| r.flow_id)
            .collect();
        assert!(
            answered_late.is_empty(),
            "{}: no call after the hole is answered, got {answered_late:?}",
            s.scheme
        );
        assert_eq!(
            port(s, "sw3", "sw0").tx_packets,
            0,
            "{} stays on the first NIC",
            s.scheme
        );
    }
}
