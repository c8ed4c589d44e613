//! `cloudburst`: CloudBurst (Li et al.), LT-coded messages sprayed over paths at share r until the
//! receiver's STOP; no TCP underneath.

use super::{bad, overlay, params_of, parse, split, to_map, Doc, Param, Scheme};
use crate::{EngineSpec, SchemeSpec, SwitchDefault};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tailcut_proto::cloudburst::CloudBurstConfig;
use tailcut_proto::ConfigError;

pub struct CloudBurst;

/// The `nic_rate` that paces each host at its own NIC's rate (the default).
const NIC_RATE_FROM_HOST: &str = "host";

/// The fastest link rate an experiment may give (the simulator's limit), so LINK_CAP too.
const MAX_NIC_RATE_BPS: u64 = 100_000_000_000_000;

/// The scheme's parameters beyond the endpoint's own: the queues it needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueParams {
    switch_queue_share: f64,
    wrr_weights: [u32; 2],
    host_queue_packets: u32,
}

impl Default for QueueParams {
    fn default() -> Self {
        QueueParams {
            switch_queue_share: 0.01,
            wrr_weights: [4, 1],
            host_queue_packets: 8,
        }
    }
}

const ENDPOINT_DOCS: &[Doc] = &[
    (
        "codec",
        "erasure code: lt (the paper's LT code, 64-bit coefficient set in the header) | raptorq (RFC 6330, symbol id in the header; our extension)",
    ),
    (
        "degree",
        "LT only: { kind = \"systematic_random\" } (default) | { kind = \"systematic\" } | { kind = \"fixed\", d = 5 } | { kind = \"capped_soliton\", max = 5 } | { kind = \"robust_soliton\", c, delta }",
    ),
    ("paths", "NUM_PATHS of Algorithm 1: packets per round, one per path"),
    ("path_mode", "explicit (source-routed path labels 0..paths, as XPath) or ecmp (a pool of `paths` source ports)"),
    ("rate_share", "r of Algorithm 1: rounds start paths x packet / (r x nic_rate) apart"),
    ("nic_rate", "LINK_CAP of Algorithm 1: a rate, or \"host\" for each host's own NIC rate"),
    ("transmission_timeout", "t of Algorithm 1: the sender fails the message without a STOP by then"),
    ("decoder_timeout", "receiver drops a decoder (or a finished message's record) idle this long"),
    ("max_decoders", "concurrent decoders per peer; the least recently active is evicted beyond it"),
    ("class", "packet class (DSCP) of CloudBurst packets"),
    ("symbol_bytes", "source packet size: 1500 - 20 IP - 8 UDP - 16 CloudBurst header (1460 with multi_block = false: Fig. 4's 12 bytes)"),
    ("header_bytes", "IP + UDP + CloudBurst header bytes per packet (40 with multi_block = false)"),
    (
        "carry_bytes",
        "carry real symbol bytes after the header (sockets); off: header only (LT coefficients, RaptorQ 8-byte synthetic symbols)",
    ),
    (
        "multi_block",
        "messages of any size (our extension): blocks of at most 64 packets, each coded and STOPped as the paper's message, a 4-byte block word in every header; false: the paper's Fig. 4 header, and a message over 64 packets fails at once",
    ),
    ("block_window", "blocks of one message coded at once, sharing its rate r x nic_rate"),
    (
        "max_held_bytes",
        "receiver with carry_bytes: bytes of partly received and untaken messages held at most; the oldest are dropped beyond it",
    ),
    (
        "pacing_quantum",
        "rounds may leave up to this late, the rounds due by then together, at the same average rate (deployment: one timer wake-up per quantum on sockets, not per round); 0: Algorithm 1's schedule exactly",
    ),
    (
        "stop_repeat_gap",
        "a finished block's STOP is repeated for a further packet at most once per this (deployment: a receiver behind on a backlog of surplus packets); 0: a STOP for every further packet",
    ),
    (
        "exclude_host_delay",
        "the sender's t counts without its host's own delay, the time its thread woke late past its timers, by at most t since the message's start or latest STOP (deployment: a descheduled sender does not fail a message it could not send); false: Algorithm 1's t",
    ),
];

