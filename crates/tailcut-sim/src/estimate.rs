//! Resource estimates before work: what a run will need, from the experiment alone, so that a size
//! mistake (a million-host star, a mistyped `until`, ten thousand schemes) is refused with the field
//! that drives it instead of exhausting memory or running for days.
//!
//! Two checks, each as early as the numbers are known. The topology is sized from its parameters
//! before anything is built (a topology file is parsed first: its size is the file's). The flows are
//! counted and summed once the workload is generated (generation is itself capped at
//! `MAX_FLOWS_PER_COMPONENT` per component), before any scheme runs.
//!
//! The per-node and per-link costs were set from the peak resident memory of stars of 100,000 and
//! 200,000 hosts running 20 flows (~4.1 KB per host and its link); the per-flow, per-connection and
//! per-packet-hop constants are rough and not yet calibrated. Estimates, not bounds: they exist to
//! catch orders of magnitude. docs/simulator.md, "Limits and errors".

use crate::limits::MAX_ELEMENTS;
use crate::topo::{
    CloudburstTestbed, Dumbbell, FatTree, FusoTestbed, LeafSpine, Star, TopoSpec, TopologyConfig,
};
use crate::workload::FlowSpec;
use tailcut_proto::ConfigError;

/// Default `max_events`: about an hour or two of simulator time at a few million events per second.
pub const DEFAULT_MAX_EVENTS: u64 = 20_000_000_000;

/// Heap bytes per node (its record in the spec and the network, its name, its port list, per-host
/// simulator state).
const NODE_BYTES: f64 = 1_000.0;
/// Heap bytes per link: its spec and its two ports with their queues.
const LINK_BYTES: f64 = 2_800.0;
/// Heap bytes per link held again by every scheme's copy of the topology.
const LINK_SPEC_BYTES: f64 = 300.0;
/// Heap bytes per flow: its spec, its simulator state and its result record.
const FLOW_BYTES: f64 = 700.0;
/// Heap bytes per open connection end (an engine with its send and receive state).
const CONNECTION_BYTES: f64 = 6_000.0;
/// Simulator events per packet-hop: the packet's transmission end and arrival, and its share of the
/// acknowledgements coming back.
const EVENTS_PER_PACKET_HOP: f64 = 3.0;
/// Payload bytes per data packet (1500 B MTU less 40 B of headers).
const MSS_BYTES: f64 = 1_460.0;

/// What a run may use. The defaults: this machine's available memory and [`DEFAULT_MAX_EVENTS`].
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Refuse a run whose estimated memory exceeds this (`None`: no limit).
    pub max_memory_bytes: Option<u64>,
    /// Refuse a run whose estimated event count (all schemes) exceeds this (`None`: no limit).
    pub max_events: Option<u64>,
    /// Report nothing, run anyway (`--force`).
    pub force: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_memory_bytes: available_memory_bytes(),
            max_events: Some(DEFAULT_MAX_EVENTS),
            force: false,
        }
    }
}

impl Limits {
    /// No limits: the run is attempted whatever its size.
    pub fn unlimited() -> Limits {
        Limits {
            max_memory_bytes: None,
            max_events: None,
            force: true,
        }
    }
}

/// `MemAvailable` of /proc/meminfo: memory a new process can use without swapping. `None` where the
/// file does not exist (not Linux), and then memory is not limited.
pub fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Mean links between two hosts of a topology (inter-rack paths), for the event estimate.
pub fn mean_hops(t: &TopologyConfig) -> f64 {
    match t {
        TopologyConfig::Star(_) => 2.0,
        TopologyConfig::Dumbbell(_) | TopologyConfig::FusoTestbed(_) => 3.0,
        TopologyConfig::LeafSpine(_) | TopologyConfig::CloudburstTestbed(_) | TopologyConfig::File(_) => 4.0,
        TopologyConfig::FatTree(_) => 6.0,
    }
}

/// Sizes of a topology, with the field that sets the largest of them.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoSize {
    pub hosts: f64,
    pub switches: f64,
    pub links: f64,
    /// The parameter that multiplies the size most (e.g. `hosts_per_leaf`).
    pub driver: &'static str,
}

/// The size of a built-in topology from its parameters; `None` for a topology file (sized with
/// [`size_of_spec`] once parsed).
pub fn topology_size(t: &TopologyConfig) -> Option<TopoSize> {
    let f = f64::from;
    let pick = |a: (&'static str, u32), b: (&'static str, u32)| if a.1 >= b.1 { a.0 } else { b.0 };
    Some(match t {
        TopologyConfig::Star(Star { hosts, .. }) => TopoSize {
            hosts: f(*hosts),
            switches: 1.0,
            links: f(*hosts),
            driver: "hosts",
        },
        TopologyConfig::Dumbbell(Dumbbell { left, right, .. }) => TopoSize {
            hosts: f(*left) + f(*right),
            switches: 2.0,
            links: f(*left) + f(*right) + 1.0,
            driver: pick(("left", *left), ("right", *right)),
        },
        TopologyConfig::LeafSpine(LeafSpine {
            leaves,
            spines,
            hosts_per_leaf,
            ..
        }) => TopoSize {
            hosts: f(*leaves) * f(*hosts_per_leaf),
            switches: f(*leaves) + f(*spines),
            links: f(*leaves) * (f(*hosts_per_leaf) + f(*spines)),
            driver: pick(
                ("leaves", *leaves),
                pick_pair(("hosts_per_leaf", *hosts_per_leaf), ("spines", *spines)),
            ),
        },
        TopologyConfig::FatTree(FatTree {
            k, hosts_per_edge, ..
        }) => {
            let half = f(*k) / 2.0;
            let hpe = hosts_per_edge.map(f).unwrap_or(half);
            TopoSize {
                hosts: f(*k) * half * hpe,
                switches: f(*k) * f(*k) + half * half,
                links: f(*k) * half * hpe + 2.0 * f(*k) * half * half,
                driver: match hosts_per_edge {
                    Some(h) if *h > *k => "hosts_per_edge",
                    _ => "k",
                },
            }
        }
        TopologyConfig::FusoTestbed(FusoTestbed { .. }) => TopoSize {
            hosts: 6.0,
            switches: 2.0,
            links: 9.0,
            driver: "kind",
        },
        TopologyConfig::CloudburstTestbed(CloudburstTestbed { .. }) => TopoSize {
            hosts: 8.0,
            switches: 6.0,
            links: 16.0,
            driver: "kind",
        },
        TopologyConfig::File(_) => return None,
    })
}

