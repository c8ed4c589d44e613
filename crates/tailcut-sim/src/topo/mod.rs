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
/// Faults name links by their end nodes (`link = { between = ["leaf0", "spine1"] }`) and the port
/// table (`ports.parquet`) names each port's node and peer; each built-in shape names its nodes as
/// its section says. Hosts are `h0`, `h1`, ... in the order of the host indices workload patterns
/// use (`receiver = 0` is `h0`), numbered rack by rack. An unknown node's error lists the valid names.
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
/// (T-RACKs Sec. V-A, CP incast). `receivers` hosts are listed first. Nodes: the switch `sw0`,
/// hosts `h0`..`h{hosts-1}`.
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
/// Nodes: switches `swl` and `swr` (the bottleneck is `between = ["swl", "swr"]`), hosts
/// `h0`..`h{left-1}` on `swl` and the next `right` on `swr`.
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
/// (hosts_per_leaf * host_rate / (spines * fabric_rate)). Nodes: `spine0`..`spine{spines-1}`,
/// `leaf0`..`leaf{leaves-1}`, hosts `h0`.. with leaf `l` holding `h{l*hosts_per_leaf}` onward (with
/// 4 leaves of 4 hosts: `spine0..spine3, leaf0..leaf3, h0..h15`, `h4`-`h7` under `leaf1`).
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
/// Nodes: cores `core0`..`core{(k/2)^2-1}`, in pod `p` aggregation switches `agg{p}_0`..`agg{p}_{k/2-1}`
/// and edge switches `tor{p}_0`..`tor{p}_{k/2-1}`, hosts `h0`.. edge by edge (k = 4:
/// `core0..core3, agg0_0..agg3_1, tor0_0..tor3_1, h0..h15`). Aggregation switch `i` of every pod
/// links to cores `i*k/2` .. `(i+1)*k/2-1`.
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
/// Delays default to give a ~280 us base RTT between racks. Nodes: `tor0`, `tor1` and hosts
/// `h0`..`h5` (the paper's H1-H6: `h0`-`h2` under `tor0`); a path is
/// `link = { between = ["tor0", "tor1"], index = 0 }`.
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
/// between racks), 1 Gbps. Nodes: `spine0`..`spine3`, `leaf0`, `leaf1`, hosts `h0`..`h7` (`h0`-`h3`
/// under `leaf0`).
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
/// Nodes: the file's names; hosts are numbered in the file's order.
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

/// A name and the numbers in it.
type Numbered<'a> = (&'a str, Vec<u64>);

/// The valid node names, for an error that names an unknown one: names that differ only in their
/// numbers are given as a range when they fill it (`h0..h15`, `tor0_0..tor3_1`), so a 10,000-host
/// topology still yields a line; other names are listed, the first few of a long group.
pub fn describe_node_names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    // Group by shape: the name with each run of digits replaced by '#', in order of first appearance.
    let mut groups: Vec<(String, Vec<Numbered<'a>>)> = Vec::new();
    for name in names {
        let (shape, numbers) = shape_of(name);
        match groups.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, members)) => members.push((name, numbers)),
            None => groups.push((shape, vec![(name, numbers)])),
        }
    }
    const SHOWN: usize = 6;
    let mut parts: Vec<String> = Vec::new();
    for (_, members) in &groups {
        if members.len() > 1 && fills_its_range(members) {
            parts.push(format!("{}..{}", members[0].0, members[members.len() - 1].0));
        } else if members.len() <= SHOWN {
            parts.extend(members.iter().map(|(n, _)| n.to_string()));
        } else {
            let first: Vec<&str> = members[..SHOWN - 1].iter().map(|(n, _)| *n).collect();
            parts.push(format!(
                "{}, ..., {} ({} names)",
                first.join(", "),
                members[members.len() - 1].0,
                members.len()
            ));
        }
    }
    const MAX_GROUPS: usize = 12;
    if parts.len() > MAX_GROUPS {
        let more = parts.len() - MAX_GROUPS;
        parts.truncate(MAX_GROUPS);
        parts.push(format!("and {more} more kinds of name"));
    }
    parts.join(", ")
}

/// A name's shape (digit runs as '#') and its numbers; a run too long for a u64 stays in the shape.
fn shape_of(name: &str) -> (String, Vec<u64>) {
    let mut shape = String::new();
    let mut numbers = Vec::new();
    let mut digits = String::new();
    let flush = |digits: &mut String, shape: &mut String, numbers: &mut Vec<u64>| {
        if digits.is_empty() {
            return;
        }
        // A leading zero ("h01") would not print back as the same name: keep it literal.
        match digits.parse::<u64>() {
            Ok(n) if !(digits.len() > 1 && digits.starts_with('0')) => {
                shape.push('#');
                numbers.push(n);
            }
            _ => shape.push_str(digits),
        }
        digits.clear();
    };
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut shape, &mut numbers);
            shape.push(c);
        }
    }
    flush(&mut digits, &mut shape, &mut numbers);
    (shape, numbers)
}

/// Whether the members, in order, are every combination of their numbers from the first's to the
/// last's, the last number varying fastest (as the builders number them): only then is `a..b` exact.
fn fills_its_range(members: &[Numbered<'_>]) -> bool {
    let (first, last) = (&members[0].1, &members[members.len() - 1].1);
    if first.is_empty() || first.len() != last.len() || first.iter().zip(last).any(|(a, b)| a > b) {
        return false;
    }
    let mut expect = first.clone();
    for (i, (_, numbers)) in members.iter().enumerate() {
        if *numbers != expect {
            return false;
        }
        if i + 1 == members.len() {
            return expect == *last;
        }
        // The next combination, odometer-style within [first, last] per position.
        let mut pos = expect.len();
        loop {
            if pos == 0 {
                return false;
            }
            pos -= 1;
            if expect[pos] < last[pos] {
                expect[pos] += 1;
                break;
            }
            expect[pos] = first[pos];
        }
    }
    true
}

#[cfg(test)]
mod name_tests {
    use super::*;

    fn names_of(cfg: &str) -> String {
        let cfg: TopologyConfig = toml::from_str(cfg).unwrap();
        let spec = build(&cfg, &SwitchQueues::default()).unwrap();
        describe_node_names(spec.nodes.iter().map(|n| n.name.as_str()))
    }

    #[test]
    fn built_in_topologies_name_their_nodes_as_ranges() {
        assert_eq!(names_of("kind = \"star\"\nhosts = 16"), "sw0, h0..h15");
        assert_eq!(
            names_of("kind = \"leaf_spine\"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4"),
            "spine0..spine1, leaf0..leaf3, h0..h15"
        );
        assert_eq!(
            names_of("kind = \"fat_tree\"\nk = 4"),
            "core0..core3, agg0_0..agg3_1, tor0_0..tor3_1, h0..h15"
        );
        assert_eq!(
            names_of("kind = \"dumbbell\"\nleft = 2\nright = 3"),
            "swl, swr, h0..h4"
        );
        assert_eq!(names_of("kind = \"fuso_testbed\""), "tor0..tor1, h0..h5");
    }

    #[test]
    fn names_that_do_not_fill_a_range_are_listed() {
        assert_eq!(describe_node_names(["h0", "h2", "s"]), "h0, h2, s");
        let many: Vec<String> = (0..20).map(|i| format!("x{}", i * 2)).collect();
        assert_eq!(
            describe_node_names(many.iter().map(String::as_str)),
            "x0, x2, x4, x6, x8, ..., x38 (20 names)"
        );
        assert_eq!(describe_node_names(["h01", "h02"]), "h01, h02");
    }
}
