//! `dcquic`: DCQUIC, QUIC (quinn-proto) with RPCs as streams, MPS by task size, pluggable congestion
//! control and proactive connection migration. Its baselines are `tls13.rs` and `reconnect.rs`.

use super::{params_of, parse, to_map, Doc, Param, Scheme};
use crate::{EngineSpec, SchemeSpec};
use serde_json::{Map, Value};
use tailcut_proto::dcquic::DcquicConfig;
use tailcut_proto::ConfigError;

pub struct Dcquic;

const DOCS: &[Doc] = &[
    (
        "congestion_control",
        "{ kind = \"cubic\" } | { kind = \"new_reno\" } (quinn-proto's) | { kind = \"dctcp\", g = 0.0625 } (ECN-fraction, needs aqm = ecn)",
    ),
    (
        "initial_window_packets",
        "initial congestion window, packets of the connection's MPS (RFC 9002: 10), capped by initial_window_limit",
    ),
    (
        "initial_window_limit",
        "RFC 9002 7.2: initial window = min(packets x MPS, max(this, 2 x MPS)); default 14720B (18KB at a 9KB MPS)",
    ),
    (
        "ack_frequency",
        "ask the peer for ack_delay / ack_eliciting_threshold (ACK-frequency extension); off = RFC 9000 (ACK every 2nd packet, else after 25ms)",
    ),
    ("ack_delay", "longest a receiver holds an ACK (datacenter default 1ms, quinn's floor; RFC 9000: 25ms)"),
    (
        "ack_eliciting_threshold",
        "ack-eliciting packets a receiver may take before it must ACK (RFC 9000: 1; 0 = every packet)",
    ),
    ("ecn", "send ECT(0) and react to CE counts (RFC 9000 13.4)"),
    ("mps", "maximum packet size negotiation (Sec. 4.2): the table of the mps.* keys below"),
    ("mps.negotiate", "choose the maximum packet size by task size (Sec. 4.2); off = mps.base"),
    ("mps.base", "MPS without negotiation (paper: 1252B)"),
    ("mps.small_task", "MPS for tasks below mps.large_task (paper: 9KB)"),
    ("mps.large_task_mps", "MPS for tasks of mps.large_task or more (paper: 5KB)"),
    ("mps.large_task", "task size from which a task is large (paper: 1MB)"),
    ("socket_buffer", "socket buffer: stream and connection receive windows and the send buffer"),
    ("initial_rtt", "RTT before the first sample (RFC 9002: 333ms; datacenter default 1ms)"),
    ("header_bytes", "IPv4 + UDP header bytes per datagram"),
    ("max_streams", "concurrent streams per direction"),
    ("migration", "proactive connection migration (Sec. 3.4.1): the table of the migration.* keys below"),
    ("migration.enabled", "proactive connection migration at the client (Sec. 3.4.1)"),
    ("migration.long_window", "W: long-term window of streams (paper: 50)"),
    ("migration.short_window", "w: short-term window of streams (paper: 10)"),
    ("migration.alpha", "alpha: fluctuation threshold on the per-byte completion-time ratio (paper: 2)"),
    (
        "migration.check_interval",
        "how often in-flight RPCs are checked (their elapsed time is a lower bound on completion)",
    ),
    (
        "migration.min_stall",
        "not in the paper: fire only when the short window's streams also took this long on average (0 = the paper's rule; on real hosts, above the host's scheduling stalls)",
    ),
    (
        "migration.hold_down",
        "not in the paper: after migrating away from a path, do not migrate back onto it within this time; the next path not held down is taken, none if all are (0 = the paper's next path; with two NICs that is the path just left)",
    ),
    (
        "migration.min_history",
        "not in the paper: streams finished on the current path before the rule may fire (0 = the paper's rule, W + w samples with in-flight streams counted)",
    ),
    (
        "migration.exclude_host_delay",
        "not in the paper: streams count without the client host's own delay while they were open (on sockets: its thread's lateness past its timer deadlines), so a slow host is not taken for a slow path (false = the paper's rule; the simulator's hosts have none)",
    ),
    (
        "zero_rtt",
        "0-RTT resumption: a client host keeps session tickets per server (deterministic store) and sends its requests with the first flight of later connections",
    ),
    (
        "tail_fec",
        "not in the paper: after each message, an XOR parity of its tail in QUIC DATAGRAM frames; a receiver missing at most one MTU of the tail rebuilds it and delivers at once (QUIC still retransmits)",
    ),
    (
        "tail_fec_packets",
        "k: the protected tail is the message's last k chunks of one path MTU (the parity is one MTU whatever k; 4 covers the last packets QUIC's 3-packet threshold cannot declare lost, plus one)",
    ),
];

/// Deep overlay: tables merge key by key (`mps = { negotiate = false }` keeps the other MPS keys),
/// anything else replaces.
fn deep_overlay(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => deep_overlay(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Scheme for Dcquic {
    fn name(&self) -> &'static str {
        "dcquic"
    }

    fn description(&self) -> &'static str {
        "DCQUIC: QUIC (quinn-proto) with RPCs as streams, MPS by task size, pluggable CC, proactive connection migration"
    }

    fn params(&self) -> Vec<Param> {
        params_of(&to_map(&DcquicConfig::default()), DOCS)
    }

    fn resolve_filled(
        &self,
        params: &Map<String, Value>,
    ) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
        let mut m = to_map(&DcquicConfig::default());
        deep_overlay(&mut m, params);
        let cfg: DcquicConfig = parse(m)?;
        cfg.validate().map_err(|e| e.at("params"))?;
        let filled = to_map(&cfg);
        Ok((SchemeSpec::of(EngineSpec::Dcquic(cfg)), filled))
    }
}
