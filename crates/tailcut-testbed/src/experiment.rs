//! `tailcut-testbed run FILE --out DIR`: the simulator's experiment file on real hosts. The topology,
//! switch queues, faults and workload are the simulator's own (same builders, same generator, same
//! seed, so the same flows); each scheme maps to a kernel stack; a workload agent per host opens the
//! real sockets. What a testbed cannot run is an error naming the field.

use crate::agent::{Event, Plan, PlannedFlow};
use crate::config::TestbedConfig;
use crate::error::TestbedError;
use crate::fabric::LoopConfig;
use crate::pcap::CaptureSpec;
use crate::reconnect::ReconnectPlan;
use crate::report::FabricReport;
use crate::runtime_agent::{RuntimePlan, TlsMaterial};
use crate::{HostSetup, SelfCommand, Testbed, TestbedSpec};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use tailcut_proto::stats::percentile;
use tailcut_proto::tracks::TracksConfig;
use tailcut_proto::{ConfigError, Dur};
use tailcut_sim::config::{Experiment, SchemeConfig};
use tailcut_sim::fault::FaultConfig;
use tailcut_sim::net::Network;
use tailcut_sim::topo;
use tailcut_sim::workload::{self, FlowSpec, HostInfo};
use tailcut_sys::clock::monotonic_ns;

/// Linux's in-kernel path manager allows at most 8 subflows besides the first.
const MAX_SUBFLOWS: u64 = 9;
/// Time between the last agent listening and the experiment's time zero (for the time zero to reach
/// every agent before its first flow).
const WARMUP: Duration = Duration::from_millis(300);
/// How long the agents may take to start listening. Starting them is not part of the experiment: it
/// waits for all of them, however loaded the machine; this only bounds an agent that never starts.
const AGENTS_START: Duration = Duration::from_secs(120);

/// A serde error at its path (serde_path_to_error writes the root as `.`, which is no field).
fn serde_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> ConfigError {
    let path = e.path().to_string();
    let path = if path == "." { String::new() } else { path };
    ConfigError::new(path, e.inner().to_string())
}

/// Splits the file into the simulator's experiment and the `[testbed]` section; errors name the field.
pub fn load(text: &str) -> Result<(Experiment, TestbedConfig), ConfigError> {
    // TOML's own message says where in the text (line and column); there is no field yet.
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::new("", e.to_string()))?;
    let tb = match table.remove("testbed") {
        Some(v) => serde_path_to_error::deserialize(v).map_err(|e| serde_error(e).at("testbed"))?,
        None => TestbedConfig::default(),
    };
    tb.validate().map_err(|e| e.at("testbed"))?;
    let mut tb: TestbedConfig = tb;
    tb.shims = real_host_shims(&table, tb.sack)?;
    let exp: Experiment = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(serde_error)?;
    Ok((exp, tb))
}

/// Each scheme's `shim` table as the shim runs beside real Linux TCP: the keys the file gives, over
/// `tailcut-tracksd`'s real-host defaults rather than the simulator's (a Linux sender's timestamps
/// are not microseconds, and it answers spoofed ACKs differently with SACK; docs/tracks.md, "On
/// real hosts"), and `sack` as the hosts' `tcp_sack`, as the simulator takes it from the transport.
fn real_host_shims(table: &toml::Table, sack: bool) -> Result<Vec<Option<TracksConfig>>, ConfigError> {
    let schemes = table
        .get("schemes")
        .and_then(|v| v.as_array())
        .map_or(&[][..], |a| a.as_slice());
    schemes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let Some(shim) = s.get("shim") else {
                return Ok(None);
            };
            let here = format!("schemes[{i}].shim");
            let mut given = shim
                .as_table()
                .cloned()
                .ok_or_else(|| ConfigError::new(&here, "must be a table"))?;
            match given.remove("kind").as_ref().and_then(|k| k.as_str()) {
                Some("tracks") => {}
                other => {
                    return Err(ConfigError::new(
                        format!("{here}.kind"),
                        format!("unknown shim {other:?}; expected \"tracks\""),
                    ))
                }
            }
            let c =
                tailcut_tracksd::config::tracks_over_real_host_defaults(given).map_err(|e| e.at(&here))?;
            // The scheme's own `sack` (its hosts' `tcp_sack` on the testbed) over `[testbed]`'s.
            let sack = s
                .get("params")
                .and_then(|p| p.get("sack"))
                .and_then(|v| v.as_bool())
                .unwrap_or(sack);
            let c = TracksConfig { sack, ..c };
            c.validate().map_err(|e| e.at(&here))?;
            Ok(Some(c))
        })
        .collect()
}

/// Rejects what the testbed cannot run, naming the field; otherwise how each scheme runs ([`stack`],
/// in the file's order).
fn check(exp: &Experiment, tb: &TestbedConfig, hosts: usize) -> Result<Vec<SchemeStack>, ConfigError> {
    if hosts > tb.max_hosts as usize {
        return Err(ConfigError::new(
            "topology",
            format!(
                "{hosts} hosts, more than testbed.max_hosts = {} (each host is a namespace and an agent process)",
                tb.max_hosts
            ),
        ));
    }
    // Built here (a run has built it already) rather than per scheme, so that its errors are at
    // `topology` and not under a scheme.
    let mut spec = topo::build(&exp.topology, &exp.network).map_err(|e| e.at("topology"))?;
    let nics = most_nics(&spec);
    scale_rates(&mut spec, &mut [], tb.rate_scale);
    if let Some(l) = spec.links.iter().find(|l| l.rate_bps > tb.max_link_rate.0) {
        let name = |n: u32| spec.nodes[n as usize].name.clone();
        return Err(ConfigError::new(
            "topology",
            format!(
                "link {}-{} runs at {} after testbed.rate_scale = {}, faster than the fabric emulates \
                 here (testbed.max_link_rate = {}, its measured forwarding capacity); lower \
                 testbed.rate_scale (e.g. {:.2}) or write slower rates into the topology",
                name(l.a),
                name(l.b),
                tailcut_proto::units::format_rate(l.rate_bps),
                tb.rate_scale,
                tailcut_proto::units::format_rate(tb.max_link_rate.0),
                tb.rate_scale * tb.max_link_rate.0 as f64 / l.rate_bps as f64,
            ),
        ));
    }
    let mut stacks = Vec::with_capacity(exp.schemes.len());
    for (i, s) in exp.schemes.iter().enumerate() {
        let here = format!("schemes[{i}]");
        // The scheme layer reads the entry as the simulator does (the same keys, units and errors),
        // then refuses what the chosen stack cannot run.
        let st = stack(exp, tb, s).map_err(|e| e.at(&here))?;
        match st.stack {
            Stack::Kernel => {
                scheme_kernel_settings(tb, s, &st).map_err(|e| e.at(&here))?;
                mptcp_join_ports(tb, s, nics).map_err(|e| e.at(&here))?;
                let persistent = exp
                    .workload
                    .iter()
                    .position(|w| w.persistent_connections_per_pair().is_some());
                if st.reconnect_after().is_some() {
                    // The agent's reconnecting client watches a call for its response bytes, what a
                    // socket shows the application. The simulator's also ends a one-way message at
                    // its acknowledgement, which a socket does not report: refused, not approximated.
                    if let Some(w) = exp.workload.iter().position(|w| w.request_bytes.0 == 0) {
                        return Err(ConfigError::new(
                            format!("workload[{w}].request_bytes"),
                            format!(
                                "'{}' is an RPC client that reconnects while a call waits for its \
                                 response; give this component request_bytes (request/response flows), \
                                 or run it with the scheme's base transport",
                                s.transport
                            ),
                        ));
                    }
                }
                if let (true, Some(w)) = (st.over_tls(), persistent) {
                    return Err(ConfigError::new(
                        format!("workload[{w}].connection"),
                        format!(
                            "'{}' opens a TLS connection per flow on the testbed; persistent \
                             connections over TLS are not run there",
                            s.transport
                        ),
                    ));
                }
            }
            Stack::Runtime if tb.shims.get(i).is_some_and(Option::is_some) => {
                return Err(ConfigError::new(
                    format!("{here}.shim"),
                    "the T-RACKs shim runs beside Linux's TCP; this scheme runs on tailcut's engines                      over UDP (give it a kernel transport, not in testbed.runtime)",
                ));
            }
            Stack::Runtime => {}
        }
        if s.applies_to.is_some() {
            return Err(ConfigError::new(
                format!("{here}.applies_to"),
                "every component runs on the scheme's stack on the testbed",
            ));
        }
        stacks.push(st);
    }
    for (k, name) in tb.runtime.iter().enumerate() {
        if !exp.schemes.iter().any(|s| &s.name == name) {
            let names: Vec<&str> = exp.schemes.iter().map(|s| s.name.as_str()).collect();
            return Err(ConfigError::new(
                format!("testbed.runtime[{k}]"),
                format!("no scheme is named '{name}' (the schemes: {})", names.join(", ")),
            ));
        }
    }
    if exp.other_traffic.is_some() {
        return Err(ConfigError::new(
            "other_traffic",
            "not supported on the testbed (every component uses the scheme's stack)",
        ));
    }
    if tb.pcap.is_some() {
        let mut seen = BTreeMap::new();
        for s in &exp.schemes {
            if let Some(other) = seen.insert(capture_prefix(&s.name), &s.name) {
                return Err(ConfigError::new(
                    "testbed.pcap",
                    format!(
                        "schemes '{other}' and '{}' would write the same capture files; rename one",
                        s.name
                    ),
                ));
            }
        }
    }
    Ok(stacks)
}

