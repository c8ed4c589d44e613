//! Runs the CP experiments (`experiments/cp/*.toml`) and prints, per scheme and workload component:
//! flows completed, goodput (the component's bytes over the time from its first start to its last
//! finish), mean / p99 / p99.9 completion time (as `docs/metrics.md` defines them: nearest rank,
//! unfinished flows infinitely late), retransmission timeouts, and the payload cuts and
//! overflow drops at switch ports.
//!
//! `cargo run --release -p tailcut-sim --example cp_report -- experiments/cp/outcast.toml`
//! `cargo run --release -p tailcut-sim --example cp_report -- --fanout 8,32,64,128,250 experiments/cp/incast.toml`
//!
//! `cargo run --release -p tailcut-sim --example cp_report -- --fanout 8,32,64,128,248 experiments/cp/incast_4senders.toml`
//!
//! `--fanout` sweeps an incast file. An incast given by `fanout` gets `fanout + 1` hosts and `fanout`
//! senders, one flow each; one given by a `senders` list keeps its hosts and gets N / senders flows
//! per sender (N must be a multiple of the list's length).

use std::process::ExitCode;
use tailcut_sim::api;
use tailcut_sim::summary::Summary;
use tailcut_sim::topo::TopologyConfig;
use tailcut_sim::workload::Pattern;
use tailcut_sim::{run, Experiment};

fn report(exp: &Experiment, label: &str) -> Result<(), String> {
    let t = run(exp, &mut |_| true).map_err(|e| e.to_string())?;
    for s in &exp.schemes {
        let ports: Vec<_> = t.ports.iter().filter(|p| p.scheme == s.name).collect();
        let cut: u64 = ports.iter().map(|p| p.counters.trimmed).sum();
        let dropped: u64 = ports
            .iter()
            .map(|p| p.counters.dropped_overflow + p.counters.dropped_aqm)
            .sum();
        for w in &exp.workload {
            let fl: Vec<_> = t
                .flows
                .iter()
                .filter(|f| f.scheme == s.name && f.component == w.name)
                .collect();
            if fl.is_empty() {
                continue;
            }
            let sum = Summary::over(fl.iter().copied());
            let bytes: u64 = fl
                .iter()
                .filter(|f| f.finish_ns.is_some())
                .map(|f| f.size_bytes)
                .sum();
            let first = fl.iter().map(|f| f.start_ns).min().unwrap_or(0);
            let last = fl.iter().filter_map(|f| f.finish_ns).max().unwrap_or(first);
            let goodput_mbps = bytes as f64 * 8.0 / (last - first).max(1) as f64 * 1e3;
            let timeouts: u64 = fl.iter().map(|f| u64::from(f.stats.timeouts)).sum();
            let to_flows = fl.iter().filter(|f| f.stats.timeouts > 0).count();
            let size_all: u64 = fl.iter().map(|f| f.size_bytes).sum();
            let rtx: u64 = fl.iter().map(|f| f.stats.retransmitted_bytes).sum();
            let rtx_pct = 100.0 * rtx as f64 / size_all.max(1) as f64;
            println!(
                "{label:<22} {:<10} {:<8} flows {:>5}/{:<5} goodput {:>8.1} Mbps  fct mean {:>8.3} p99 {:>8.3} p99.9 {:>8.3} ms  timeouts {:>5} ({} flows)  rtx {:>5.2}%  cut {:>7}  dropped {:>7}",
                s.name,
                w.name,
                sum.completed,
                sum.flows,
                goodput_mbps,
                sum.mean_fct_ns / 1e6,
                sum.p99_fct_ns / 1e6,
                sum.p999_fct_ns / 1e6,
                timeouts,
                to_flows,
                rtx_pct,
                cut,
                dropped,
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut fanouts: Vec<u32> = Vec::new();
    let mut files = Vec::new();
    while let Some(a) = args.next() {
        if a == "--fanout" {
            let list = args.next().unwrap_or_default();
            fanouts = list.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        } else {
            files.push(a);
        }
    }
    if files.is_empty() {
        eprintln!("usage: cp_report [--fanout N,N,...] EXPERIMENT.toml...");
        return ExitCode::from(2);
    }
    for path in files {
        let exp = match api::load_toml(&path) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let runs: Result<Vec<(String, Experiment)>, String> = if fanouts.is_empty() {
            Ok(vec![(exp.name.clone(), exp)])
        } else {
            fanouts
                .iter()
                .map(|&n| {
                    let mut e = exp.clone();
                    let mut per_host = true;
                    for w in &mut e.workload {
                        if let Pattern::Incast {
                            fanout,
                            senders,
                            flows_per_sender,
                            ..
                        } = &mut w.pattern
                        {
                            match senders {
                                Some(list) if !list.is_empty() => {
                                    per_host = false;
                                    let k = list.len() as u32;
                                    if n % k != 0 {
                                        return Err(format!(
                                            "--fanout {n}: not a multiple of the {k} senders"
                                        ));
                                    }
                                    *flows_per_sender = n / k;
                                }
                                _ => *fanout = Some(n),
                            }
                        }
                    }
                    if let (true, TopologyConfig::Star(s)) = (per_host, &mut e.topology) {
                        s.hosts = n + 1;
                    }
                    Ok((format!("{} N={n}", exp.name), e))
                })
                .collect::<Result<_, String>>()
        };
        let runs = match runs {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        };
        for (label, e) in runs {
            if let Err(err) = report(&e, &label) {
                eprintln!("{path}: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
