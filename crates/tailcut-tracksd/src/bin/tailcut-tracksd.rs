//! `tailcut-tracksd CONFIG.toml`: runs the T-RACKs agent until SIGINT/SIGTERM/SIGHUP, printing
//! counters as JSON lines on stdout. `--check CONFIG.toml` validates the file only; `--uninstall
//! CONFIG.toml` removes the iptables rules a killed NFQUEUE agent left behind (the BPF backend
//! leaves nothing: its tcx links die with the process).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match tailcut_tracksd::cli::run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tailcut-tracksd: {e}");
            ExitCode::FAILURE
        }
    }
}
