//! Digests of the result tables of experiment files, for checking that a refactoring changes no result.
//!
//! `cargo run --release -p tailcut-sim --bin tailcut-flowdigest -- [--dump DIR] FILE.toml...`
//!
//! For each file and scheme it prints one line: the number of flows, how many finished, and a 64-bit
//! FNV-1a digest of every flow record and every port record in the order the simulator produced them
//! (all fields, full precision). Two builds that print the same lines produced the same tables. With
//! `--dump DIR` it also writes the records as text (`DIR/<file stem>.txt`), so a difference can be
//! located with `diff`. `scripts/identity.sh` runs it over the checked-in experiment files.
//!
//! With `--partitions LIST` (as `tailcut-partition` takes it) every scheme runs counted, as
//! `tailcut-partition` runs it (`run::run_counted`, issue #41): its digests must be the recorded ones
//! (`scripts/partition-bound.sh identity`).

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use tailcut_sim::api;
use tailcut_sim::net::Network;
use tailcut_sim::partition::{MapKind, PartitionMap};
use tailcut_sim::run::{self, run, RunError, Tables};

/// FNV-1a, 64 bit: stable across Rust versions and platforms, unlike the standard hasher.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Every scheme run counted under the maps `kinds` (a map a topology cannot have is left out).
fn run_all_counted(exp: &tailcut_sim::Experiment, kinds: &[MapKind]) -> Result<Tables, RunError> {
    let prep = run::prepare(exp)?;
    let mut tables = Tables {
        flows: Vec::new(),
        ports: Vec::new(),
        runs: Vec::new(),
    };
    for (k, s) in prep.schemes.iter().enumerate() {
        let net = Network::unrouted(&s.topology, prep.exp.seed);
        let maps: Vec<PartitionMap> = kinds
            .iter()
            .filter_map(|kind| PartitionMap::build(kind, &exp.topology, &net).ok())
            .collect();
        let (t, _) = run::run_counted(&prep, k, maps, &mut |_| true)?;
        tables.flows.extend(t.flows);
        tables.ports.extend(t.ports);
        tables.runs.extend(t.runs);
    }
    Ok(tables)
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut dump: Option<String> = None;
    let mut partitions: Option<Vec<MapKind>> = None;
    if args.first().map(String::as_str) == Some("--partitions") {
        let parsed = args
            .get(1)
            .map(|v| v.split(',').map(str::parse).collect::<Result<Vec<_>, _>>());
        match parsed {
            Some(Ok(kinds)) => partitions = Some(kinds),
            Some(Err(e)) => {
                eprintln!("--partitions: {e}");
                return ExitCode::from(2);
            }
            None => {
                eprintln!("usage: tailcut-flowdigest [--partitions LIST] [--dump DIR] EXPERIMENT.toml...");
                return ExitCode::from(2);
            }
        }
        args.drain(..2);
    }
    if args.first().map(String::as_str) == Some("--dump") {
        if args.len() < 2 {
            eprintln!("usage: tailcut-flowdigest [--dump DIR] EXPERIMENT.toml...");
            return ExitCode::from(2);
        }
        dump = Some(args.remove(1));
        args.remove(0);
    }
    if args.is_empty() {
        eprintln!("usage: tailcut-flowdigest [--dump DIR] EXPERIMENT.toml...");
        return ExitCode::from(2);
    }
    let mut out = std::io::stdout().lock();
    for path in args {
        let exp = match api::load_toml(&path) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let result = match &partitions {
            None => run(&exp, &mut |_| true),
            Some(kinds) => run_all_counted(&exp, kinds),
        };
        let tables = match result {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let mut text = String::new();
        for r in &tables.runs {
            let mut h = Fnv::new();
            let mut flows = 0u64;
            let mut finished = 0u64;
            let mut line = String::new();
            for f in tables.flows.iter().filter(|f| f.scheme == r.scheme) {
                flows += 1;
                finished += u64::from(f.finish_ns.is_some());
                line.clear();
                let _ = writeln!(line, "{f:?}");
                h.write(line.as_bytes());
                text.push_str(&line);
            }
            for p in tables.ports.iter().filter(|p| p.scheme == r.scheme) {
                line.clear();
                let _ = writeln!(line, "{p:?}");
                h.write(line.as_bytes());
                text.push_str(&line);
            }
            if writeln!(
                out,
                "{path} {} flows={flows} finished={finished} digest={:016x}",
                r.scheme, h.0
            )
            .is_err()
            {
                return ExitCode::SUCCESS;
            }
        }
        if let Some(dir) = &dump {
            let stem = path.trim_end_matches(".toml").replace('/', "_");
            let file = format!("{dir}/{stem}.txt");
            if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, &text)) {
                eprintln!("{file}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
