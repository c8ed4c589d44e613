//! Digests of the result tables of experiment files, for checking that a refactoring changes no result.
//!
//! `cargo run --release -p tailcut-sim --bin tailcut-flowdigest -- [--dump DIR] FILE.toml...`
//!
//! For each file and scheme it prints one line: the number of flows, how many finished, and a 64-bit
//! FNV-1a digest of every flow record and every port record in the order the simulator produced them
//! (all fields, full precision). Two builds that print the same lines produced the same tables. With
//! `--dump DIR` it also writes the records as text (`DIR/<file stem>.txt`), so a difference can be
//! located with `diff`. `scripts/identity.sh` runs it over the checked-in experiment files.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use tailcut_sim::api;
use tailcut_sim::run::run;

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

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut dump: Option<String> = None;
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
        let tables = match run(&exp, &mut |_| true) {
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
