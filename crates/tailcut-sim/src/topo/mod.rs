//! Topologies: builders for the shapes the papers use, and a file format for anything else. A builder
//! produces a [`TopoSpec`] (nodes, links with rate / delay / buffers, host racks) that the network is
//! built from.

mod builders;
mod file;
mod tsq;

pub use builders::build;
pub use tsq::HostTsq;

use crate::net::aqm::AqmConfig;
use crate::net::queue::{ClassConfig, SchedConfig};
use serde::{Deserialize, Serialize};
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::Dur;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Host,
    Switch,
}

pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

/// Queue configuration of one port.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PortQueueSpec {
    pub aqm: AqmConfig,
    pub classes: Vec<ClassConfig>,
    pub sched: SchedConfig,
}

pub struct LinkSpec {
    pub a: u32,
    pub b: u32,
    pub rate_bps: u64,
    pub delay: Dur,
    /// Egress buffer at `a` (toward `b`) and at `b` (toward `a`).
    pub buffer_a: u64,
    pub buffer_b: u64,
    pub aqm_a: PortQueueSpec,
    pub aqm_b: PortQueueSpec,
    pub tier: u8,
}

#[derive(Default)]
pub struct TopoSpec {
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    /// Rack of each host, in host order.
    pub host_rack: Vec<u32>,
    /// Per-connection-end limit on bytes waiting in its host's NIC queue; see
    /// [`SwitchQueues::host_tsq`].
    pub host_tsq: HostTsq,
}

/// Queueing of switch ports, shared by every topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct SwitchQueues {
    /// Buffer per switch egress port.
    pub buffer: Bytes,
    /// Queue discipline of switch ports.
    pub aqm: AqmConfig,
    /// Traffic classes (empty = one FIFO for everything).
    pub classes: Vec<ClassConfig>,
    /// How the classes are served.
    pub sched: SchedConfig,
    /// Buffer of a host NIC queue. Hosts do not drop in practice (the stack back-pressures the
    /// application), so the default is large.
    pub host_buffer: Bytes,
    /// Discipline of host NIC queues: `drop_tail` (a FIFO, the default) or `pfabric` (pFabric's end
    /// hosts also send the highest-priority packet first).
    pub host_aqm: AqmConfig,
    /// Traffic classes of host NIC queues, served by strict priority (empty = one queue). PIAS end
    /// hosts send their higher-priority class first.
    pub host_classes: Vec<ClassConfig>,
    /// TCP small queues: the most bytes one connection end may have waiting in its host's NIC queue
    /// before its engine is asked for no more packets; it is asked again when its bytes drain below
    /// the limit. `"linux"` (the default) is a Linux host: TCP engines get TSQ's limit, about 1 ms at
    /// the NIC rate bounded by `tcp_limit_output_bytes` (131072 B at 1 Gbps, 1.22 MB at 10 Gbps, 4 MB
    /// from 34 Gbps), UDP engines (CloudBurst, DCQUIC) the default socket send buffer (212992 B). A
    /// size gives every engine that budget; `0` disables it: engines hand every packet to the NIC at
    /// once, as the papers' ns-2 hosts do. docs/simulator.md, "TCP small queues".
    pub host_tsq: HostTsq,
}

impl SwitchQueues {
    /// The queue spec of a host NIC port.
    pub fn host_queue(&self) -> PortQueueSpec {
        PortQueueSpec {
            aqm: self.host_aqm.clone(),
            classes: self.host_classes.clone(),
            sched: SchedConfig::StrictPriority,
        }
    }
}

impl Default for SwitchQueues {
    fn default() -> Self {
        SwitchQueues {
            buffer: Bytes(128_000),
            aqm: AqmConfig::DropTail,
            classes: Vec::new(),
            sched: SchedConfig::default(),
            host_buffer: Bytes(16_000_000),
            host_aqm: AqmConfig::DropTail,
            host_classes: Vec::new(),
            host_tsq: HostTsq::Linux,
        }
    }
}

/// The topology section of an experiment: `kind` selects the shape, the other keys its parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TopologyConfig {
    Star(Star),
    Dumbbell(Dumbbell),
    LeafSpine(LeafSpine),
    FatTree(FatTree),
    FusoTestbed(FusoTestbed),
    CloudburstTestbed(CloudburstTestbed),
    File(File),
}

crate::tagged::kind_tagged!(TopologyConfig {
    "star" => Star(Star),
    "dumbbell" => Dumbbell(Dumbbell),
    "leaf_spine" => LeafSpine(LeafSpine),
    "fat_tree" => FatTree(FatTree),
    "fuso_testbed" => FusoTestbed(FusoTestbed),
    "cloudburst_testbed" => CloudburstTestbed(CloudburstTestbed),
    "file" => File(File),
});

