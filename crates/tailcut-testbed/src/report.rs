//! What a testbed run reports about its fabric: the simulator's per-port counters (same names as the
//! columns of `ports.parquet`) plus what only a real-time run has: lateness and TUN write drops.

use crate::lateness::LatenessSummary;
use crate::pcap::CaptureReport;
use crate::shim::ShimReport;
use serde::Serialize;
use tailcut_sim::net::PortCounters;

#[derive(Clone, Debug, Serialize)]
pub struct PortReport {
    pub port: u32,
    pub node: String,
    pub peer: String,
    #[serde(flatten)]
    pub counters: PortCounters,
    pub lateness: LatenessSummary,
    /// Packets for a host that its TUN refused.
    pub tun_write_drops: u64,
}

/// Packets read from TUNs that never entered a port, and other fabric-wide counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rejects {
    pub packets_read: u64,
    pub read_errors: u64,
    pub malformed: u64,
    /// IPv4 but neither TCP nor UDP.
    pub other_protocol: u64,
    pub fragment: u64,
    pub unknown_dst: u64,
    /// Dropped at a switch with no route to the destination (e.g. its only link down).
    pub no_route: u64,
    /// Payload-cut packets reaching a Linux host, which cannot use them: counted as lost.
    pub cut_delivered: u64,
    /// Payload-cut `tailcut-net` TCP-in-UDP datagrams written to their host as the header alone
    /// (trimmed bit set): CP's PACK comes from them. Not losses.
    pub cut_forwarded: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FabricReport {
    pub elapsed_ns: u64,
    pub ports: Vec<PortReport>,
    pub rejects: Rejects,
    /// Packets still queued or on a wire when the fabric stopped.
    pub in_flight: u64,
    /// Lateness over all ports.
    pub lateness: LatenessSummary,
    /// What the packet captures hold, when the run captured.
    pub capture: Option<CaptureReport>,
    /// The host shims' counters summed over NICs, when the scheme ran shims.
    pub shims: Option<ShimReport>,
}

impl FabricReport {
    /// The port from node `node` toward node `peer` (the first of parallel links).
    pub fn port(&self, node: &str, peer: &str) -> Option<&PortReport> {
        self.ports.iter().find(|p| p.node == node && p.peer == peer)
    }

    /// Packets lost anywhere in the fabric.
    pub fn total_dropped(&self) -> u64 {
        self.ports.iter().map(|p| p.counters.dropped()).sum::<u64>()
            + self.rejects.no_route
            + self.rejects.cut_delivered
    }
}
