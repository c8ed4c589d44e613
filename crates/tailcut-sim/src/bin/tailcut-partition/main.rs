//! How far one experiment could run on many cores (issue #41): runs an experiment file as always,
//! counting which partition owns every event and which lookahead window it falls in, and prints the
//! speed-up bound of a conservative parallel engine on those partitions (`tailcut_sim::partition`).
//!
//! `cargo run --profile perf -p tailcut-sim --bin tailcut-partition -- [OPTIONS] FILE.toml...`
//!
//! Options:
//!   --partitions LIST    comma-separated maps, all counted in one run: `pod` (fat-tree: a pod each,
//!                        cores round-robin), `pod+core` (the cores as k/2 partitions of their own),
//!                        `leaf` (leaf-spine: a leaf each, spines round-robin), `N` (N parts of the
//!                        graph partitioner). Default: `pod,pod+core` on a fat-tree, `leaf` on a
//!                        leaf-spine, `16` otherwise.
//!   --workers LIST       worker counts (default 8,16,32,64; the number of partitions is added)
//!   --scheme NAME        only this scheme (default: every scheme of the file, one run each)
//!   --barrier-cost E     charge each barrier E events' worth of time (default 0)
//!   --markdown           also print one table row per map (docs/performance.md)
//!   --digest             print each scheme's digest line as `tailcut-flowdigest` does (nothing else):
//!                        a counted run's results must be the recorded ones (`scripts/partition-bound.sh
//!                        identity` compares them with tests/identity/digests.txt)
//!   --quiet              no progress on stderr
//!
//! With `--digest` a map the topology cannot have (`pod` on a leaf-spine, more parts than hosts) is
//! left out, so any file runs counted.

mod partition;
#[cfg(test)]
mod tests;

use partition::{Counter, MapKind, MapReport, PartitionMap};
use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use tailcut_sim::api;
use tailcut_sim::net::Network;
use tailcut_sim::run::{self, Tables, WallClock};
use tailcut_sim::topo::TopologyConfig;

