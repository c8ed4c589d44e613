//! The `tailcut-testbed` command line: its subcommands, shared by the binary and by the Python
//! package (`tailcut testbed`, `tailcut-tracksd`, which run it inside the extension module).
//!
//! ```text
//! tailcut-testbed run FILE --out DIR [--overwrite] [--allow-invalid-timing]
//!                                                    run an experiment file's workload on real hosts;
//!                                                    exit 3 when its timing was not kept (docs/testbed.md)
//! tailcut-testbed bench [--rate MBIT] [--seconds S]  forwarding capacity and lateness of this machine
//! tailcut-testbed hold [--hosts N] [--dctcp]         start hosts with a `sleep` in each (and the BPF
//!                                                    DCTCP) and wait (used by the leak tests: kill it,
//!                                                    nothing remains)
//! tailcut-testbed doctor                             what the real-network tools need: each check, who
//!                                                    needs it, how to fix it; exit 1 if the testbed cannot run
//! tailcut-testbed agent                              the workload agent (started inside a host)
//! tailcut-testbed tracksd [--check | --uninstall] CONFIG.toml
//!                                                    the T-RACKs agent, as `tailcut-tracksd` (the
//!                                                    agent's realnet tests start it in a host this way)
//! ```

use crate::SelfCommand;

pub const USAGE: &str = "usage: tailcut-testbed run FILE --out DIR [--overwrite] [--allow-invalid-timing] | bench [--rate MBIT] [--seconds S] | hold [--hosts N] [--dctcp] | doctor | agent | tracksd [--check | --uninstall] CONFIG.toml";

/// Runs the subcommand `args[0]` and returns the process's exit code; every error ends as one line on
/// stderr. `me` starts the agents in the hosts.
pub fn main(args: &[String], me: &SelfCommand) -> u8 {
    let result = match args.first().map(String::as_str) {
        Some("run") => match crate::experiment::cli(&args[1..], me) {
            Ok(true) => Ok(()),
            // The outputs are written; the run did not keep its timing (warned already).
            Ok(false) => return crate::timing::EXIT_INVALID_TIMING,
            Err(e) => Err(e.to_string()),
        },
        Some("bench") => crate::cli::bench(&args[1..]).map_err(|e| e.to_string()),
        Some("hold") => crate::cli::hold(&args[1..]).map_err(|e| e.to_string()),
        Some("doctor") => crate::doctor::run(&args[1..]),
        Some("agent") => crate::agent::main(),
        // First thing, before any thread: it blocks the termination signals.
        Some("tracksd") => tailcut_tracksd::cli::run(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("tailcut-testbed: {e}");
            1
        }
    }
}