/// The start of a scheme's capture file names: its name, with what a file name should not hold
/// replaced.
fn capture_prefix(scheme: &str) -> String {
    let safe: String = scheme
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.")
}

/// Which stack runs a scheme on the testbed's hosts.
#[derive(Clone, Debug, PartialEq)]
pub enum Stack {
    /// Linux's own TCP, MPTCP or DCTCP (`tailcut_scheme::driver::KERNEL_STACKS`) through the kernel
    /// agent.
    Kernel,
    /// tailcut's engines on UDP sockets (`tailcut-net`) through the runtime agent: every other
    /// scheme the runtime can run.
    Runtime,
}

impl Stack {
    pub fn name(&self) -> &'static str {
        match self {
            Stack::Kernel => "kernel",
            Stack::Runtime => "runtime",
        }
    }
}

/// How scheme `s` runs on the testbed: its stack, the scheme as that stack resolved it, and the switch
/// queues it runs on.
#[derive(Clone, Debug)]
pub struct SchemeStack {
    pub stack: Stack,
    /// The scheme resolved for `stack` (the registry's resolution for the kernel; with the socket
    /// defaults under the entry's keys for the runtime): the one resolution every later decision
    /// reads (TLS, DCTCP, DCQUIC's paths, CloudBurst's pacing).
    pub spec: tailcut_scheme::SchemeSpec,
    /// The scheme's own `network`, or the experiment's with the scheme's switch default applied.
    pub queues: topo::SwitchQueues,
    /// Whether those queues trim payloads (CP's switch half).
    pub trims: bool,
}

impl SchemeStack {
    /// Whether the kernel stack carries the scheme's flows over TLS 1.3 (the scheme's engine is TCP
    /// with TLS: `tcp_tls13`, `dctcp_tls13`).
    pub fn over_tls(&self) -> bool {
        self.stack == Stack::Kernel && matches!(self.spec.engine, tailcut_scheme::EngineSpec::Tls { .. })
    }

    /// A kernel scheme's `reconnect_after` (`tcp_reconnect`, `dctcp_reconnect`: the agent's
    /// reconnecting client), or `None` when its clients never reconnect.
    pub fn reconnect_after(&self) -> Option<Dur> {
        match (&self.stack, &self.spec.engine) {
            (Stack::Kernel, tailcut_scheme::EngineSpec::Reconnect { reconnect_after, .. }) => {
                Some(*reconnect_after)
            }
            _ => None,
        }
    }

    /// Whether the kernel stack runs DCTCP (tailcut's BPF DCTCP): the scheme's TCP is DCTCP, or the
    /// entry sets a `congestion_control`, which only the DCTCP stacks take on the kernel (any other
    /// kind is then refused by [`scheme_kernel_settings`] rather than run as something else).
    fn kernel_dctcp(&self, s: &SchemeConfig) -> bool {
        use tailcut_proto::tcp::CongestionControl;
        self.stack == Stack::Kernel
            && (self
                .spec
                .engine
                .tcp()
                .is_some_and(|c| matches!(c.congestion_control, CongestionControl::Dctcp { .. }))
                || s.params.contains_key("congestion_control"))
    }
}

/// How scheme `s` runs ([`SchemeStack`]): the queues are the scheme's own `network`, or the
/// experiment's with the scheme's switch default applied (CP's trimming, CloudBurst's class), as the
/// simulator builds them (`tailcut_sim::run`). A transport Linux runs runs on Linux unless
/// `testbed.runtime` names the scheme; every other one on the runtime, resolved for sockets on a
/// fabric that trims where its queues say so. Errors are relative to the scheme's table.
pub fn stack(exp: &Experiment, tb: &TestbedConfig, s: &SchemeConfig) -> Result<SchemeStack, ConfigError> {
    use tailcut_scheme::{resolve_for, Driver, Network as Features};
    let queues = |spec: &tailcut_scheme::SchemeSpec| match &s.network {
        Some(n) => n.clone(),
        None => tailcut_sim::transport::Transport::from(spec.clone()).switch_queues(&exp.network),
    };
    let trimming = |q: &topo::SwitchQueues| matches!(q.aqm, tailcut_sim::net::aqm::AqmConfig::Trim { .. });
    let kernel = tailcut_scheme::driver::KERNEL_STACKS
        .iter()
        .any(|(name, _)| *name == s.transport)
        && !tb.runtime.contains(&s.name);
    if kernel {
        let spec = resolve_for(&s.transport, &s.params, Driver::Kernel)?;
        let queues = queues(&spec);
        return Ok(SchemeStack {
            stack: Stack::Kernel,
            trims: trimming(&queues),
            spec,
            queues,
        });
    }
    // Resolved as if the fabric trimmed, then checked against whether its queues do.
    let spec = resolve_for(&s.transport, &s.params, Driver::Sockets(Features { trims: true }))?;
    let queues = queues(&spec);
    let trims = trimming(&queues);
    tailcut_scheme::driver::check(&spec, Driver::Sockets(Features { trims }))?;
    Ok(SchemeStack {
        stack: Stack::Runtime,
        spec,
        queues,
        trims,
    })
}