struct Options {
    partitions: Option<Vec<MapKind>>,
    workers: Vec<u32>,
    scheme: Option<String>,
    barrier_cost: f64,
    markdown: bool,
    digest: bool,
    quiet: bool,
    files: Vec<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        partitions: None,
        workers: vec![8, 16, 32, 64],
        scheme: None,
        barrier_cost: 0.0,
        markdown: false,
        digest: false,
        quiet: false,
        files: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name}: give a value"));
        match a.as_str() {
            "--partitions" => {
                let v = value("--partitions")?;
                o.partitions = Some(v.split(',').map(str::parse).collect::<Result<_, _>>()?);
            }
            "--workers" => {
                let v = value("--workers")?;
                o.workers = v
                    .split(',')
                    .map(|w| match w.parse::<u32>() {
                        Ok(n) if n >= 1 => Ok(n),
                        _ => Err(format!("--workers: '{w}' is not a number >= 1")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--scheme" => o.scheme = Some(value("--scheme")?),
            "--barrier-cost" => {
                let v = value("--barrier-cost")?;
                o.barrier_cost = match v.parse::<f64>() {
                    Ok(c) if c >= 0.0 && c.is_finite() => c,
                    _ => return Err(format!("--barrier-cost: '{v}' is not a number >= 0")),
                };
            }
            "--markdown" => o.markdown = true,
            "--digest" => o.digest = true,
            "--quiet" => o.quiet = true,
            f if f.starts_with("--") => return Err(format!("unknown option {f}")),
            f => o.files.push(f.to_string()),
        }
    }
    if o.files.is_empty() {
        return Err("give an experiment file".into());
    }
    Ok(o)
}

fn default_maps(topo: &TopologyConfig) -> Vec<MapKind> {
    match topo {
        TopologyConfig::FatTree(_) => vec![MapKind::Pod, MapKind::PodCore],
        TopologyConfig::LeafSpine(_) | TopologyConfig::CloudburstTestbed(_) => vec![MapKind::Leaf],
        _ => vec![MapKind::Parts(16)],
    }
}

fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

fn print_report(out: &mut impl Write, name: &str, scheme: &str, r: &MapReport, barrier_cost: f64) {
    let lookahead = r.lookahead.map_or("none (nothing cut)".into(), |d| d.to_string());
    let mean = r.part_totals.iter().sum::<u64>() as f64 / f64::from(r.parts);
    let min = r.part_totals.iter().copied().min().unwrap_or(0) as f64;
    let _ = writeln!(
        out,
        "{name} {scheme} map {}: {} partitions, {} of {} links cut, lookahead {lookahead}",
        r.name, r.parts, r.cut_links, r.links
    );
    let _ = writeln!(
        out,
        "  events {}  (switches {}, hosts {}, faults {})  windows spanned {}  barriers {}  events per barrier {:.0}",
        r.events,
        pct(r.switch_events as f64 / r.events.max(1) as f64),
        pct((r.events - r.switch_events - r.global_events) as f64 / r.events.max(1) as f64),
        r.global_events,
        r.windows_spanned,
        r.barriers,
        r.events as f64 / r.barriers.max(1) as f64
    );
    let _ = writeln!(
        out,
        "  packet arrivals {}  over a cut {} ({})  partition events: largest {} of all, largest/mean {:.3}, smallest/mean {:.3}",
        r.arrivals,
        r.cut_packets,
        pct(r.cut_packets as f64 / r.arrivals.max(1) as f64),
        pct(r.largest_part_share),
        r.largest_part_share * r.events as f64 / mean.max(1.0),
        min / mean.max(1.0)
    );
    if barrier_cost > 0.0 {
        let _ = writeln!(out, "  (each barrier charged {barrier_cost} events)");
    }
    let _ = writeln!(
        out,
        "  {:>7}  {:>12}  {:>16}  {:>16}  {:>18}",
        "workers", "static LPT", "per-window ideal", "LPT imbalance", "events/barrier/worker"
    );
    for b in &r.bounds {
        let _ = writeln!(
            out,
            "  {:>7}  {:>11.2}x  {:>15.2}x  {:>16.3}  {:>18.0}",
            b.workers,
            b.static_lpt,
            b.ideal,
            b.static_imbalance,
            r.events as f64 / r.barriers.max(1) as f64 / f64::from(b.workers.min(r.parts))
        );
    }
}

fn markdown_row(out: &mut impl Write, name: &str, workers: &[u32], r: &MapReport) {
    let cell = |w: u32| {
        r.bounds
            .iter()
            .find(|b| b.workers == w)
            .map_or("".into(), |b| format!("{:.2} / {:.2}", b.static_lpt, b.ideal))
    };
    let bounds: Vec<String> = workers.iter().map(|&w| cell(w)).collect();
    let _ = writeln!(
        out,
        "| {name} | {} | {} | {} | {} | {} / {} | {} | {} | {} |",
        r.name,
        r.parts,
        r.lookahead.map_or("-".into(), |d| d.to_string()),
        r.events,
        r.windows_spanned,
        r.barriers,
        pct(r.cut_packets as f64 / r.arrivals.max(1) as f64),
        bounds.join(" | "),
        cell(r.parts)
    );
}

/// FNV-1a, 64 bit, over each record's `Debug` line: `tailcut-flowdigest`'s digest, line for line.
fn digest_line(path: &str, tables: &Tables) -> String {
    let mut out = String::new();
    for r in &tables.runs {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |line: &str| {
            for b in line.as_bytes() {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        let (mut flows, mut finished) = (0u64, 0u64);
        for f in tables.flows.iter().filter(|f| f.scheme == r.scheme) {
            flows += 1;
            finished += u64::from(f.finish_ns.is_some());
            eat(&format!("{f:?}\n"));
        }
        for p in tables.ports.iter().filter(|p| p.scheme == r.scheme) {
            eat(&format!("{p:?}\n"));
        }
        let _ = writeln!(
            out,
            "{path} {} flows={flows} finished={finished} digest={h:016x}",
            r.scheme
        );
    }
    out
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tailcut-partition: {e}\nusage: tailcut-partition [--partitions pod,pod+core,leaf,N] [--workers 8,16,32,64] [--scheme NAME] [--barrier-cost E] [--markdown] [--quiet] FILE.toml...");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    for path in &o.files {
        let exp = match api::load_toml(path) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let prep = match run::prepare(&exp) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        };
        let kinds = o
            .partitions
            .clone()
            .unwrap_or_else(|| default_maps(&exp.topology));
        let mut rows = Vec::new();
        for (k, s) in prep.schemes.iter().enumerate() {
            if o.scheme.as_ref().is_some_and(|n| *n != s.name) {
                continue;
            }
            let net = Network::unrouted(&s.topology, prep.exp.seed);
            let built = kinds
                .iter()
                .map(|kind| PartitionMap::build(kind, &exp.topology, &net));
            let maps = if o.digest {
                built.filter_map(Result::ok).collect()
            } else {
                match built.collect::<Result<Vec<_>, _>>() {
                    Ok(m) => m,
                    Err(e) => {
                        eprintln!("{path}: {e}");
                        return ExitCode::from(2);
                    }
                }
            };
            let mut counter = Counter::new(&net, maps, &s.faults);
            let wall = WallClock::start();
            let mut shown = 0;
            let quiet = o.quiet;
            let mut progress = |f: f64| {
                let tenth = (f * 10.0) as i32;
                if !quiet && tenth > shown {
                    shown = tenth;
                    eprintln!("{path} {}: {}% ({:.0} s)", s.name, tenth * 10, wall.seconds());
                }
                true
            };
            let tables = match run::run_counted(&prep, k, &mut counter, &mut progress) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{path}: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if o.digest {
                let _ = write!(out, "{}", digest_line(path, &tables));
                continue;
            }
            let r = &tables.runs[0];
            let _ = writeln!(
                out,
                "{} {}: events {}  packet-hops {}  flows {}/{}  sim {:.3}s  wall {:.1}s (counted run)",
                exp.name,
                r.scheme,
                r.events,
                r.packet_hops,
                r.flows_finished,
                r.flows_started,
                r.sim_end_ns as f64 * 1e-9,
                wall.seconds()
            );
            for rep in counter.reports(&o.workers, o.barrier_cost) {
                print_report(&mut out, &exp.name, &r.scheme, &rep, o.barrier_cost);
                rows.push((format!("{} ({})", exp.name, r.scheme), rep));
            }
        }
        if o.markdown {
            let ws: Vec<String> = o.workers.iter().map(|w| format!("W = {w}")).collect();
            let _ = writeln!(
                out,
                "\n| file | map | partitions | lookahead | events | windows spanned / barriers | cut packets | {} | W = partitions |",
                ws.join(" | ")
            );
            let _ = writeln!(
                out,
                "|---|---|---:|---:|---:|---:|---:|{}---:|",
                "---:|".repeat(ws.len())
            );
            for (name, rep) in &rows {
                markdown_row(&mut out, name, &o.workers, rep);
            }
        }
    }
    ExitCode::SUCCESS
}
