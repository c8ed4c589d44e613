//! The T-RACKs host shim (`shim = { kind = "tracks", ... }` on a scheme): hypervisor-level recovery of
//! tail losses for the tenants' unchanged TCP. See docs/tracks.md.

use super::{params_of, to_map, Doc, SchemeInfo};
use crate::EngineSpec;
use tailcut_proto::tracks::TracksConfig;
use tailcut_proto::ConfigError;

const DOCS: &[Doc] = &[
    ("alpha", "RTTs without a new ACK before spoofing: beta = alpha x RTT + rand(0..RTT) (paper: 10)"),
    ("phi", "the senders' dupACK threshold: the first burst spoofs phi minus the dupACKs already seen"),
    ("gamma", "acknowledged bytes after which a flow is long-lived and no longer tracked; \"inf\" = track every flow"),
    ("tick", "period of the timer that scans the active small flows (testbed: 1ms)"),
    ("fixed_beta", "a fixed beta instead of alpha x RTT + rand(RTT) (testbed: 4ms); absent = computed"),
    ("beta_floor", "lower bound of the computed beta"),
    ("initial_rtt", "RTT assumed until the first sample (TCP timestamps echo)"),
    ("min_rto", "the senders' minimum RTO (the shim cannot read it): spoofing stops when the next tick would reach it"),
    ("idle_timeout", "a flow with no outgoing data this long is forgotten"),
    (
        "fake_sack",
        "spoofed ACKs of SACK flows carry the paper's fake SACK block so that RFC 6675 senders count them (Sec. IV-C); whether a flow uses SACK is taken from the scheme's TCP",
    ),
    ("sack_gap_bytes", "bytes between the last ACK and the left edge of the fake SACK block (paper: 40)"),
    ("max_flows", "most flows in the table; a new one evicts the least recently active (0 = unbounded, the simulator's default)"),
    (
        "rtt_source",
        "\"timestamps\": RTT from the timestamp echo read as microseconds (the simulator's TCP); \"seq_ack\": the shim times one segment at a time (real hosts)",
    ),
    (
        "fake_sack_block",
        "\"growing\": the k-th spoofed ACK claims k+1 segments (the simulator's default); \"highest\": only the highest outstanding segment, one lie per episode",
    ),
    ("skip_sack_flows", "never spoof for flows that use SACK (real Linux recovers them with RACK/TLP); false = the paper"),
    ("pass_sack_dupacks", "let dupACKs carrying SACK blocks through during a recovery (real Linux: they may answer a TLP); false = the paper"),
];

pub fn info() -> SchemeInfo {
    SchemeInfo {
        name: "tracks",
        kind: "shim",
        description: "T-RACKs (host shim, shim = { kind = \"tracks\" }): spoofs duplicate ACKs for small flows whose ACKs stall, so the unchanged TCP fast-retransmits instead of timing out",
        params: params_of(&to_map(&TracksConfig::default()), DOCS),
    }
}

/// The shim's configuration for hosts whose engines are `transport`'s. A hypervisor learns whether the
/// senders use SACK from their SYN options; our packets carry none, so it comes from the transport (off
/// for engines that are not TCP). Error paths are relative to the `shim` table.
pub fn resolve(c: &TracksConfig, engine: &EngineSpec) -> Result<TracksConfig, ConfigError> {
    c.validate()?;
    Ok(TracksConfig {
        sack: engine.tcp().is_some_and(|c| c.sack),
        ..c.clone()
    })
}
