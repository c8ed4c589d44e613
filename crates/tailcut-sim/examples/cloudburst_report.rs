//! Runs CloudBurst experiments (`experiments/cloudburst/*.toml`) and prints, per scheme, workload
//! component and message size: messages completed, p50 / mean / p99 message completion time (as
//! `docs/metrics.md` defines them: nearest rank, unfinished messages infinitely late), timeouts, and
//! the coding rate (bytes sent over the message's source packets of 1460 bytes: for CloudBurst, coded
//! packets sent / K, the ratio of the paper's Fig. 14; for TCP schemes, the same ratio counts
//! retransmissions and replicas). A component named `bg` (long-lived background) is
//! reported as its sending rate instead: payload bytes sent minus retransmitted over the run time.
//!
//! `cargo run --release -p tailcut-sim --example cloudburst_report -- experiments/cloudburst/testbed_2000.toml`

// A report prints its wall time; engines never read clocks.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::process::ExitCode;
use tailcut_sim::api;
use tailcut_sim::run;
use tailcut_sim::summary::Summary;

const SYMBOL: u64 = 1460;

fn line(label: &str, fl: &[&tailcut_sim::metrics::FlowRecord]) -> String {
    let s = Summary::over(fl.iter().copied());
    let timeouts: u64 = fl.iter().map(|f| u64::from(f.stats.timeouts)).sum();
    let done: Vec<_> = fl.iter().filter(|f| f.finish_ns.is_some()).collect();
    let sent: u64 = done.iter().map(|f| f.stats.sent_bytes).sum();
    let src: u64 = done
        .iter()
        .map(|f| f.size_bytes.div_ceil(SYMBOL).max(1) * SYMBOL)
        .sum();
    format!(
        "{label:<8} done {:>6}/{:<6} p50 {:>8.3} mean {:>8.3} p99 {:>8.3} ms  timeouts {:>5}  coding rate {:>5.3}",
        s.completed,
        s.flows,
        s.p50_fct_ns / 1e6,
        s.mean_fct_ns / 1e6,
        s.p99_fct_ns / 1e6,
        timeouts,
        sent as f64 / src.max(1) as f64,
    )
}

fn report(path: &str) -> Result<(), String> {
    let exp = api::load_toml(path)?;
    let wall = std::time::Instant::now();
    let t = run(&exp, &mut |_| true).map_err(|e| format!("{path}: {e}"))?;
    println!(
        "# {} ({path}): {:.1} s wall",
        exp.name,
        wall.elapsed().as_secs_f64()
    );
    for s in &exp.schemes {
        for w in &exp.workload {
            let fl: Vec<_> = t
                .flows
                .iter()
                .filter(|f| f.scheme == s.name && f.component == w.name)
                .collect();
            if fl.is_empty() {
                continue;
            }
            if w.name == "bg" {
                let bytes: u64 = fl
                    .iter()
                    .map(|f| f.stats.sent_bytes - f.stats.retransmitted_bytes.min(f.stats.sent_bytes))
                    .sum();
                let start = fl.iter().map(|f| f.start_ns).min().unwrap_or(0);
                let secs = (exp.max_time.0.saturating_sub(start)) as f64 / 1e9;
                println!(
                    "{:<24} bg       {} flows, sending {:>8.1} Mbps in total",
                    s.name,
                    fl.len(),
                    bytes as f64 * 8.0 / secs / 1e6
                );
                continue;
            }
            let mut by_size: BTreeMap<u64, Vec<_>> = BTreeMap::new();
            for f in &fl {
                by_size.entry(f.size_bytes).or_default().push(*f);
            }
            if by_size.len() > 1 {
                for (size, v) in &by_size {
                    println!(
                        "{:<24} {:<8} {}",
                        s.name,
                        w.name,
                        line(&format!("{}KB", size / 1000), v)
                    );
                }
            }
            println!("{:<24} {:<8} {}", s.name, w.name, line("all", &fl));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: cloudburst_report EXPERIMENT.toml...");
        return ExitCode::from(2);
    }
    for path in files {
        if let Err(e) = report(&path) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
