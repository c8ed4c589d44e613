//! `tailcut-testbed`: real Linux hosts through an emulated fabric.
//!
//! ```text
//! tailcut-testbed run FILE --out DIR [--overwrite] [--allow-invalid-timing]
//!                                                    run an experiment file's workload on real hosts;
//!                                                    exit 3 when its timing was not kept (docs/testbed.md)
//! tailcut-testbed bench [--rate MBIT] [--seconds S]  forwarding capacity and lateness of this machine
//! tailcut-testbed hold [--hosts N] [--dctcp]         start hosts with a `sleep` in each (and the BPF
//!                                                    DCTCP) and wait (used by the leak tests: kill it,
//!                                                    nothing remains)
//! tailcut-testbed agent                              the workload agent (started inside a host)
//! tailcut-testbed tracksd [--check | --uninstall] CONFIG.toml
//!                                                    the T-RACKs agent, as `tailcut-tracksd` (the
//!                                                    agent's realnet tests start it in a host this way)
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every subcommand's error ends as one line on stderr: here only its text matters.
    let result = match args.first().map(String::as_str) {
        Some("run") => match tailcut_testbed::experiment::cli(&args[1..]) {
            Ok(true) => Ok(()),
            // The outputs are written; the run did not keep its timing (warned already).
            Ok(false) => return ExitCode::from(tailcut_testbed::timing::EXIT_INVALID_TIMING),
            Err(e) => Err(e.to_string()),
        },
        Some("bench") => tailcut_testbed::cli::bench(&args[1..]).map_err(|e| e.to_string()),
        Some("hold") => tailcut_testbed::cli::hold(&args[1..]).map_err(|e| e.to_string()),
        Some("agent") => tailcut_testbed::agent::main(),
        // First thing, before any thread: it blocks the termination signals.
        Some("tracksd") => tailcut_tracksd::cli::run(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tailcut-testbed: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: tailcut-testbed run FILE --out DIR [--overwrite] [--allow-invalid-timing] | bench [--rate MBIT] [--seconds S] | hold [--hosts N] [--dctcp] | agent | tracksd [--check | --uninstall] CONFIG.toml";
