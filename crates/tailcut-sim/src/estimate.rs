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
//! 200,000 hosts running 20 flows (~4.1 KB per host and its link); DCQUIC's per-connection cost from
//! runs of 2,000 and 8,000 flows ([`DCQUIC_CONNECTION_BYTES`]); the other per-flow, per-connection and
//! per-packet-hop constants are rough and not yet calibrated. Estimates, not bounds: they exist to
//! catch orders of magnitude. docs/simulator.md, "Limits and errors".

use crate::limits::MAX_ELEMENTS;
use crate::topo::{
    CloudburstTestbed, Dumbbell, FatTree, FusoTestbed, LeafSpine, Star, TopoSpec, TopologyConfig,
};
use crate::workload::FlowSpec;
use tailcut_proto::ConfigError;
use tailcut_scheme::EngineSpec;

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
/// Heap bytes per open connection end (an engine with its send and receive state) of the TCP family
/// and CloudBurst. Generous for them: a 16-host star running 2,000 and 8,000 flows of 10 KB peaked at
/// 181,996 and 197,188 KiB resident under `tcp` (2.6 KB more per flow, both ends), 178,400 and
/// 204,436 KiB under `cloudburst` (4.4 KB per flow).
const CONNECTION_BYTES: f64 = 6_000.0;
/// Heap bytes per MPTCP connection end (its sub-flows): the same runs peaked at 207,104 and 310,068
/// KiB under `mptcp`, 17.6 KB more per flow, so ~8.8 KB per end.
const MPTCP_CONNECTION_BYTES: f64 = 10_000.0;
/// Heap bytes per DCQUIC connection end: quinn-proto's connection (its streams, packet spaces, crypto
/// state and buffers) stays allocated for the whole run. Measured: `tailcut run` of a 16-host star with
/// 2,000 and 8,000 DCQUIC flows of 10 KB peaked at 811,656 and 2,723,676 KiB resident
/// (`/usr/bin/time -v`), 326 KB more per flow, so ~163 KB per end; 100,000 flows need ~33 GB.
pub const DCQUIC_CONNECTION_BYTES: f64 = 165_000.0;
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

/// The memory this process may still allocate: the least of `MemAvailable` (/proc/meminfo), its
/// cgroup's limit less its usage (v2 `memory.max` - `memory.current`, v1 `memory.limit_in_bytes` -
/// `memory.usage_in_bytes`, at every level up to the root) and its address-space limit (`ulimit -v`,
/// RLIMIT_AS) less its current size (`VmSize`). MemAvailable alone let a run under a 4 GB limit on a
/// 24 GB machine pass the estimate and then abort with "memory allocation failed". `None` where
/// none of these can be read (not Linux), and then memory is not limited.
pub fn available_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok();
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    let status = std::fs::read_to_string("/proc/self/status").ok();
    [
        meminfo.as_deref().and_then(|t| proc_kb(t, "MemAvailable:")),
        cgroups
            .as_deref()
            .and_then(|c| cgroup_headroom(std::path::Path::new("/sys/fs/cgroup"), c)),
        limits
            .as_deref()
            .zip(status.as_deref())
            .and_then(|(l, s)| address_space_headroom(l, s)),
    ]
    .into_iter()
    .flatten()
    .min()
}

/// A `NAME: <n> kB` line of /proc/meminfo or /proc/self/status, in bytes.
fn proc_kb(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// RLIMIT_AS (the "Max address space" soft limit of /proc/self/limits) less `VmSize`: what `ulimit -v`
/// still allows this process to map.
fn address_space_headroom(limits: &str, status: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(soft.saturating_sub(proc_kb(status, "VmSize:").unwrap_or(0)))
}

/// A cgroup limit at or above this is "no limit" (v1 writes 2^63 rounded down to a page).
const CGROUP_UNLIMITED: u64 = 1 << 60;

/// The least headroom (limit less usage) of the cgroups in `proc_self_cgroup` (the text of
/// /proc/self/cgroup) and their ancestors, under the cgroup mount `root`. Inside a container the
/// listed path may not exist in the container's view: then the mount's own files are its cgroup's.
pub fn cgroup_headroom(root: &std::path::Path, proc_self_cgroup: &str) -> Option<u64> {
    let read =
        |p: std::path::PathBuf| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let mut best: Option<u64> = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next()?, parts.next()?);
        let (base, limit, usage) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        if !dir.is_dir() {
            dir = base.clone();
        }
        loop {
            // "max" (v2's no limit) does not parse, and is skipped like a missing file.
            if let (Some(max), Some(used)) = (read(dir.join(limit)), read(dir.join(usage))) {
                if max < CGROUP_UNLIMITED {
                    let room = max.saturating_sub(used);
                    best = Some(best.map_or(room, |b| b.min(room)));
                }
            }
            if dir == base || !dir.pop() || !dir.starts_with(&base) {
                break;
            }
        }
    }
    best
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
    cost: &FlowCost,
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
    let bytes = topology_bytes(s, schemes) + n_flows * cost.bytes;
    let driver = format!("workload[{}]", biggest(&count));
    memory(
        &driver,
        bytes,
        &cost.describe(&format!("{n_flows:.0} flows")),
        limits,
    )?;
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
        Some(max) if bytes > max as f64 => Err(memory_error(field, bytes, what, max)),
        _ => Ok(()),
    }
}