fn pick_pair(a: (&'static str, u32), b: (&'static str, u32)) -> (&'static str, u32) {
    if a.1 >= b.1 {
        a
    } else {
        b
    }
}

/// The size of a parsed topology (a topology file: its nodes and links are the file's).
pub fn size_of_spec(spec: &TopoSpec) -> TopoSize {
    let hosts = spec.host_rack.len() as f64;
    TopoSize {
        hosts,
        switches: spec.nodes.len() as f64 - hosts,
        links: spec.links.len() as f64,
        driver: "path",
    }
}

/// Estimated heap bytes of the network of one run plus the topology copies of `schemes` runs.
pub fn topology_bytes(s: &TopoSize, schemes: usize) -> f64 {
    // Routes: a switch index per node, an entry per switch pair, an attachment per host address.
    let routes = (s.hosts + s.switches) * 4.0 + s.switches * s.switches * 8.0 + s.hosts * 8.0;
    (s.hosts + s.switches) * NODE_BYTES + s.links * (LINK_BYTES + LINK_SPEC_BYTES * schemes as f64) + routes
}

/// Refuses a topology too big to build: more nodes or links than ids can number, or more memory than
/// `limits` allow. Errors name `topology.<driver>`.
pub fn check_topology(s: &TopoSize, schemes: usize, limits: &Limits) -> Result<(), ConfigError> {
    let field = format!("topology.{}", s.driver);
    let elements = (s.hosts + s.switches).max(s.links);
    if elements > MAX_ELEMENTS as f64 {
        return Err(ConfigError::new(
            field,
            format!(
                "{elements:.0} nodes or links, more than the {} a topology may have",
                MAX_ELEMENTS
            ),
        ));
    }
    memory(&field, topology_bytes(s, schemes), "the topology", limits)
}

/// Refuses a workload whose flows need more memory, or whose schemes together need more events, than
/// `limits` allow. `hops` is the mean number of links between two hosts.
pub fn check_work(
    flows: &[FlowSpec],
    components: usize,
    s: &TopoSize,
    schemes: usize,
    hops: f64,
    limits: &Limits,
) -> Result<(), ConfigError> {
    if limits.force {
        return Ok(());
    }
    // Per component: flows and packets, so the error can name the component that drives them.
    let mut count = vec![0f64; components];
    let mut packets = vec![0f64; components];
    for f in flows {
        let c = f.component as usize;
        count[c] += 1.0;
        packets[c] += (f.size_bytes as f64 / MSS_BYTES).ceil() + (f.request_bytes as f64 / MSS_BYTES).ceil();
    }
    let biggest = |v: &[f64]| {
        v.iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i)
    };
    let n_flows: f64 = count.iter().sum();
    // Connections: at most one per flow (persistent ones are shared), two ends each.
    let bytes = topology_bytes(s, schemes) + n_flows * (FLOW_BYTES + 2.0 * CONNECTION_BYTES);
    let driver = format!("workload[{}]", biggest(&count));
    memory(&driver, bytes, &format!("{n_flows:.0} flows"), limits)?;
    if let Some(max) = limits.max_events {
        let per_scheme = packets.iter().sum::<f64>() * hops * EVENTS_PER_PACKET_HOP;
        let events = per_scheme * schemes as f64;
        if events > max as f64 {
            let field = if schemes > 1 && per_scheme <= max as f64 {
                "schemes".to_string()
            } else {
                format!("workload[{}]", biggest(&packets))
            };
            return Err(ConfigError::new(
                field,
                format!(
                    "the run needs an estimated {} events ({} per scheme x {schemes} schemes), more than the limit of {} (--max-events); lower the flow count or sizes, or pass --force",
                    sci(events),
                    sci(per_scheme),
                    sci(max as f64)
                ),
            ));
        }
    }
    Ok(())
}

fn memory(field: &str, bytes: f64, what: &str, limits: &Limits) -> Result<(), ConfigError> {
    if limits.force {
        return Ok(());
    }
    match limits.max_memory_bytes {
        Some(max) if bytes > max as f64 => Err(ConfigError::new(
            field,
            format!(
                "{what} would need an estimated {} of memory, more than the {} allowed (--max-memory, default: this machine's available memory); make it smaller, or pass --force",
                human_bytes(bytes),
                human_bytes(max as f64)
            ),
        )),
        _ => Ok(()),
    }
}

/// "1.2 GB", decimal units as the rest of tailcut writes sizes.
pub fn human_bytes(b: f64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

fn sci(x: f64) -> String {
    format!("{x:.2e}")
}
