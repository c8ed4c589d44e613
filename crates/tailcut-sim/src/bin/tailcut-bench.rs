//! The simulator benchmark: runs experiment files and reports events/s, packet-hops/s (packets, data and
//! control, times links traversed, per wall second) and peak memory.
//!
//! `cargo run --release -p tailcut-sim --bin tailcut-bench -- experiments/bench/*.toml`
//!
//! After the speed lines it prints each scheme's results over all flows and over small ones, as
//! `docs/metrics.md` defines them: completed flows, mean, p95 and p99 FCT (unfinished flows infinitely
//! late), the fraction of flows with a timeout, and extra and redundant bytes over the delivered payload.

use std::io::Write;
use std::process::ExitCode;
use tailcut_sim::api;
use tailcut_sim::run::{run, WallClock};
use tailcut_sim::summary::{SizeClass, Summary};

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: tailcut-bench EXPERIMENT.toml...");
        return ExitCode::from(2);
    }
    // A closed stdout (e.g. piped into `head`) ends the report quietly.
    let mut out = std::io::stdout().lock();
    for path in paths {
        let exp = match api::load_toml(&path) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let wall = WallClock::start();
        let tables = match run(&exp, &mut |_| true) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let secs = wall.seconds();
        for r in &tables.runs {
            let _ = writeln!(
                out,
                "{:<32} {:<8} events/s {:>6.2} M  packet-hops/s {:>6.2} M  events {:>11}  hops {:>11}  flows {}/{}  sim {:.3}s  wall {:.2}s",
                exp.name,
                r.scheme,
                r.events as f64 / r.wall_seconds / 1e6,
                r.packet_hops as f64 / r.wall_seconds / 1e6,
                r.events,
                r.packet_hops,
                r.flows_finished,
                r.flows_started,
                r.sim_end_ns as f64 * 1e-9,
                r.wall_seconds,
            );
        }
        for (r, label, small) in tables
            .runs
            .iter()
            .flat_map(|r| [(r, "all", false), (r, "<100KB", true)])
        {
            let s = Summary::of_where(&tables.flows, &r.scheme, |f| {
                !small || SizeClass::of(f.size_bytes) == SizeClass::Small
            });
            let _ = writeln!(
                out,
                "{:<32} {:<18} {:<6} flows {}/{}  mean FCT {:>9.1} us  p95 FCT {:>9.1} us  p99 FCT {:>9.1} us  timeout frac {:.4}  extra bytes {:.3}  redundant bytes {:.3}",
                exp.name,
                r.scheme,
                label,
                s.completed,
                s.flows,
                s.mean_fct_ns / 1e3,
                s.p95_fct_ns / 1e3,
                s.p99_fct_ns / 1e3,
                s.timeout_fraction,
                s.extra_bytes_ratio,
                s.redundant_bytes_ratio,
            );
        }
        for r in tables.runs.iter().filter(|r| !r.shim_counters.is_empty()) {
            let c: Vec<String> = r.shim_counters.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(out, "{:<32} {:<18} shim   {}", exp.name, r.scheme, c.join("  "));
        }
        for r in tables.runs.iter().filter(|r| !r.engine_counters.is_empty()) {
            let c: Vec<String> = r
                .engine_counters
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(out, "{:<32} {:<18} engine {}", exp.name, r.scheme, c.join("  "));
        }
        let _ = writeln!(
            out,
            "{:<32} total wall {:.2}s  peak RSS {:.0} MiB",
            exp.name,
            secs,
            peak_rss_mib().unwrap_or(f64::NAN)
        );
    }
    ExitCode::SUCCESS
}