fn memory_error(field: &str, bytes: f64, what: &str, max: u64) -> ConfigError {
    ConfigError::new(
        field,
        format!(
            "{what} would need an estimated {} of memory, more than the {} allowed (--max-memory; default: what this process may still allocate, the least of the machine's available memory, its cgroup's memory limit and ulimit -v); make it smaller, or pass --force",
            human_bytes(bytes),
            human_bytes(max as f64)
        ),
    )
}

/// Heap bytes of one connection end of `engine`'s family.
pub fn connection_end_bytes(engine: &EngineSpec) -> f64 {
    match engine {
        EngineSpec::Dcquic(_) => DCQUIC_CONNECTION_BYTES,
        EngineSpec::Mptcp { .. } => MPTCP_CONNECTION_BYTES,
        EngineSpec::Tcp(_)
        | EngineSpec::CloudBurst { .. }
        | EngineSpec::Tls { .. }
        | EngineSpec::Reconnect { .. } => CONNECTION_BYTES,
    }
}

/// What one flow costs under the most expensive scheme of a run (schemes run one after another, so
/// the peak is the biggest scheme's, not their sum).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowCost {
    /// Heap bytes of one flow: its record and, at most, a connection of its own (two ends).
    pub bytes: f64,
    /// The scheme that sets it (`schemes[i]` and its name), when it costs more than TCP's.
    pub scheme: Option<(usize, String)>,
}

impl Default for FlowCost {
    fn default() -> FlowCost {
        FlowCost {
            bytes: FLOW_BYTES + 2.0 * CONNECTION_BYTES,
            scheme: None,
        }
    }
}

impl FlowCost {
    /// The cost of the dearest of these schemes (`None`: one whose parameters do not resolve, which
    /// the caller reports later; it counts as TCP here).
    pub fn of<'a>(schemes: impl IntoIterator<Item = (&'a str, Option<&'a EngineSpec>)>) -> FlowCost {
        let mut best = FlowCost::default();
        for (i, (name, engine)) in schemes.into_iter().enumerate() {
            let bytes = FLOW_BYTES + 2.0 * engine.map_or(CONNECTION_BYTES, connection_end_bytes);
            if bytes > best.bytes {
                best = FlowCost {
                    bytes,
                    scheme: Some((i, name.to_string())),
                };
            }
        }
        best
    }

    /// "N flows", with the scheme that makes them dear, for the memory error.
    fn describe(&self, flows: &str) -> String {
        match &self.scheme {
            None => flows.to_string(),
            Some((i, name)) => format!(
                "{flows} under scheme '{name}' (schemes[{i}]: ~{} per flow, its engines' per-connection state)",
                human_bytes(self.bytes)
            ),
        }
    }
}

/// The most flows the memory limit leaves room for beside the topology (`u64::MAX`: no limit). The
/// workload is generated within it, so that 49 million flows are refused before they are allocated.
pub fn flow_budget(s: &TopoSize, schemes: usize, cost: &FlowCost, limits: &Limits) -> u64 {
    match limits.max_memory_bytes {
        Some(max) if !limits.force => {
            let room = (max as f64 - topology_bytes(s, schemes)).max(0.0);
            (room / cost.bytes).floor() as u64
        }
        _ => u64::MAX,
    }
}

/// The refusal of a workload whose generation passed [`flow_budget`]: `at_least` flows so far,
/// `component` the one that crossed it.
pub fn over_flow_budget(
    component: usize,
    at_least: u64,
    s: &TopoSize,
    schemes: usize,
    cost: &FlowCost,
    limits: &Limits,
) -> ConfigError {
    let bytes = topology_bytes(s, schemes) + at_least as f64 * cost.bytes;
    memory_error(
        &format!("workload[{component}]"),
        bytes,
        &cost.describe(&format!("more than {} flows", at_least.saturating_sub(1))),
        limits.max_memory_bytes.unwrap_or(0),
    )
}

/// Heap bytes per text byte that parsing a topology file needs at its peak (the TOML document and the
/// typed nodes and links), beyond the topology itself: `tailcut validate` of a one-million-host star
/// file (90 MB) peaked at 6.4 GB resident, of which [`topology_bytes`] accounts for 4.1 GB.
const TOPOLOGY_TEXT_FACTOR: f64 = 25.0;

/// The size of a topology file from its text, before it is parsed: every node names a `kind` and
/// every link a `delay` (both required), so counting the words bounds the counts from above. A
/// million-host file must be refused before its parse alone exhausts memory.
pub fn size_of_topology_text(text: &str) -> TopoSize {
    let nodes = text.matches("kind").count() as f64;
    let hosts = text.matches("\"host\"").count() as f64;
    TopoSize {
        hosts: hosts.min(nodes),
        switches: (nodes - hosts).max(0.0),
        links: text.matches("delay").count() as f64,
        driver: "path",
    }
}