/// The simulator's `congestion_control` parameter of a TCP-based scheme.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SimCongestionControl {
    kind: String,
    g: Option<f64>,
}

/// How scheme `s` (on the kernel stack `st`) runs in the kernels: `[testbed]` with the scheme's
/// `min_rto`, `ecn`, `sack` and `loss_detection` applied, and the gain of tailcut's BPF DCTCP when it
/// runs that. Error paths are relative to the scheme's table.
fn scheme_kernel_settings(
    tb: &TestbedConfig,
    s: &SchemeConfig,
    st: &SchemeStack,
) -> Result<(TestbedConfig, Option<f64>), ConfigError> {
    let mut tb = tb.clone();
    if let Some(v) = s.params.get("min_rto") {
        let d: Dur = serde_json::from_value(v.clone())
            .map_err(|e| ConfigError::new("params.min_rto", e.to_string()))?;
        tb.rto_min_us = Some(d.0 / 1000);
    }
    if let Some(v) = s.params.get("ecn") {
        tb.ecn = v
            .as_bool()
            .ok_or_else(|| ConfigError::new("params.ecn", "must be true or false"))?;
    }
    if let Some(v) = s.params.get("sack") {
        tb.sack = v
            .as_bool()
            .ok_or_else(|| ConfigError::new("params.sack", "must be true or false"))?;
    }
    // Linux's loss detection: RACK (`tcp_recovery` bit 1) and TLP (`tcp_early_retrans` 3) on by
    // default; without them it is RFC 6675's DupThresh, the simulator's "dupthresh".
    if let Some(v) = s.params.get("loss_detection") {
        let (recovery, early) = match v.as_str() {
            Some("dupthresh") => ("0", "0"),
            Some("rack_tlp") => ("1", "3"),
            _ => {
                return Err(ConfigError::new(
                    "params.loss_detection",
                    format!("must be \"rack_tlp\" or \"dupthresh\", got {v}"),
                ))
            }
        };
        tb.sysctls.insert("net.ipv4.tcp_recovery".into(), recovery.into());
        tb.sysctls
            .insert("net.ipv4.tcp_early_retrans".into(), early.into());
    }
    let dctcp = crate::dctcp::CONFIG_NAME;
    if !st.kernel_dctcp(s) {
        let g = (tb.congestion_control.as_deref() == Some(dctcp)).then_some(crate::dctcp::DEFAULT_G);
        return Ok((tb, g));
    }
    if let Some(cc) = tb.congestion_control.as_deref().filter(|&cc| cc != dctcp) {
        return Err(ConfigError::new(
            "transport",
            format!(
                "'dctcp' runs tailcut's BPF DCTCP on every socket, but testbed.congestion_control = '{cc}'; \
                 remove one of them"
            ),
        ));
    }
    if s.params.get("ecn").and_then(|v| v.as_bool()) == Some(false) {
        return Err(ConfigError::new(
            "params.ecn",
            "DCTCP needs ECN (its CC negotiates it whatever tcp_ecn says)",
        ));
    }
    let mut g = crate::dctcp::DEFAULT_G;
    if let Some(v) = s.params.get("congestion_control") {
        let cc: SimCongestionControl = serde_json::from_value(v.clone())
            .map_err(|e| ConfigError::new("params.congestion_control", e.to_string()))?;
        if cc.kind != dctcp {
            return Err(ConfigError::new(
                "params.congestion_control.kind",
                format!("the testbed's dctcp is the BPF DCTCP, not '{}'", cc.kind),
            ));
        }
        g = cc.g.unwrap_or(g);
        crate::dctcp::g_fixed(g).map_err(|e| e.at("params.congestion_control.g"))?;
    }
    tb.congestion_control = Some(dctcp.to_string());
    Ok((tb, Some(g)))
}

/// The MPTCP `signal` endpoint ports of a scheme (see `HostSetup::mptcp_join_ports`): on hosts with
/// one NIC, `subflows - 1` ports after the agents' port, `subflows` defaulting to the simulator's
/// (`MptcpConfig::default`), so that one file opens as many subflows in both worlds. Hosts with
/// several NICs get one subflow per NIC instead (`HostSetup::mptcp_endpoints`), and no ports. `nics`
/// is the most NICs any host has ([`most_nics`]). Error paths are relative to the scheme's table
/// (`params.subflows`).
fn mptcp_join_ports(tb: &TestbedConfig, s: &SchemeConfig, nics: usize) -> Result<Vec<u16>, ConfigError> {
    let bad = |field: &str, reason: String| ConfigError::new(field, reason).at("params");
    let given = s.params.get("subflows");
    if s.transport != "mptcp" {
        return match (given, s.params.get("coupled")) {
            (Some(_), _) => Err(bad(
                "subflows",
                format!("only mptcp has subflows, not {}", s.transport),
            )),
            (_, Some(_)) => Err(bad(
                "coupled",
                format!("only mptcp has coupled subflows, not {}", s.transport),
            )),
            (None, None) => Ok(Vec::new()),
        };
    }
    if let Some(c) = s.params.get("coupled") {
        if c.as_bool() != Some(false) {
            return Err(bad(
                "coupled",
                format!(
                    "upstream Linux MPTCP has no coupled congestion control (each subflow runs its own); \
                     only coupled = false describes it, got {c}"
                ),
            ));
        }
    }
    let subflows = match given {
        None => u64::from(tailcut_proto::mptcp::MptcpConfig::default().subflows),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_SUBFLOWS).contains(n))
            .ok_or_else(|| {
                bad(
                    "subflows",
                    format!("must be an integer in 1..={MAX_SUBFLOWS}, got {v}"),
                )
            })?,
    };
    if nics > 1 {
        return match given {
            Some(_) => Err(bad(
                "subflows",
                "on hosts with several NICs Linux MPTCP opens one subflow per NIC".into(),
            )),
            None => Ok(Vec::new()),
        };
    }
    (1..subflows)
        .map(|k| {
            u16::try_from(u64::from(tb.port) + k).map_err(|_| {
                bad(
                    "subflows",
                    format!("testbed.port {} leaves no room for {subflows} ports", tb.port),
                )
            })
        })
        .collect()
}

/// The most links any host has.
fn most_nics(spec: &topo::TopoSpec) -> usize {
    let mut nics = vec![0usize; spec.nodes.len()];
    for l in &spec.links {
        nics[l.a as usize] += 1;
        nics[l.b as usize] += 1;
    }
    spec.nodes
        .iter()
        .zip(&nics)
        .filter(|(n, _)| n.kind == topo::NodeKind::Host)
        .map(|(_, &k)| k)
        .max()
        .unwrap_or(0)
}