/// N hosts on one switch: the incast / dumbbell shape with one bottleneck toward each host
/// (T-RACKs Sec. V-A, CP incast). `receivers` hosts are listed first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Star {
    /// Number of hosts.
    pub hosts: u32,
    /// Rate of each host link.
    #[serde(default = "rate_1g")]
    pub host_rate: Rate,
    /// Propagation delay of each link.
    #[serde(default = "delay_25us")]
    pub link_delay: Dur,
}

/// Two switches joined by one bottleneck link, `left` hosts on one side and `right` on the other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Dumbbell {
    /// Hosts on the left switch.
    pub left: u32,
    /// Hosts on the right switch.
    pub right: u32,
    /// Rate of each host link.
    #[serde(default = "rate_1g")]
    pub host_rate: Rate,
    /// Rate of the link between the two switches.
    #[serde(default = "rate_1g")]
    pub bottleneck_rate: Rate,
    /// Propagation delay of each link.
    #[serde(default = "delay_25us")]
    pub link_delay: Dur,
}

/// Two-tier leaf-spine. Give `fabric_rate` (each leaf-spine link) or `oversubscription`
/// (hosts_per_leaf * host_rate / (spines * fabric_rate)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LeafSpine {
    /// Number of leaf (ToR) switches.
    pub leaves: u32,
    /// Number of spine switches.
    pub spines: u32,
    /// Hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// Rate of each host link.
    #[serde(default = "rate_10g")]
    pub host_rate: Rate,
    /// Rate of each leaf-spine link. Default: the host rate (or from `oversubscription`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_rate: Option<Rate>,
    /// Instead of `fabric_rate`: hosts_per_leaf * host_rate / (spines * fabric_rate), > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oversubscription: Option<f64>,
    /// Propagation delay of each link.
    #[serde(default = "delay_1us")]
    pub link_delay: Dur,
}

/// Three-tier fat-tree (Al-Fares et al. 2008) with parameter k: k pods of k/2 edge and k/2
/// aggregation switches, (k/2)^2 core switches, `hosts_per_edge` hosts per edge switch (k/2 by
/// default; FUSO's simulation uses k = 4 with 8 hosts per ToR, 10 Gbps hosts and 40 Gbps fabric).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FatTree {
    /// The fat-tree's k (even): k pods, k-port switches.
    pub k: u32,
    /// Hosts per edge switch. Default: k/2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_per_edge: Option<u32>,
    /// Rate of each host link.
    #[serde(default = "rate_10g")]
    pub host_rate: Rate,
    /// Rate of each switch-to-switch link. Default: the host rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_rate: Option<Rate>,
    /// Propagation delay of each link.
    #[serde(default = "delay_1us")]
    pub link_delay: Dur,
}

/// FUSO's testbed (Sec. 4.2): two ToRs with 3 hosts each (H1-H3 under tor0, H4-H6 under tor1) and
/// three parallel inter-ToR paths P1-P3 (links 0, 1, 2 between tor0 and tor1), 1 Gbps everywhere.
/// Delays default to give a ~280 us base RTT between racks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FusoTestbed {
    /// Rate of every link.
    #[serde(default = "rate_1g")]
    pub rate: Rate,
    /// Propagation delay of each link.
    #[serde(default = "delay_fuso")]
    pub link_delay: Dur,
}

/// CloudBurst's testbed (Sec. V): leaf-spine with 2 leaves x 4 servers and 4 spines (4 paths
/// between racks), 1 Gbps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CloudburstTestbed {
    /// Rate of every link.
    #[serde(default = "rate_1g")]
    pub rate: Rate,
    /// Propagation delay of each link.
    #[serde(default = "delay_5us")]
    pub link_delay: Dur,
}

/// A topology file (TOML): `[[node]] name, kind` and `[[link]] a, b, rate, delay, buffer, tier`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct File {
    /// The topology file (TOML with `[[node]]` and `[[link]]`), relative to the experiment file's folder.
    pub path: String,
}

fn rate_1g() -> Rate {
    Rate(1_000_000_000)
}
fn rate_10g() -> Rate {
    Rate(10_000_000_000)
}
fn delay_25us() -> Dur {
    Dur::from_micros(25)
}
fn delay_1us() -> Dur {
    Dur::from_micros(1)
}
fn delay_5us() -> Dur {
    Dur::from_micros(5)
}
fn delay_fuso() -> Dur {
    // Host-ToR-ToR-host is 3 links; 6 one-way traversals per RTT plus serialisation of a 1500 B packet
    // and a 40 B ACK at 1 Gbps on each (~37 us) gives ~280 us with 40 us per link.
    Dur::from_micros(40)
}
