//! Runs FUSO experiment files (`experiments/fuso/*.toml`) and prints one line per scheme: query flows
//! completed, mean / p99 FCT of the queries (small flows of the `query` component, or every flow when
//! there is none), the fraction of them with a retransmission timeout, their extra load (redundant
//! bytes over their delivered bytes), all as `docs/metrics.md` defines them, and for incast files the
//! round completion time (the last flow of each round), mean and worst over the rounds.
//!
//! `cargo run --release -p tailcut-sim --example fuso_report -- experiments/fuso/net_loss_2.toml`

use std::collections::BTreeMap;
use std::process::ExitCode;
use tailcut_sim::metrics::FlowRecord;
use tailcut_sim::summary::{SizeClass, Summary};
use tailcut_sim::{api, run, Experiment};

fn report(exp: &Experiment) -> Result<(), String> {
    let wall = tailcut_sim::run::WallClock::start();
    let t = run(exp, &mut |_| true).map_err(|e| e.to_string())?;
    let has_query = exp.workload.iter().any(|w| w.name == "query");
    let incast = exp.workload.iter().any(|w| w.name == "incast");
    for s in &exp.schemes {
        let fl: Vec<&FlowRecord> = t
            .flows
            .iter()
            .filter(|f| f.scheme == s.name)
            .filter(|f| {
                if has_query {
                    f.component == "query" && SizeClass::of(f.size_bytes) == SizeClass::Small
                } else {
                    true
                }
            })
            .collect();
        let sum = Summary::over(fl.iter().copied());
        let mut line = format!(
            "{:<28} {:<10} flows {:>5}/{:<5} mean {:>8.3} ms  p99 {:>8.3} ms  timeout frac {:.4}  extra {:.3}",
            exp.name,
            s.name,
            sum.completed,
            sum.flows,
            sum.mean_fct_ns / 1e6,
            sum.p99_fct_ns / 1e6,
            sum.timeout_fraction,
            sum.redundant_bytes_ratio,
        );
        if incast {
            // Rounds start together: group by start time; a round ends with its last flow.
            let mut rounds: BTreeMap<u64, Option<u64>> = BTreeMap::new();
            for f in &fl {
                let e = rounds.entry(f.start_ns).or_insert(Some(0));
                *e = match (*e, f.finish_ns) {
                    (Some(m), Some(x)) => Some(m.max(x - f.start_ns)),
                    _ => None,
                };
            }
            let ct: Vec<u64> = rounds.values().filter_map(|v| *v).collect();
            let m = ct.iter().sum::<u64>() as f64 / ct.len().max(1) as f64;
            let w = ct.iter().max().copied().unwrap_or(0);
            line += &format!(
                "  rounds {}/{} completion mean {:.3} ms max {:.3} ms",
                ct.len(),
                rounds.len(),
                m / 1e6,
                w as f64 / 1e6
            );
        }
        println!("{line}");
    }
    eprintln!("{}: wall {:.1}s", exp.name, wall.seconds());
    Ok(())
}

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: fuso_report EXPERIMENT.toml...");
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
        if let Err(err) = report(&exp) {
            eprintln!("{path}: {err}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