fn scale_rates(spec: &mut topo::TopoSpec, faults: &mut [FaultConfig], k: f64) {
    for l in &mut spec.links {
        l.rate_bps = ((l.rate_bps as f64) * k).round().max(1.0) as u64;
    }
    for f in faults {
        if let FaultConfig::Degrade { rate, .. } = f {
            rate.0 = ((rate.0 as f64) * k).round().max(1.0) as u64;
        }
    }
}

/// Per flow (in `flows` order), the persistent connection it shares, numbered from 0, or `None` for a
/// connection of its own. As in the simulator (`sim/app.rs`), a component with `connection =
/// "persistent"` keeps `connections_per_pair` connections per (source, destination) and hands its
/// flows to them round robin in start order.
fn persistent_connections(exp: &Experiment, flows: &[FlowSpec]) -> Vec<Option<u32>> {
    let mut turn: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let mut ids: HashMap<(u32, u32, u32, u32), u32> = HashMap::new();
    flows
        .iter()
        .map(|f| {
            let n = exp.workload[f.component as usize].persistent_connections_per_pair()?;
            let t = turn.entry((f.component, f.src, f.dst)).or_insert(0);
            let slot = *t % n.max(1);
            *t += 1;
            let next = ids.len() as u32;
            Some(*ids.entry((f.component, f.src, f.dst, slot)).or_insert(next))
        })
        .collect()
}

/// One flow's outcome, with the simulator's `flows.parquet` column names where they apply.
#[derive(Clone, Debug, Serialize)]
pub struct FlowRow {
    pub flow_id: u64,
    pub scheme: String,
    pub component: String,
    pub src: u32,
    pub dst: u32,
    pub size_bytes: u64,
    pub request_bytes: u64,
    /// Planned start (ns from the run's time zero).
    pub start_ns: u64,
    pub finish_ns: Option<u64>,
    pub fct_ns: Option<u64>,
    pub completed: bool,
    /// `tcpi_total_retrans` of the data sender's socket (segments); kernel stacks only.
    pub retransmitted_segments: Option<u32>,
    /// On the runtime, the flow's sender counters (its engines' `MessageStats`: the request's, plus
    /// the response's for a request/response flow), as the simulator's columns of the same names;
    /// `None` where nothing counted them per flow (a kernel, a failed call, a response whose
    /// acknowledgement never reached its server).
    pub timeouts: Option<u32>,
    pub fast_retransmits: Option<u32>,
    pub retransmitted_bytes: Option<u64>,
    pub redundant_bytes: Option<u64>,
    pub sent_bytes: Option<u64>,
    /// Actual start minus planned start: the agent's own lateness.
    pub start_late_ns: Option<u64>,
    /// The local port of the side that connected (the data receiver for request/response); the
    /// other side listens on `[testbed].port`. A persistent connection's flows share it.
    pub client_port: Option<u16>,
    /// With a reconnecting client (`tcp_reconnect`, `dctcp_reconnect`): how many times the flow's
    /// call was re-sent on a new connection (0: answered on the connection it was first written on);
    /// `None` for other schemes.
    pub reconnects: Option<u32>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SchemeSummary {
    pub scheme: String,
    /// `kernel` (Linux's stack) or `runtime` (tailcut's engines on UDP sockets): [`Stack`].
    pub stack: &'static str,
    pub flows: u64,
    pub completed: u64,
    /// Nearest rank over every flow, unfinished ones infinitely late (`docs/metrics.md`): infinite
    /// (`"inf"` in the file) when the rank falls among the unfinished flows, NaN (`null`) without flows.
    #[serde(serialize_with = "fct_percentile_json")]
    pub fct_p50_ns: f64,
    #[serde(serialize_with = "fct_percentile_json")]
    pub fct_p99_ns: f64,
    /// Over the completed flows only.
    pub fct_mean_ns: Option<u64>,
    /// Sums over hosts of the namespaces' counters during the run.
    pub kernel: BTreeMap<String, u64>,
    pub tun_tx_drops: u64,
    /// Packets the emulated fabric dropped (queues, loss models, down links, no route).
    pub fabric_drops: u64,
    pub fabric: FabricReport,
    /// The congestion control the sockets used (`TCP_CONGESTION`), if the run set one: with DCTCP, the
    /// name the BPF CC was registered under.
    pub congestion_control: Option<String>,
    /// With DCTCP: the BPF program's counters over the scheme's run.
    pub dctcp: Option<crate::dctcp::DctcpStats>,
    /// Whether the run kept its timing (`crate::timing`).
    pub timing: crate::timing::TimingVerdict,
    /// With a reconnecting client (`tcp_reconnect`, `dctcp_reconnect`): the connections its clients
    /// gave up for a new one from their next NIC, over every host (the simulator's `tcp_reconnects`);
    /// `None` for other schemes.
    pub reconnects: Option<u64>,
    /// With DCQUIC on the runtime: the proactive migrations its clients made (`dcquic_migrations`
    /// of the simulator), summed over connections, each as of its last finished call; `None` for
    /// other schemes.
    pub migrations: Option<u64>,
}

/// A runtime message's sender counters, as its agent reported them.
#[derive(Clone, Copy, Debug)]
struct RuntimeCounters {
    timeouts: u32,
    fast_retransmits: u32,
    retransmitted_bytes: u64,
    redundant_bytes: u64,
    sent_bytes: u64,
}

impl RuntimeCounters {
    fn plus(&self, o: &RuntimeCounters) -> RuntimeCounters {
        RuntimeCounters {
            timeouts: self.timeouts + o.timeouts,
            fast_retransmits: self.fast_retransmits + o.fast_retransmits,
            retransmitted_bytes: self.retransmitted_bytes + o.retransmitted_bytes,
            redundant_bytes: self.redundant_bytes + o.redundant_bytes,
            sent_bytes: self.sent_bytes + o.sent_bytes,
        }
    }
}

/// How long a run waits at least, once every flow is accounted for, for the counters of responses
/// whose acknowledgement has yet to reach their server (a round trip or a retransmission after the
/// client got the reply); [`RuntimePlan::responses_settle`] gives each scheme's wait.
const RESPONSES_SETTLE: Duration = Duration::from_secs(1);

/// How scheme `s` runs on the runtime agents: its entry, the fabric's trimming, the hosts' MTU, and
/// for DCQUIC a CA and certificate made for this run; `st` is the scheme as [`stack`] resolved it.
/// `flows` bounds the associations a server may have to hold at once.
fn runtime_plan(
    exp: &Experiment,
    tb: &TestbedConfig,
    s: &SchemeConfig,
    st: &SchemeStack,
    flows: usize,
) -> Result<RuntimePlan, String> {
    use tailcut_scheme::driver::{runtime_family, RuntimeFamily};
    let dcquic = runtime_family(&st.spec).ok() == Some(RuntimeFamily::Dcquic);
    // As the simulator: a CloudBurst entry without its own `nic_rate` paces at its host's NIC
    // (`RuntimePlan::for_host`), not at the runtime's socket default (which the resolution for
    // sockets laid under the entry; an entry's `nic_rate = "host"` was refused there).
    let nic_rate_from_host = matches!(st.spec.engine, tailcut_scheme::EngineSpec::CloudBurst { .. })
        && !s.params.contains_key("nic_rate");
    Ok(RuntimePlan {
        transport: s.transport.clone(),
        params: s.params.clone(),
        nic_rate_from_host,
        trims: st.trims,
        mtu: tb.mtu,
        seed: exp.seed,
        host: 0,
        max_associations: flows.max(64),
        call_timeout_ns: exp.max_time.0 + tb.grace.0,
        per_nic_paths: dcquic,
        tls: if dcquic {
            Some(TlsMaterial::generate(TLS_SERVER_NAME)?)
        } else {
            None
        },
    })
}

/// The name in a run's DCQUIC certificate, which every client asks for.
const TLS_SERVER_NAME: &str = "tailcut-testbed";

/// Namespace counters reported in the summary.
const KERNEL_COUNTERS: [&str; 11] = [
    "Tcp.ActiveOpens",
    "TcpExt.TCPTimeouts",
    "Tcp.RetransSegs",
    "TcpExt.TCPLossProbes",
    "TcpExt.TCPSackRecovery",
    "TcpExt.TCPRenoRecovery",
    "TcpExt.TCPFastRetrans",
    "IpExt.InCEPkts",
    "MPTcpExt.MPJoinSynAckRx",
    // The runtime's datagrams a receiving socket dropped (its buffer full): losses the fabric did not
    // make.
    "Udp.RcvbufErrors",
    "Udp.InDatagrams",
];

/// A completion-time percentile in `testbed.json` as the simulator's `summary.json` writes one
/// (`docs/metrics.md`): nanoseconds, the string `"inf"` when it falls among the unfinished flows, `null`
/// without flows.
fn fct_percentile_json<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_nan() {
        s.serialize_none()
    } else if v.is_infinite() {
        s.serialize_str("inf")
    } else {
        s.serialize_u64(*v as u64)
    }
}

