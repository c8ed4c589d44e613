//! Per-flow and per-port records, and the conservation check (their summary: `summary`).

use crate::net::PortCounters;
use serde::Serialize;
use std::collections::BTreeMap;
use tailcut_proto::MessageStats;

/// Propagation and rates along one path, for the ideal FCT.
#[derive(Clone, Copy, Debug)]
pub struct PathInfo {
    pub delay_ns: u64,
    pub bottleneck_bps: u64,
    /// Sum over hops of 1 / rate (seconds per bit).
    pub inv_rate_sum: f64,
    pub hops: u32,
}

/// One flow's outcome.
#[derive(Clone, Debug)]
pub struct FlowRecord {
    pub flow_id: u64,
    pub scheme: String,
    pub component: String,
    pub src: u32,
    pub dst: u32,
    pub size_bytes: u64,
    pub request_bytes: u64,
    pub start_ns: u64,
    pub finish_ns: Option<u64>,
    pub ideal_fct_ns: u64,
    pub stats: MessageStats,
}

impl FlowRecord {
    pub fn fct_ns(&self) -> Option<u64> {
        self.finish_ns.map(|f| f - self.start_ns)
    }
}

#[derive(Clone, Debug)]
pub struct PortRecord {
    pub scheme: String,
    pub node: String,
    pub port: u32,
    pub peer: String,
    pub counters: PortCounters,
}

/// Every packet that entered the network is delivered to a host, dropped with a cause, or still in
/// the network when the run stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Conservation {
    /// Packets handed to a NIC.
    pub injected: u64,
    /// Packets that reached a host.
    pub delivered: u64,
    /// Packets dropped in the network (queues, links, no route).
    pub dropped: u64,
    /// Packets still queued or on a wire at the end.
    pub in_flight: u64,
    pub dropped_no_route: u64,
    /// Delivered packets no engine was listening for.
    pub undeliverable: u64,
    /// Packets shims dropped or injected (outside the network balance).
    pub shim_dropped: u64,
    pub shim_injected: u64,
    /// Packet transmissions onto links (packets times links traversed).
    pub packet_hops: u64,
    pub ok: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub scheme: String,
    pub events: u64,
    pub packet_hops: u64,
    pub wall_seconds: f64,
    pub sim_end_ns: u64,
    pub conservation: Conservation,
    pub flows_started: u64,
    pub flows_finished: u64,
    /// Why the run ended: `all_finished`, `max_time`, `stalled` (the stall watchdog, see
    /// `Experiment::stall_timeout`) or `no_events`.
    pub stop_reason: crate::sim::StopReason,
    /// A sentence for the user when the run ended early without finishing (a stall).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Host shim counters summed over hosts (e.g. `tracks_spoofed_acks`); absent without a shim.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub shim_counters: BTreeMap<String, u64>,
    /// Engine counters summed over engines (e.g. `dcquic_migrations`); absent if no engine keeps any.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub engine_counters: BTreeMap<String, u64>,
}
