//! The agent's command line, `tailcut-tracksd [--check | --uninstall] CONFIG.toml`: the
//! `tailcut-tracksd` binary is this, and the testbed's binary runs it as `tailcut-testbed tracksd ...`
//! (its tests start the agent in a host that way: a crate's tests can only start its own binaries).

use crate::bpf_tap::{BpfTap, BpfTapConfig};
use crate::config::{AgentConfig, Backend};
use crate::inject::Injector;
use crate::nfq_tap::NfqTap;
use crate::rules::Rules;
use crate::Agent;
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::tracks::Tracks;
use tailcut_proto::ConfigError;

pub const USAGE: &str = "usage: tailcut-tracksd [--check | --uninstall] CONFIG.toml";

fn rules_of(cfg: &AgentConfig) -> Rules {
    Rules {
        interface: cfg.interface.clone(),
        queue: cfg.queue,
        gamma_bytes: cfg.tracks.gamma.map(|b| b.0),
        iptables: cfg.iptables.clone(),
        ip6tables: cfg.ip6tables.clone(),
    }
}

/// The local senders' SACK setting when the configuration does not say. An unreadable setting is the
/// configuration's error: giving `sack` is the fix.
fn host_sack() -> Result<bool, ConfigError> {
    let v = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_sack").map_err(|e| {
        ConfigError::new(
            "sack",
            format!("not configured and /proc/sys/net/ipv4/tcp_sack unreadable: {e}"),
        )
    })?;
    Ok(v.trim() != "0")
}

/// Runs the agent with the command line `args` (without the program name) until a termination signal,
/// or checks or uninstalls (see the module). Blocks the termination signals first: call it before
/// starting any thread. The error is the agent's last words, one line for the operator: the
/// configuration's (naming the file, then the field) and the operating system's alike.
pub fn run(args: &[String]) -> Result<(), String> {
    let (mode, path) = match args {
        [p] if !p.starts_with('-') => ("run", p),
        [m, p] if m == "--check" || m == "--uninstall" => (m.as_str(), p),
        _ => return Err(USAGE.into()),
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let cfg = AgentConfig::from_toml(&text).map_err(|e| format!("{path}: {e}"))?;
    match mode {
        "--check" => return Ok(()),
        "--uninstall" => return rules_of(&cfg).remove().map_err(|e| e.to_string()),
        _ => {}
    }
    // Before anything else: a signal must find the mask set so the loop can remove the rules.
    let signals = tailcut_sys::signal::TermSignals::block().map_err(|e| format!("signalfd: {e}"))?;
    let mut tracks = cfg.tracks.clone();
    tracks.sack = match cfg.sack {
        Some(s) => s,
        None => host_sack().map_err(|e| format!("{path}: {e}"))?,
    };
    let shim = Tracks::new(tracks, stream(cfg.seed, Stream::Shim, 0));
    let injector = Injector::new().map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    // The tap (and its rules or links) is dropped when `agent` goes out of scope, on success and on
    // error.
    let result = match cfg.backend {
        Backend::Nfqueue => {
            let tap = NfqTap::open(rules_of(&cfg), cfg.queue_max_len).map_err(|e| e.to_string())?;
            Agent::new(tap, shim, injector, cfg.report_every).run(signals, &mut out)
        }
        Backend::Bpf => {
            let tap = BpfTap::open(&BpfTapConfig {
                interface: cfg.interface.clone(),
                gamma_bytes: cfg.tracks.gamma.map(|b| b.0),
                pass_sack_dupacks: cfg.tracks.pass_sack_dupacks,
                max_flows: u32::try_from(cfg.tracks.max_flows).unwrap_or(u32::MAX),
                ring_bytes: u32::try_from(cfg.ring_bytes.0).unwrap_or(u32::MAX),
            })?;
            Agent::new(tap, shim, injector, cfg.report_every).run(signals, &mut out)
        }
    };
    result.map_err(|e| format!("agent loop: {e}"))
}