/// A scheme's timeouts for the run's last lines: Linux's `TCPTimeouts` over the namespaces. A runtime
/// scheme's TCP runs in user space, which that counter never sees: its per-flow counts are in the
/// flows table, where the Python front reads them with what each engine counts (DCQUIC's QUIC counts
/// no timeouts, `tailcut.summary.NOT_MEASURED`), so no number is printed here for it.
fn timeouts_text(s: &SchemeSummary) -> String {
    if s.stack == Stack::Kernel.name() {
        let n = s.kernel.get("TcpExt.TCPTimeouts").copied().unwrap_or(0);
        format!("timeouts {n} (kernel)")
    } else {
        "timeouts per flow in the flows table (runtime)".into()
    }
}

/// A percentile of [`SchemeSummary`] for the run's last lines: nanoseconds, `inf` or `-`.
fn fct_percentile_text(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v.is_infinite() {
        "inf".into()
    } else {
        format!("{}", v as u64)
    }
}

/// Runs every scheme of `exp` on fresh hosts and returns the flows and summaries. `agent` is the
/// `tailcut-testbed` command, started in every host as `agent`. With `[testbed.pcap]`, each scheme's
/// captures go to `pcap_dir` (`SCHEME.sent.pcap`, `SCHEME.delivered.pcap`). What the testbed cannot
/// run is a [`TestbedError::Config`], found before any scheme runs.
pub fn run_experiment(
    exp: &Experiment,
    tb: &TestbedConfig,
    agent: &SelfCommand,
    pcap_dir: Option<&Path>,
) -> Result<(Vec<FlowRow>, Vec<SchemeSummary>), TestbedError> {
    let mut base = topo::build(&exp.topology, &exp.network).map_err(|e| e.at("topology"))?;
    scale_rates(&mut base, &mut [], tb.rate_scale);
    let net = Network::unrouted(&base, exp.seed);
    let stacks = check(exp, tb, net.hosts.len())?;
    // A missing tool should stop the run before any scheme has run, not after the first.
    for (i, (s, st)) in exp.schemes.iter().zip(&stacks).enumerate() {
        if st.stack != Stack::Kernel {
            continue;
        }
        let (_, dctcp_g) = scheme_kernel_settings(tb, s, st).map_err(|e| e.at(&format!("schemes[{i}]")))?;
        if dctcp_g.is_some() {
            crate::dctcp::available().map_err(|e| format!("schemes.{}: {e}", s.name))?;
        }
    }
    let capture = match (&tb.pcap, pcap_dir) {
        (None, _) => None,
        (Some(p), Some(dir)) => Some(CaptureSpec {
            dir: dir.to_path_buf(),
            prefix: String::new(),
            snaplen: p.snaplen,
            max_bytes: p.max_bytes.0,
        }),
        (Some(_), None) => {
            return Err(ConfigError::new("testbed.pcap", "this run has no folder to capture into").into())
        }
    };
    let (rack, nic_rate_bps) = net.host_info();
    // The simulator's generator with the same seed. It sees the scaled NIC rates, so that a `load`
    // stays the same fraction of the links; with rate_scale = 1 (or arrivals given per second) the
    // flows are exactly the simulator's.
    let flows = workload::generate(&exp.workload, &HostInfo { rack, nic_rate_bps }, exp.seed)?;
    let mut rows = Vec::new();
    let mut summaries = Vec::new();
    for (i, s) in exp.schemes.iter().enumerate() {
        let capture = capture.clone().map(|c| CaptureSpec {
            prefix: capture_prefix(&s.name),
            ..c
        });
        let (r, sum) = run_scheme(exp, tb, i, &stacks[i], &flows, agent, capture)?;
        rows.extend(r);
        summaries.push(sum);
    }
    Ok((rows, summaries))
}

