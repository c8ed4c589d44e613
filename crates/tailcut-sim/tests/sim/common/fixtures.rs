//! Experiment text shared by the end-to-end tests, so that a scenario several schemes are measured on
//! is written once.

use tailcut_sim::api;
use tailcut_sim::run::{run, Tables};

/// Parses and runs an experiment, panicking with the parser's or the run's message.
pub fn run_toml(text: &str) -> Tables {
    let exp = api::parse_toml(text).unwrap_or_else(|e| panic!("bad experiment: {e}"));
    run(&exp, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// The classic incast: `n` senders each answer one 64 KB response to host 0 through a 128 KB port
/// buffer on a 1 Gbps star. `network` adds keys to the `[network]` table; `schemes` is the
/// `[[schemes]]` text.
pub fn incast_star(n: u32, network: &str, schemes: &str) -> String {
    format!(
        r#"
name = "incast"
max_time = "5s"
[topology]
kind = "star"
hosts = {hosts}
host_rate = "1Gbps"
link_delay = "25us"
[network]
buffer = "128KB"
{network}
[[workload]]
name = "incast"
pattern = {{ kind = "incast", receiver = 0, fanout = {n} }}
fixed = "64KB"
{schemes}
"#,
        hosts = n + 1
    )
}