const QUEUE_DOCS: &[Doc] = &[
    (
        "switch_queue_share",
        "CloudBurst class limit as a share of the port buffer (>= 2 packets), used when the experiment lists no classes",
    ),
    ("wrr_weights", "WRR weights [background, CloudBurst] of that default"),
    (
        "host_queue_packets",
        "host NIC: CloudBurst packets served first from a queue of this many packets, the excess dropped at the host (0 = host NIC unchanged); used when the experiment lists no host_classes",
    ),
];

impl Scheme for CloudBurst {
    fn name(&self) -> &'static str {
        "cloudburst"
    }

    fn description(&self) -> &'static str {
        "CloudBurst (Li et al.): LT-coded messages sprayed over paths at share r until the receiver's STOP"
    }

    fn params(&self) -> Vec<Param> {
        let mut endpoint = to_map(&CloudBurstConfig::default());
        endpoint.insert("nic_rate".into(), NIC_RATE_FROM_HOST.into());
        let mut all = params_of(&endpoint, ENDPOINT_DOCS);
        all.extend(params_of(&to_map(&QueueParams::default()), QUEUE_DOCS));
        all
    }

    fn resolve_filled(
        &self,
        params: &Map<String, Value>,
    ) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
        let (queues, mut endpoint) = split(params, |k| QUEUE_DOCS.iter().any(|(n, _)| *n == k));
        // `nic_rate = "host"` spells the default out: each host's own NIC rate.
        if endpoint.get("nic_rate").and_then(Value::as_str) == Some(NIC_RATE_FROM_HOST) {
            endpoint.remove("nic_rate");
        }
        let nic_rate_from_host = !endpoint.contains_key("nic_rate");
        // Without blocks the packet sizes default to the paper's, for Fig. 4's shorter header.
        let base = match endpoint.get("multi_block") {
            Some(Value::Bool(false)) => CloudBurstConfig::paper(),
            _ => CloudBurstConfig::default(),
        };
        let cfg: CloudBurstConfig = parse(overlay(to_map(&base), endpoint))?;
        let q: QueueParams = parse(overlay(to_map(&QueueParams::default()), queues))?;
        cfg.validate().map_err(|e| e.at("params"))?;
        // A NIC rate past any link's (e.g. 2^63 bps) paces rounds 0 ns apart: refuse it like a link rate.
        if cfg.nic_rate.0 == 0 || cfg.nic_rate.0 > MAX_NIC_RATE_BPS {
            return bad(
                "nic_rate",
                format!("must be in 1bps..=100Tbps, got {} bps", cfg.nic_rate.0),
            );
        }
        if !(q.switch_queue_share > 0.0 && q.switch_queue_share <= 1.0) {
            return bad("switch_queue_share", "must be in (0, 1]");
        }
        if q.wrr_weights.contains(&0) {
            return bad("wrr_weights", "weights must be >= 1");
        }
        if cfg.class == 0 {
            return bad("class", "class 0 is the background class");
        }
        let mut filled = to_map(&cfg);
        if nic_rate_from_host {
            filled.insert("nic_rate".into(), NIC_RATE_FROM_HOST.into());
        }
        filled.extend(to_map(&q));
        let switch = SwitchDefault::CloudBurstClass {
            class: cfg.class,
            share: q.switch_queue_share,
            wrr_weights: q.wrr_weights,
            host_queue_packets: q.host_queue_packets,
        };
        let spec = SchemeSpec {
            switch,
            ..SchemeSpec::of(EngineSpec::CloudBurst {
                cfg,
                nic_rate_from_host,
            })
        };
        Ok((spec, filled))
    }
}