/// Runs scheme `i` of `exp` (checked by [`check`]) as [`check`] found it runs (`st`).
fn run_scheme(
    exp: &Experiment,
    tb: &TestbedConfig,
    i: usize,
    st: &SchemeStack,
    flows: &[FlowSpec],
    agent: &SelfCommand,
    capture: Option<CaptureSpec>,
) -> Result<(Vec<FlowRow>, SchemeSummary), TestbedError> {
    let s = &exp.schemes[i];
    let shim = tb.shims.get(i).cloned().flatten();
    let here = format!("schemes[{i}]");
    let mut spec = topo::build(&exp.topology, &st.queues).map_err(|e| e.at("topology"))?;
    let mut faults = exp.faults.clone();
    scale_rates(&mut spec, &mut faults, tb.rate_scale);
    let kernel = st.stack == Stack::Kernel;
    let mptcp = kernel && matches!(st.spec.engine, tailcut_scheme::EngineSpec::Mptcp { .. });
    let (tb, dctcp_g) = if kernel {
        scheme_kernel_settings(tb, s, st).map_err(|e| e.at(&here))?
    } else {
        (tb.clone(), None)
    };
    let tb = &tb;
    let join_ports = if kernel {
        mptcp_join_ports(tb, s, most_nics(&spec)).map_err(|e| e.at(&here))?
    } else {
        Vec::new()
    };
    let base_rtt_ns = crate::timing::base_rtt_ns(&spec);
    // Registered before the hosts exist and unregistered when this function returns (or when the
    // process dies: the loader is tied to this thread).
    let mut dctcp = dctcp_g
        .map(crate::dctcp::Dctcp::load)
        .transpose()
        .map_err(|e| format!("schemes.{}: {e}", s.name))?;
    let congestion_control = match &dctcp {
        Some(d) => Some(d.name().to_string()),
        None => tb.congestion_control.clone(),
    };
    // Each host's NIC rate (scaled), which CloudBurst paces at where the entry leaves it to the host.
    let host_nic_bps = Network::unrouted(&spec, exp.seed).host_info().1;
    // The faults count from the experiment's time zero, as the flows' start times do (not from the
    // fabric's start, which comes before the agents start and listen): checked here, before any
    // namespace is made, and handed to the fabric at the time zero.
    tailcut_sim::fault::plan(&faults, &Network::unrouted(&spec, exp.seed), exp.seed)?;
    let bed = Testbed::start(TestbedSpec {
        topo: spec,
        faults: Vec::new(),
        seed: exp.seed,
        host: HostSetup {
            mtu: tb.mtu,
            sysctls: tb.host_sysctls(),
            mptcp_join_ports: join_ports.clone(),
            mptcp_endpoints: mptcp && join_ports.is_empty(),
            ..HostSetup::default()
        },
        loop_cfg: LoopConfig {
            spin: tb.spin,
            ..LoopConfig::default()
        },
        capture,
        shim,
    })?;
    let hosts = bed.hosts().to_vec();
    let before: Vec<_> = hosts
        .iter()
        .map(|h| h.netstat())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    // Per host: the flows it connects for. A plain flow's sender connects; for request/response the
    // client (the data receiver) connects and sends the request.
    let runtime = match st.stack {
        Stack::Kernel => None,
        Stack::Runtime => {
            Some(runtime_plan(exp, tb, s, st, flows.len()).map_err(|e| format!("schemes.{}: {e}", s.name))?)
        }
    };
    // A certificate made for this run, which every agent both presents and trusts.
    let tls = match st.over_tls() {
        true => Some(TlsMaterial::generate(TLS_SERVER_NAME).map_err(|e| format!("schemes.{}: {e}", s.name))?),
        false => None,
    };
    let reconnect = st.reconnect_after();
    let mut plans: Vec<Plan> = hosts
        .iter()
        .enumerate()
        .map(|(h, _)| Plan {
            port: tb.port,
            mptcp,
            congestion_control: congestion_control.clone(),
            flows: Vec::new(),
            runtime: runtime.as_ref().map(|r| r.for_host(h as u32, host_nic_bps[h])),
            tls: tls.clone(),
            reconnect: reconnect.map(|after| ReconnectPlan {
                after_ns: after.0,
                nics: hosts[h].ips.iter().map(|&ip| IpAddr::V4(ip)).collect(),
            }),
        })
        .collect();
    let conns = persistent_connections(exp, flows);
    for (f, conn) in flows.iter().zip(conns) {
        let (from, to, data, reply) = if f.request_bytes > 0 {
            (f.dst, f.src, f.request_bytes, f.size_bytes)
        } else {
            (f.src, f.dst, f.size_bytes, 0)
        };
        let (mine, theirs) = (&hosts[from as usize].ips, &hosts[to as usize].ips);
        // As in the simulator, only DCQUIC uses a multi-homed host's other NICs (path k from its
        // k-th NIC to the peer's address on the same plane, `addr.rs`: the paths it migrates
        // over); every other scheme's paths are UDP source ports from the first NIC, spread by ECMP.
        let per_nic = runtime.as_ref().is_some_and(|r| r.per_nic_paths);
        let paths = if per_nic && mine.len() > 1 {
            (0..mine.len())
                .map(|k| {
                    (
                        IpAddr::V4(mine[k]),
                        SocketAddr::V4(SocketAddrV4::new(theirs[k % theirs.len()], tb.port)),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        plans[from as usize].flows.push(PlannedFlow {
            id: f.id,
            to: SocketAddr::V4(SocketAddrV4::new(theirs[0], tb.port)),
            data,
            reply,
            start_ns: f.start.0,
            conn,
            paths,
        });
    }
    let (tx, rx) = mpsc::channel::<Event>();
    let mut agents: Vec<Child> = Vec::new();
    let mut stdins = Vec::new();
    let stop_all = |agents: &mut Vec<Child>| {
        for a in agents.iter_mut() {
            let _ = a.kill();
            let _ = a.wait();
        }
    };
    for (h, plan) in hosts.iter().zip(&plans) {
        let mut cmd = agent.command("agent");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = h
            .spawn(&mut cmd)
            .map_err(|e| format!("host {}: cannot start the agent: {e}", h.name))?;
        let mut plan_json = serde_json::to_vec(plan).map_err(|e| e.to_string())?;
        plan_json.push(b'\n');
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(&plan_json)
            .map_err(|e| format!("host {}: agent stdin: {e}", h.name))?;
        stdins.push(stdin);
        let stdout = child.stdout.take().expect("piped");
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(e) = serde_json::from_str::<Event>(&line) {
                    if tx.send(e).is_err() {
                        return;
                    }
                }
            }
        });
        agents.push(child);
    }
    drop(tx);
    // Every agent listens before any flow starts: wait for all, then send the time zero.
    let mut ready = 0;
    let started = monotonic_ns();
    while ready < hosts.len() {
        let left = (started + AGENTS_START.as_nanos() as u64).saturating_sub(monotonic_ns());
        match rx.recv_timeout(Duration::from_nanos(left)) {
            Ok(Event::Ready) => ready += 1,
            Ok(_) => {}
            Err(_) => {
                stop_all(&mut agents);
                return Err(TestbedError::Run(format!(
                    "only {ready} of {} agents were listening after {} s",
                    hosts.len(),
                    AGENTS_START.as_secs()
                )));
            }
        }
    }
    let zero = monotonic_ns() + WARMUP.as_nanos() as u64;
    if let Err(e) = bed.faults_from(&faults, zero) {
        stop_all(&mut agents);
        return Err(e);
    }
    for (h, mut stdin) in hosts.iter().zip(stdins) {
        stdin
            .write_all(format!("{zero}\n").as_bytes())
            .map_err(|e| format!("host {}: agent stdin: {e}", h.name))?;
    }
    let n = flows.len();
    let mut start: Vec<Option<u64>> = vec![None; n];
    let mut client_port: Vec<Option<u16>> = vec![None; n];
    let mut finish: Vec<Option<u64>> = vec![None; n];
    let mut retrans: Vec<Option<u32>> = vec![None; n];
    // On the runtime: each flow's request's counters (its client's), and a request/response flow's
    // response's (its server's).
    let mut counters: Vec<Option<RuntimeCounters>> = vec![None; n];
    let mut response_counters: Vec<Option<RuntimeCounters>> = vec![None; n];
    let mut error: Vec<Option<String>> = vec![None; n];
    // With a reconnecting client: the reconnections, and per flow how often its call was re-sent.
    let mut reconnections = 0u64;
    let mut resent = vec![0u32; n];
    let mut done = 0;
    let deadline = zero + exp.max_time.0 + tb.grace.0;
    // Every flow finishes (and the sender of a per-flow connection reports its retransmissions), or
    // the deadline passes.
    // On the runtime every flow's client reports its request's counters (or an error) instead.
    let wanted_retrans = plans
        .iter()
        .flat_map(|p| &p.flows)
        .filter(|f| !kernel || f.conn.is_none())
        .count();
    let on_persistent: std::collections::HashSet<u64> = plans
        .iter()
        .flat_map(|p| &p.flows)
        .filter(|f| f.conn.is_some())
        .map(|f| f.id)
        .collect();
    // Each flow counts once, whichever of its final lines (counters, retransmissions, an error)
    // comes first.
    let mut got_retrans = 0;
    let mut reported = vec![false; n];
    // And every flow's connector reported its port (or an error): on a persistent connection the
    // port comes from the connecting agent and the finish from its peer, through different pipes, so
    // the last finish can overtake the last port.
    let mut accounted = vec![false; n];
    let mut got_ports = 0;
    // Then the responses of the answered request/response flows report their counters, when their
    // acknowledgement reached the server: waited for at most `settle` after the rest.
    let settle = runtime
        .as_ref()
        .map_or(RESPONSES_SETTLE, |p| p.responses_settle(RESPONSES_SETTLE));
    let reply_of: Vec<bool> = flows.iter().map(|f| f.request_bytes > 0).collect();
    let responses_missing = |finish: &[Option<u64>], got: &[Option<RuntimeCounters>]| {
        !kernel && (0..n).any(|i| reply_of[i] && finish[i].is_some() && got[i].is_none())
    };
    let mut settle_until: Option<u64> = None;
    // DCQUIC: each connection's client's migrations, at its last reported call.
    let mut migrations: BTreeMap<u64, u64> = BTreeMap::new();
    loop {
        let now = monotonic_ns();
        if now >= deadline {
            break;
        }
        if done >= n && got_retrans >= wanted_retrans && got_ports >= n {
            let until = *settle_until.get_or_insert(now + settle.as_nanos() as u64);
            if now >= until || !responses_missing(&finish, &response_counters) {
                break;
            }
        }
        let wait =
            Duration::from_nanos(deadline.saturating_sub(monotonic_ns())).min(Duration::from_millis(100));
        match rx.recv_timeout(wait) {
            Ok(Event::Ready) => {}
            Ok(Event::Start { id, t }) => start[id as usize] = Some(t),
            Ok(Event::Port { id, port }) => {
                if let Some(p) = client_port.get_mut(id as usize) {
                    *p = Some(port);
                    if !std::mem::replace(&mut accounted[id as usize], true) {
                        got_ports += 1;
                    }
                }
            }
            Ok(Event::Finish { id, t }) => {
                if finish[id as usize].replace(t).is_none() {
                    done += 1;
                }
            }
            // A persistent connection's count is not one flow's: an acceptor reports one only for a
            // connection that carried a single call and ended cleanly, which a connection a
            // reconnecting client gave up after one call can look like.
            Ok(Event::Retrans { id, .. }) if on_persistent.contains(&id) => {}
            Ok(Event::Retrans { id, segments }) => {
                retrans[id as usize] = Some(segments);
                if !std::mem::replace(&mut reported[id as usize], true) {
                    got_retrans += 1;
                }
            }
            Ok(Event::Counters {
                id,
                response,
                timeouts,
                fast_retransmits,
                retransmitted_bytes,
                redundant_bytes,
                sent_bytes,
            }) => {
                let c = RuntimeCounters {
                    timeouts,
                    fast_retransmits,
                    retransmitted_bytes,
                    redundant_bytes,
                    sent_bytes,
                };
                if response {
                    if let Some(slot) = response_counters.get_mut(id as usize) {
                        *slot = Some(c);
                    }
                } else if let Some(slot) = counters.get_mut(id as usize) {
                    *slot = Some(c);
                    if !std::mem::replace(&mut reported[id as usize], true) {
                        got_retrans += 1;
                    }
                }
            }
            Ok(Event::Error { id, msg }) => {
                if (id as usize) < n {
                    error[id as usize] = Some(msg);
                    if !std::mem::replace(&mut reported[id as usize], true) {
                        got_retrans += 1;
                    }
                    if !std::mem::replace(&mut accounted[id as usize], true) {
                        got_ports += 1;
                    }
                }
            }
            Ok(Event::Migrations { conn, total }) => {
                let m = migrations.entry(conn).or_insert(0);
                *m = (*m).max(total);
            }
            Ok(Event::Reconnect { resent: ids, .. }) => {
                reconnections += 1;
                for id in ids {
                    if let Some(k) = resent.get_mut(id as usize) {
                        *k += 1;
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    stop_all(&mut agents);
    let dctcp_stats = dctcp.as_mut().map(|d| d.stats()).transpose()?;
    drop(dctcp);
    let after: Vec<_> = hosts
        .iter()
        .map(|h| h.netstat())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut tun_tx_drops = 0;
    for h in &hosts {
        tun_tx_drops += h.tun_tx_drops().map_err(|e| e.to_string())?.iter().sum::<u64>();
    }
    let fabric = bed.stop().map_err(|e| e.to_string())?;
    let kernel = KERNEL_COUNTERS
        .iter()
        .map(|k| {
            let d: u64 = before
                .iter()
                .zip(&after)
                .map(|(b, a)| a.get(k).saturating_sub(b.get(k)))
                .sum();
            (k.to_string(), d)
        })
        .collect();
    // A flow's counters are its messages' summed, as the simulator's (request and response); a
    // request/response flow missing its response's is not counted at all.
    let flow_counters: Vec<Option<RuntimeCounters>> = (0..n)
        .map(|i| match (counters[i], reply_of[i]) {
            (Some(c), false) => Some(c),
            (Some(c), true) => response_counters[i].map(|r| c.plus(&r)),
            (None, _) => None,
        })
        .collect();
    let rows: Vec<FlowRow> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let planned = zero + f.start.0;
            let fin = finish[i].map(|t| t.saturating_sub(zero));
            FlowRow {
                flow_id: f.id,
                scheme: s.name.clone(),
                component: exp.workload[f.component as usize].name.clone(),
                src: f.src,
                dst: f.dst,
                size_bytes: f.size_bytes,
                request_bytes: f.request_bytes,
                start_ns: f.start.0,
                finish_ns: fin,
                fct_ns: finish[i].map(|t| t.saturating_sub(planned)),
                completed: finish[i].is_some(),
                retransmitted_segments: retrans[i],
                timeouts: flow_counters[i].map(|c| c.timeouts),
                fast_retransmits: flow_counters[i].map(|c| c.fast_retransmits),
                retransmitted_bytes: flow_counters[i].map(|c| c.retransmitted_bytes),
                redundant_bytes: flow_counters[i].map(|c| c.redundant_bytes),
                sent_bytes: flow_counters[i].map(|c| c.sent_bytes),
                start_late_ns: start[i].map(|t| t.saturating_sub(planned)),
                client_port: client_port[i],
                reconnects: reconnect.is_some().then_some(resent[i]),
                error: error[i].clone(),
            }
        })
        .collect();
    let mut fcts: Vec<u64> = rows.iter().filter_map(|r| r.fct_ns).collect();
    fcts.sort_unstable();
    let start_lates: Vec<u64> = rows.iter().filter_map(|r| r.start_late_ns).collect();
    let timing = crate::timing::verdict(
        fabric.lateness.p99_ns,
        &start_lates,
        base_rtt_ns,
        tb.timing_bounds(),
    );
    let summary = SchemeSummary {
        scheme: s.name.clone(),
        stack: st.stack.name(),
        flows: n as u64,
        completed: fcts.len() as u64,
        fct_p50_ns: percentile(&fcts, n as u64 - fcts.len() as u64, 500),
        fct_p99_ns: percentile(&fcts, n as u64 - fcts.len() as u64, 990),
        fct_mean_ns: (!fcts.is_empty()).then(|| fcts.iter().sum::<u64>() / fcts.len() as u64),
        kernel,
        tun_tx_drops,
        fabric_drops: fabric.total_dropped(),
        fabric,
        congestion_control,
        dctcp: dctcp_stats,
        timing,
        reconnects: reconnect.is_some().then_some(reconnections),
        migrations: (!migrations.is_empty()).then(|| migrations.values().sum()),
    };
    Ok((rows, summary))
}

/// The folder of a run's captures in its `--out` folder.
const CAPTURE_DIR: &str = "pcap";

/// Removes an earlier run's files from `out` (`--overwrite`), before this run starts: a run that then
/// fails or is interrupted leaves none of them behind looking like its own.
fn remove_outputs(out: &Path) -> Result<(), String> {
    let gone = |r: std::io::Result<()>, p: &Path| match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("--out {}: {e}", p.display())),
        _ => Ok(()),
    };
    for f in crate::outputs::FILES {
        let p = out.join(f);
        gone(std::fs::remove_file(&p), &p)?;
    }
    let p = out.join(CAPTURE_DIR);
    gone(std::fs::remove_dir_all(&p), &p)
}

/// The exit status of a run ended by signal `sig`, as a shell reports a program killed by it.
pub fn interrupted_exit_code(sig: u32) -> i32 {
    128 + sig as i32
}

/// From here on SIGINT (Ctrl-C), SIGTERM or SIGHUP end the run at once, with a line saying so, the
/// status [`interrupted_exit_code`], no results written and this run's captures removed from `out`
/// (and `out` itself when the run made it, `out_existed` false). What the run set up goes as it does
/// when the process is killed: the namespaces, the agents (tied to the thread that started them) and
/// the BPF DCTCP go with the process.
fn stop_on_signals(out: &Path, out_existed: bool) -> Result<(), String> {
    let mut notice =
        tailcut_sys::signal::TermNotice::install().map_err(|e| format!("termination signals: {e}"))?;
    let out = out.to_path_buf();
    std::thread::Builder::new()
        .name("tailcut-signals".into())
        .spawn(move || {
            let Ok(sig) = notice.wait() else {
                return;
            };
            let _ = std::fs::remove_dir_all(out.join(CAPTURE_DIR));
            if !out_existed {
                // Only if empty: nothing else was written there.
                let _ = std::fs::remove_dir(&out);
            }
            let name = match sig {
                1 => "SIGHUP",
                2 => "SIGINT",
                15 => "SIGTERM",
                _ => "a signal",
            };
            eprintln!(
                "tailcut-testbed: interrupted by {name}: the run stopped before its end and wrote no \
                 results (no flows.json, ports.json, testbed.json or captures in {})",
                out.display()
            );
            std::process::exit(interrupted_exit_code(sig));
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    Ok(())
}

/// `run FILE --out DIR [--overwrite] [--allow-invalid-timing]`. `Ok(false)`: the outputs are written
/// but a scheme's run did not keep its timing and invalid timing was not allowed (the binary then
/// exits with `timing::EXIT_INVALID_TIMING`). SIGINT, SIGTERM and SIGHUP end it without outputs
/// ([`stop_on_signals`]).
pub fn cli(args: &[String], me: &SelfCommand) -> Result<bool, TestbedError> {
    let file = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .ok_or_else(|| ConfigError::new("run", "missing FILE"))?;
    let out: String = tailcut_proto::flags::value(args, "--out")?
        .ok_or_else(|| ConfigError::new("run", "missing --out DIR"))?;
    let out = Path::new(&out);
    if out.exists() && !tailcut_proto::flags::present(args, "--overwrite") {
        return Err(ConfigError::new(
            "--out",
            format!(
                "{}: exists (pass --overwrite to replace its files)",
                out.display()
            ),
        )
        .into());
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let (mut exp, tb) = load(&text).map_err(|e| TestbedError::from(e).in_file(file))?;
    // The file's own paths (a topology file, a CDF) are relative to its folder, as the simulator reads
    // them.
    let folder = Path::new(file).parent().unwrap_or(Path::new("."));
    tailcut_sim::paths::anchor_paths(&mut exp, folder);
    let existed = out.exists();
    if existed {
        remove_outputs(out)?;
    }
    stop_on_signals(out, existed)?;
    let pcap_dir = out.join(CAPTURE_DIR);
    let (rows, summaries) = run_experiment(&exp, &tb, me, Some(&pcap_dir)).map_err(|e| e.in_file(file))?;
    crate::outputs::write(out, &rows, &summaries)?;
    for s in &summaries {
        for c in s.fabric.capture.iter().flat_map(|c| [&c.sent, &c.delivered]) {
            if c.not_written > 0 {
                eprintln!(
                    "{}: pcap/{} ends early: {} packets not written ({})",
                    s.scheme,
                    c.file,
                    c.not_written,
                    c.error.as_deref().unwrap_or("testbed.pcap.max_bytes reached")
                );
            }
        }
        eprintln!(
            "{}: {}/{} flows completed, FCT p50 {} ns, p99 {} ns, {}{}",
            s.scheme,
            s.completed,
            s.flows,
            fct_percentile_text(s.fct_p50_ns),
            fct_percentile_text(s.fct_p99_ns),
            timeouts_text(s),
            s.reconnects
                .map(|k| format!(", reconnections {k}"))
                .unwrap_or_default()
                + &s.migrations
                    .map(|k| format!(", migrations {k}"))
                    .unwrap_or_default()
        );
    }
    // Last, so that it is what a user sees at the end of the run.
    let invalid: Vec<_> = summaries.iter().filter(|s| !s.timing.valid).collect();
    let allowed = tailcut_proto::flags::present(args, "--allow-invalid-timing");
    for s in &invalid {
        eprintln!(
            "WARNING: {}: TIMING INVALID, the FCTs measure this machine as much as the network: {}",
            s.scheme,
            s.timing.reasons.join("; ")
        );
    }
    if !invalid.is_empty() {
        eprintln!(
            "WARNING: the run's timing was not kept (testbed.json: timing); {}",
            if allowed {
                "accepted with --allow-invalid-timing"
            } else {
                "rerun on a quieter machine, lower the rates, or pass --allow-invalid-timing to accept it"
            }
        );
    }
    Ok(invalid.is_empty() || allowed)
}

#[cfg(test)]
mod tests;