/// Refuses a topology file whose parse or network would need more memory than `limits` allow, from
/// its text alone.
pub fn check_topology_text(text: &str, schemes: usize, limits: &Limits) -> Result<(), ConfigError> {
    let s = size_of_topology_text(text);
    let bytes = topology_bytes(&s, schemes) + text.len() as f64 * TOPOLOGY_TEXT_FACTOR;
    memory("topology.path", bytes, "the topology file", limits)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_space_headroom_is_the_soft_limit_less_vmsize() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max address space         4000000000           unlimited            bytes\n";
        let status = "Name:\tpython\nVmSize:\t  1000000 kB\n";
        assert_eq!(
            address_space_headroom(limits, status),
            Some(4_000_000_000 - 1_024_000_000)
        );
        let unlimited = "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_headroom(unlimited, status), None);
    }

    #[test]
    fn cgroup_headroom_reads_v1_and_v2_and_their_ancestors() {
        let root = std::env::temp_dir().join(format!("tailcut-cgroup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |p: &str, v: &str| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, v).unwrap();
        };
        // v2: the job's own cgroup has no limit, its parent allows 3 GB of which 1 GB is used.
        write("a/memory.max", "3000000000\n");
        write("a/memory.current", "1000000000\n");
        write("a/job/memory.max", "max\n");
        write("a/job/memory.current", "500\n");
        assert_eq!(cgroup_headroom(&root, "0::/a/job\n"), Some(2_000_000_000));
        // v1, seen from inside a container: the listed path does not exist, the mount's files apply.
        write("memory/memory.limit_in_bytes", "4000000000\n");
        write("memory/memory.usage_in_bytes", "1000\n");
        assert_eq!(
            cgroup_headroom(&root, "4:memory:/elsewhere/x\n1:cpu:/\n"),
            Some(3_999_999_000)
        );
        // v1 without a limit (2^63 rounded to a page) is no limit.
        write("memory/memory.limit_in_bytes", "9223372036854771712\n");
        assert_eq!(cgroup_headroom(&root, "4:memory:/\n"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_dcquic_scheme_makes_flows_dear_and_the_error_names_it() {
        let tcp = tailcut_scheme::resolve("tcp", &Default::default())
            .unwrap()
            .engine;
        let quic = tailcut_scheme::resolve("dcquic", &Default::default())
            .unwrap()
            .engine;
        assert_eq!(FlowCost::of([("a", Some(&tcp))]), FlowCost::default());
        let cost = FlowCost::of([("a", Some(&tcp)), ("q", Some(&quic)), ("bad", None)]);
        assert_eq!(cost.scheme, Some((1, "q".to_string())));
        assert_eq!(cost.bytes, FLOW_BYTES + 2.0 * DCQUIC_CONNECTION_BYTES);
        // 100,000 DCQUIC flows on a small topology: refused under 16 GB, where TCP's pass.
        let s = TopoSize {
            hosts: 8.0,
            switches: 4.0,
            links: 16.0,
            driver: "hosts",
        };
        let flows: Vec<FlowSpec> = (0..100_000)
            .map(|i| FlowSpec {
                id: i,
                component: 0,
                src: 0,
                dst: 1,
                size_bytes: 10_000,
                start: tailcut_proto::Time(0),
                request_bytes: 0,
            })
            .collect();
        let limits = Limits {
            max_memory_bytes: Some(16_000_000_000),
            max_events: None,
            force: false,
        };
        let tcp_cost = FlowCost::default();
        assert!(check_work(&flows, 1, &s, 2, 4.0, &tcp_cost, &limits).is_ok());
        let e = check_work(&flows, 1, &s, 2, 4.0, &cost, &limits).unwrap_err();
        assert_eq!(e.path, "workload[0]");
        assert!(
            e.reason.starts_with(
                "100000 flows under scheme 'q' (schemes[1]: ~330.7 KB per flow, its engines' \
                 per-connection state) would need an estimated 33.1 GB of memory"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_topology_file_is_sized_from_its_text() {
        let text = "[[node]]\nname = \"s\"\nkind = \"switch\"\n[[node]]\nname = \"h\"\nkind = \"host\"\n\
                    [[link]]\na = \"h\"\nb = \"s\"\nrate = \"1Gbps\"\ndelay = \"1us\"\n";
        let s = size_of_topology_text(text);
        assert_eq!((s.hosts, s.switches, s.links), (1.0, 1.0, 1.0));
        let tight = Limits {
            max_memory_bytes: Some(1_000),
            max_events: None,
            force: false,
        };
        let e = check_topology_text(text, 1, &tight).unwrap_err();
        assert_eq!(e.path, "topology.path");
        assert!(check_topology_text(text, 1, &Limits::unlimited()).is_ok());
    }
}
