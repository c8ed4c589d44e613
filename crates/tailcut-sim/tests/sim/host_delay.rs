//! The applications' wake-ups (`host_delay`, docs/tcp.md "Host profiles"): with nothing else in the
//! network, each flow finishes exactly as much later as its application waited, no more and no less.

use crate::common::fixtures::run_toml;
use std::collections::BTreeMap;

/// Two hosts on a star, no loss, one-way flows (`request = ""`) or request/response flows
/// (`request = "request_bytes = \"200B\""`) far apart, one scheme per `(name, params)`.
fn experiment(request: &str, schemes: &[(&str, &str)]) -> String {
    let mut text = format!(
        r#"
name = "host_delay"
max_time = "1s"
[topology]
kind = "star"
hosts = 2
host_rate = "10Gbps"
link_delay = "10us"
[[workload]]
name = "w"
pattern = {{ kind = "pairs", pairs = [[0, 1]] }}
fixed = "30KB"
rate_per_host = 100
flows = 8
{request}
"#
    );
    for (name, params) in schemes {
        text += &format!("[[schemes]]\nname = \"{name}\"\ntransport = \"tcp\"\nparams = {params}\n");
    }
    text
}

/// Every scheme's FCT per flow, keyed by scheme name.
fn fcts(text: &str) -> BTreeMap<String, Vec<u64>> {
    let t = run_toml(text);
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for f in &t.flows {
        let fct = f
            .fct_ns()
            .unwrap_or_else(|| panic!("{} flow {} unfinished", f.scheme, f.flow_id));
        out.entry(f.scheme.clone()).or_default().push(fct);
    }
    out
}

const DELAYS: &str = r#"host_delay = { write_after_connect = "100us", read_after_arrival = "50us" }"#;

/// A one-way flow on a fresh connection: the client writes 100 us after `connect` returns and the
/// server reads 50 us after the last byte: every FCT is 150 us longer, exactly.
#[test]
fn a_flow_waits_for_its_write_and_its_read() {
    let with = format!("{{ handshake = true, {DELAYS} }}");
    let f = fcts(&experiment(
        "",
        &[("plain", "{ handshake = true }"), ("delayed", &with)],
    ));
    assert_eq!(f["plain"].len(), 8);
    for (p, d) in f["plain"].iter().zip(&f["delayed"]) {
        assert_eq!(d - p, 150_000, "plain {p} delayed {d}");
    }
}

/// Request/response: the client writes its request after `connect` (100 us), the server reads it
/// (50 us) before answering, the client reads the response (50 us): 200 us, less the 32 ns the
/// server's ACK of the request (40 B at 10 Gbit/s) no longer holds the response back in its NIC (it
/// leaves 50 us before the response instead of just ahead of it).
#[test]
fn a_call_waits_for_one_write_and_two_reads() {
    let with = format!("{{ handshake = true, {DELAYS} }}");
    let req = "request_bytes = \"200B\"";
    let f = fcts(&experiment(
        req,
        &[("plain", "{ handshake = true }"), ("delayed", &with)],
    ));
    for (p, d) in f["plain"].iter().zip(&f["delayed"]) {
        assert_eq!(d - p, 200_000 - 32, "plain {p} delayed {d}");
    }
}

/// Without a handshake the flow starts with the application's write: only the read is added.
#[test]
fn without_a_handshake_only_the_read_is_waited_for() {
    let with = format!("{{ {DELAYS} }}");
    let f = fcts(&experiment("", &[("plain", "{}"), ("delayed", &with)]));
    for (p, d) in f["plain"].iter().zip(&f["delayed"]) {
        assert_eq!(d - p, 50_000, "plain {p} delayed {d}");
    }
}

/// `host = "testbed"` is `linux` with the handshake and the measured wake-ups (and HZ = 250 timers,
/// which a run without loss never waits for): the same FCTs as spelling them out.
#[test]
fn the_testbed_profile_is_linux_with_the_handshake_and_the_measured_delays() {
    let spelled = format!("{{ handshake = true, {DELAYS} }}");
    let f = fcts(&experiment(
        "",
        &[("testbed", r#"{ host = "testbed" }"#), ("spelled", &spelled)],
    ));
    assert_eq!(f["testbed"], f["spelled"]);
    // A key given explicitly wins over the profile.
    let f = fcts(&experiment(
        "",
        &[
            ("testbed_no_delay", r#"{ host = "testbed", host_delay = {} }"#),
            ("handshake", "{ handshake = true }"),
        ],
    ));
    assert_eq!(f["testbed_no_delay"], f["handshake"]);
}
