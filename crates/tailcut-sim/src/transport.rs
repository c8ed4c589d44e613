//! The transport registry: maps a scheme's `transport` name and parameters to engine factories.
//! Adding a scheme means adding a variant here and its engine in `tailcut-proto`.

use crate::net::aqm::AqmConfig;
use crate::net::queue::{ClassConfig, SchedConfig};
use crate::topo::SwitchQueues;
use serde::Deserialize;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use tailcut_proto::cloudburst::{CloudBurstConfig, CloudBurstEndpoint};
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::{
    CongestionControl, PiasConfig, Role, TcpConfig, TcpEndpoint, TcpIrConfig, TlpConfig,
};
use tailcut_proto::units::Bytes;
use tailcut_proto::{Dur, Engine, FiveTuple, Seq, Time};

mod mptcp;
pub use mptcp::MptcpTransport;

/// A resolved transport.
#[derive(Clone)]
pub enum Transport {
    /// TCP and the baselines built into the TCP endpoint (TLP, TCP-IR, Proactive, PIAS, pFabric),
    /// optionally replicated over several connections (RepFlow, replicated DCTCP).
    Tcp(TcpTransport),
    /// CloudBurst (Sec. III): coded multipath messages over UDP-like datagrams, no TCP underneath.
    CloudBurst(CloudBurstTransport),
    /// MPTCP and FUSO (`transport/mptcp.rs`): one engine per connection end owning its sub-flows.
    Mptcp(MptcpTransport),
    /// Engines from outside the registry (Rust users plugging in their own protocol, and tests).
    Custom(Arc<dyn EngineFactory>),
}

/// A TCP-based transport: the endpoint configuration plus what the simulator does around it.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpTransport {
    pub cfg: TcpConfig,
    pub replicas: ReplicaPolicy,
    pub switch: SwitchDefault,
}

impl From<TcpConfig> for TcpTransport {
    fn from(cfg: TcpConfig) -> Self {
        TcpTransport {
            cfg,
            replicas: ReplicaPolicy::default(),
            switch: SwitchDefault::Unchanged,
        }
    }
}

/// CloudBurst's endpoint configuration plus the switch queue it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct CloudBurstTransport {
    pub cfg: CloudBurstConfig,
    /// Byte limit of the CloudBurst switch class as a share of the port buffer (Sec. IV-B: 1%),
    /// at least two full packets; used when the experiment lists no classes.
    pub switch_queue_share: f64,
    /// WRR weights (background, CloudBurst) of that default (Sec. V-C friendliness: 4:1).
    pub wrr_weights: [u32; 2],
    /// Host NIC: CloudBurst packets first, in a queue of this many packets (0 = the host NIC
    /// unchanged); used when the experiment lists no host classes. See docs/cloudburst.md.
    pub host_queue_packets: u32,
}

/// The registry's parameters of `cloudburst` beyond the endpoint's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CloudBurstSwitchParams {
    switch_queue_share: f64,
    wrr_weights: [u32; 2],
    host_queue_packets: u32,
}

/// The endpoint's parameters plus the switch defaults.
#[derive(Clone, Debug, PartialEq)]
struct CloudBurstParams {
    endpoint: CloudBurstConfig,
    switch: CloudBurstSwitchParams,
}

impl Default for CloudBurstParams {
    fn default() -> Self {
        CloudBurstParams {
            endpoint: CloudBurstConfig::default(),
            switch: CloudBurstSwitchParams {
                switch_queue_share: 0.01,
                wrr_weights: [4, 1],
                host_queue_packets: 8,
            },
        }
    }
}

impl CloudBurstParams {
    fn to_map(&self) -> Map<String, Value> {
        let mut m = to_map(&self.endpoint);
        m.extend(to_map(&self.switch));
        m
    }
}

const CLOUDBURST_DOCS: &[(&str, &str)] = &[
    (
        "codec",
        "erasure code: lt (the paper's LT code, 64-bit coefficient set in the header) | raptorq (RFC 6330, symbol id in the header; our extension)",
    ),
    (
        "degree",
        "LT only: { kind = \"systematic_random\" } (default) | { kind = \"systematic\" } | { kind = \"fixed\", d = 5 } | { kind = \"capped_soliton\", max = 5 } | { kind = \"robust_soliton\", c, delta }",
    ),
    ("paths", "NUM_PATHS of Algorithm 1: packets per round, one per path"),
    ("path_mode", "explicit (Route::Path labels 0..paths, XPath) or ecmp (a pool of `paths` source ports)"),
    ("rate_share", "r of Algorithm 1: rounds start paths x packet / (r x nic_rate) apart"),
    ("nic_rate", "LINK_CAP of Algorithm 1"),
    ("transmission_timeout", "t of Algorithm 1: the sender fails the message without a STOP by then"),
    ("decoder_timeout", "receiver drops a decoder (or a finished message's record) idle this long"),
    ("max_decoders", "concurrent decoders per peer; the least recently active is evicted beyond it"),
    ("class", "packet class (DSCP) of CloudBurst packets"),
    ("symbol_bytes", "source packet size: 1500 - 20 IP - 8 UDP - 12 CloudBurst header"),
    ("header_bytes", "IP + UDP + CloudBurst header bytes per packet"),
    (
        "carry_bytes",
        "carry real symbol bytes after the header (sockets); off: header only (LT coefficients, RaptorQ 8-byte synthetic symbols)",
    ),
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

fn resolve_cloudburst(params: &Map<String, Value>) -> Result<Transport, String> {
    let d = CloudBurstParams::default();
    let (mut ep, mut sw) = (to_map(&d.endpoint), to_map(&d.switch));
    for (k, v) in params {
        if sw.contains_key(k) {
            sw.insert(k.clone(), v.clone());
        } else {
            ep.insert(k.clone(), v.clone());
        }
    }
    let p = CloudBurstParams {
        endpoint: parse(ep)?,
        switch: parse(sw)?,
    };
    p.endpoint.validate().map_err(|e| format!("params.{e}"))?;
    let CloudBurstSwitchParams {
        switch_queue_share,
        wrr_weights,
        host_queue_packets,
    } = p.switch;
    if !(switch_queue_share > 0.0 && switch_queue_share <= 1.0) {
        return Err("params.switch_queue_share: must be in (0, 1]".into());
    }
    if wrr_weights.contains(&0) {
        return Err("params.wrr_weights: weights must be >= 1".into());
    }
    if p.endpoint.class == 0 {
        return Err("params.class: class 0 is the background class".into());
    }
    Ok(Transport::CloudBurst(CloudBurstTransport {
        cfg: p.endpoint,
        switch_queue_share,
        wrr_weights,
        host_queue_packets,
    }))
}

/// How many connections carry a flow: `copies` for flows smaller than `below_bytes`, one otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaPolicy {
    pub copies: u32,
    pub below_bytes: u64,
}

impl Default for ReplicaPolicy {
    fn default() -> Self {
        ReplicaPolicy {
            copies: 1,
            below_bytes: 0,
        }
    }
}

/// Switch queue settings a transport needs, applied to the experiment's `network` section when the
/// scheme gives no `network` of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchDefault {
    Unchanged,
    /// PIAS: `levels` strict-priority classes (packet class i -> queue i) at switches and host NICs,
    /// unless the experiment already lists classes. Buffer and discipline (e.g. ECN at K) are kept.
    PriorityClasses {
        levels: u8,
    },
    /// pFabric: priority-dropping queues (`aqm = pfabric`) of `buffer_bytes` per switch port, one
    /// class; host NICs send by priority too (`host_aqm = pfabric`, buffer unchanged).
    Pfabric {
        buffer_bytes: u64,
    },
    /// CP: payload-cutting switch ports (`aqm = trim`), buffer unchanged; an experiment's ECN marking
    /// threshold (`aqm = ecn`) is kept as the trimming queue's `ecn_k`. An experiment that already
    /// asks for `trim` keeps its own settings.
    Trim {
        header_bytes: u64,
        header_headroom: u64,
        priority_headers: bool,
    },
}

/// Largest number of copies of a replicated flow.
pub const MAX_COPIES: u32 = 4;

/// Builds the engines of one connection for a transport outside the registry.
pub trait EngineFactory: Send + Sync {
    /// (data-sender side, data-receiver side).
    fn connect(
        &self,
        setup: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>);
    /// (payload bytes per packet, header bytes per packet).
    fn framing(&self) -> (u64, u64);
    /// Connections that carry a flow of `size_bytes` (1 = no replication; at most [`MAX_COPIES`]).
    fn replicas(&self, _size_bytes: u64) -> u32 {
        1
    }
}

/// What `tailcut schemes` lists.
#[derive(Serialize)]
pub struct TransportInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Value,
    pub docs: Vec<(&'static str, &'static str)>,
}

const TCP_DOCS: &[(&str, &str)] = &[
    ("mss_bytes", "maximum segment size, payload bytes"),
    ("header_bytes", "IP+TCP header bytes per segment on the wire"),
    (
        "initial_cwnd_segments",
        "initial congestion window, segments (RFC 6928)",
    ),
    ("rcv_window_bytes", "advertised receive window, bytes"),
    (
        "min_rto",
        "lower bound of the retransmission timeout (RFC 6298 2.4; Linux 200ms)",
    ),
    ("max_rto", "upper bound of the RTO after back-off"),
    (
        "initial_rto",
        "RTO before the first RTT sample (RFC 6298 2.1: 1s); defaults to min_rto when handshake is off",
    ),
    ("sack", "selective acknowledgements and RFC 6675 recovery"),
    (
        "dupack_threshold",
        "duplicate ACKs that start fast retransmit (RFC 5681)",
    ),
    ("limited_transmit", "RFC 3042 limited transmit"),
    ("early_retransmit", "RFC 5827 early retransmit"),
    ("delayed_ack", "delayed-ACK timeout; absent = ACK every segment"),
    ("handshake", "model the 3-way handshake"),
    (
        "slow_start_after_idle",
        "restart from the initial window after an idle RTO (RFC 5681 4.1)",
    ),
    ("ecn", "ECN-capable data and ECN echo (RFC 3168)"),
    (
        "congestion_control",
        "{ kind = \"new_reno\" } or { kind = \"dctcp\", g = 0.0625 }",
    ),
];

/// One registered transport: its name, a description and the parameters it adds to TCP's.
struct SchemeDef {
    name: &'static str,
    description: &'static str,
    extra_docs: &'static [(&'static str, &'static str)],
}

const TLP_DOCS: &[(&str, &str)] = &[
    (
        "pto_floor",
        "lower bound of the probe timeout (draft-dukkipati-tcpm-tcp-loss-probe: 10ms)",
    ),
    (
        "worst_case_delayed_ack",
        "WCDelAckT added to 1.5 SRTT when one segment is in flight (draft: 200ms)",
    ),
];
const IR_DOCS: &[(&str, &str)] = &[(
    "max_block_segments",
    "most data segments one XOR-coded packet covers (Flach et al.: 16)",
)];
const REPFLOW_DOCS: &[(&str, &str)] = &[
    ("copies", "connections per replicated flow (RepFlow: 2), 1..=4"),
    (
        "replicate_below",
        "replicate flows smaller than this (RepFlow: 100KB); absent = every flow",
    ),
];
const PIAS_DOCS: &[(&str, &str)] = &[(
    "thresholds",
    "ascending MLFQ demotion thresholds, bytes of the message sent (levels = len + 1; default 95KB)",
)];
const PFABRIC_DOCS: &[(&str, &str)] = &[
    (
        "switch_buffer",
        "per-port pFabric queue used when the scheme gives no network (34 x 1500B = 51KB, about 2 BDP)",
    ),
    (
        "probe_after_timeouts",
        "consecutive timeouts after which the flow sends one-byte probes once per RTO (probe mode)",
    ),
];

const CP_DOCS: &[(&str, &str)] = &[
    (
        "switch_header_bytes",
        "size of a payload-cut packet at the switch (the slides: 66B)",
    ),
    (
        "switch_header_headroom",
        "bytes cut headers may use beyond the port buffer (the slides: < 1 packet, 1500B)",
    ),
    (
        "switch_priority_headers",
        "cut headers in their own strict-priority queue (NDP) instead of the FIFO (the slides)",
    ),
];

const SCHEMES: &[SchemeDef] = &[
    SchemeDef {
        name: "tcp",
        description: "TCP NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO",
        extra_docs: &[],
    },
    SchemeDef {
        name: "dctcp",
        description: "DCTCP (RFC 8257) over the same TCP; needs ECN marking at switches (aqm = ecn)",
        extra_docs: &[],
    },
    SchemeDef {
        name: "tlp",
        description: "TCP with Tail Loss Probe (draft-dukkipati-tcpm-tcp-loss-probe, RFC 8985 Sec. 7)",
        extra_docs: TLP_DOCS,
    },
    SchemeDef {
        name: "tcp_ir",
        description: "TCP-IR (Flach et al., SIGCOMM'13): one XOR-coded packet per half-RTT bin of data",
        extra_docs: IR_DOCS,
    },
    SchemeDef {
        name: "proactive",
        description: "Proactive (Flach et al., SIGCOMM'13): every data packet sent twice",
        extra_docs: &[],
    },
    SchemeDef {
        name: "repflow",
        description: "RepFlow (Xu & Li, INFOCOM'14): small flows sent on two connections, first to finish counts",
        extra_docs: REPFLOW_DOCS,
    },
    SchemeDef {
        name: "replicated_dctcp",
        description: "DCTCP with every flow replicated on `copies` connections (CloudBurst's baseline)",
        extra_docs: REPFLOW_DOCS,
    },
    SchemeDef {
        name: "pias",
        description: "PIAS (Bai et al., NSDI'15): MLFQ class by bytes sent, DCTCP underneath, strict-priority switch classes",
        extra_docs: PIAS_DOCS,
    },
    SchemeDef {
        name: "pfabric",
        description: "pFabric (Alizadeh et al., SIGCOMM'13): priority = remaining bytes, priority-dropping switch queues, line-rate start",
        extra_docs: PFABRIC_DOCS,
    },
    SchemeDef {
        name: "cp",
        description: "CP (Cheng et al., NSDI'14): payload-cutting switches, PACK from the receiver, precise fast retransmit; NewReno, no dupACK threshold",
        extra_docs: CP_DOCS,
    },
    SchemeDef {
        name: "cp_dctcp",
        description: "CP over DCTCP: payload cutting plus ECN marking at the experiment's K, PACK, precise fast retransmit",
        extra_docs: CP_DOCS,
    },
];

fn dctcp_cfg() -> TcpConfig {
    TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..TcpConfig::default()
    }
}

/// RepFlow / replicated DCTCP parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplicaParams {
    copies: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicate_below: Option<Bytes>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PiasParams {
    thresholds: Vec<Bytes>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CpParams {
    switch_header_bytes: Bytes,
    switch_header_headroom: Bytes,
    switch_priority_headers: bool,
}

impl Default for CpParams {
    fn default() -> Self {
        CpParams {
            switch_header_bytes: crate::net::aqm::default_trim_header(),
            switch_header_headroom: crate::net::aqm::default_trim_headroom(),
            switch_priority_headers: false,
        }
    }
}

/// CP's endpoint defaults (Cheng et al., NSDI'14): SACK (the PACK is a SACK-format option) and no
/// dupACK-based loss detection at all, since cut packets are reported precisely ("DupACK = inf" in the
/// slides' out-of-order evaluation); limited and early retransmit follow from it.
fn cp_cfg(base: TcpConfig) -> TcpConfig {
    TcpConfig {
        sack: true,
        dupack_threshold: u32::MAX,
        ..base
    }
}

/// CP's switch default (also `mptcp` / `fuso` with `cp = true`).
fn cp_switch(p: &CpParams) -> Result<SwitchDefault, String> {
    if p.switch_header_bytes.0 == 0 || p.switch_header_bytes.0 > 1500 {
        return Err(format!(
            "params.switch_header_bytes: must be in 1..=1500, got {}",
            p.switch_header_bytes.0
        ));
    }
    Ok(SwitchDefault::Trim {
        header_bytes: p.switch_header_bytes.0,
        header_headroom: p.switch_header_headroom.0,
        priority_headers: p.switch_priority_headers,
    })
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PfabricParams {
    switch_buffer: Bytes,
    probe_after_timeouts: u32,
}

fn to_map<T: Serialize>(v: &T) -> Map<String, Value> {
    match serde_json::to_value(v).expect("serialisable") {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A transport's default TCP configuration and its own parameters' defaults.
fn defaults(name: &str) -> Option<(TcpConfig, Map<String, Value>)> {
    let tcp = TcpConfig::default();
    Some(match name {
        "tcp" | "proactive" => (tcp, Map::new()),
        "dctcp" => (dctcp_cfg(), Map::new()),
        "tlp" => (tcp, to_map(&TlpConfig::default())),
        "tcp_ir" => (tcp, to_map(&TcpIrConfig::default())),
        "repflow" => (
            tcp,
            to_map(&ReplicaParams {
                copies: 2,
                replicate_below: Some(Bytes(100_000)),
            }),
        ),
        "replicated_dctcp" => (
            dctcp_cfg(),
            to_map(&ReplicaParams {
                copies: 2,
                replicate_below: None,
            }),
        ),
        "pias" => (
            dctcp_cfg(),
            to_map(&PiasParams {
                thresholds: vec![Bytes(95_000)],
            }),
        ),
        // Alizadeh et al. Sec. 4.3 / 5: line-rate start (IW = BDP, 17 packets here), SACK but no
        // fast retransmit (losses are detected by timeouts only), a small RTO from the first packet
        // on; no restart after idle.
        "pfabric" => (
            TcpConfig {
                initial_cwnd_segments: 17,
                dupack_threshold: u32::MAX,
                min_rto: Dur::from_millis(1),
                initial_rto: Dur::from_millis(1),
                slow_start_after_idle: false,
                ..tcp
            },
            to_map(&PfabricParams {
                switch_buffer: Bytes(51_000),
                probe_after_timeouts: 5,
            }),
        ),
        "cp" => (cp_cfg(tcp), to_map(&CpParams::default())),
        "cp_dctcp" => (cp_cfg(dctcp_cfg()), to_map(&CpParams::default())),
        _ => return None,
    })
}

/// Every registered transport with its default parameters.
pub fn registry() -> Vec<TransportInfo> {
    let mut all = builtin_registry();
    all.extend(crate::dcquic_transport::registry());
    all
}

/// The transports defined in this module.
pub(crate) fn builtin_registry() -> Vec<TransportInfo> {
    SCHEMES
        .iter()
        .map(|d| {
            let (tcp, extras) = defaults(d.name).expect("registered");
            let mut params = to_map(&tcp);
            params.extend(extras);
            let mut docs = TCP_DOCS.to_vec();
            docs.extend_from_slice(d.extra_docs);
            TransportInfo {
                name: d.name,
                description: d.description,
                params: Value::Object(params),
                docs,
            }
        })
        .chain(std::iter::once(TransportInfo {
            name: "cloudburst",
            description: "CloudBurst (Li et al.): LT-coded messages sprayed over paths at share r until the receiver's STOP",
            params: Value::Object(CloudBurstParams::default().to_map()),
            docs: CLOUDBURST_DOCS.to_vec(),
        }))
        .chain(mptcp::registry())
        .collect()
}

fn parse<T: serde::de::DeserializeOwned>(m: Map<String, Value>) -> Result<T, String> {
    serde_path_to_error::deserialize(Value::Object(m))
        .map_err(|e| format!("params.{}: {}", e.path(), e.inner()))
}

/// Resolves `transport` + `params` (user keys overlaid on the transport's defaults). Errors name the
/// offending key relative to the scheme.
pub fn resolve(name: &str, params: &Map<String, Value>) -> Result<Transport, String> {
    if name == "cloudburst" {
        return resolve_cloudburst(params);
    }
    if mptcp::is_mptcp(name) {
        return mptcp::resolve(name, params).map(Transport::Mptcp);
    }
    if let Some(t) = crate::dcquic_transport::resolve(name, params) {
        return t;
    }
    let def = SCHEMES.iter().find(|d| d.name == name);
    let (Some(def), Some((base, mut extras))) = (def, defaults(name)) else {
        let known: Vec<&str> = SCHEMES.iter().map(|d| d.name).collect();
        return Err(format!(
            "transport: unknown transport '{name}' (known: {}, cloudburst, mptcp, fuso, dcquic, tcp_tls13, dctcp_tls13, tcp_reconnect, dctcp_reconnect)",
            known.join(", ")
        ));
    };
    let mut merged = to_map(&base);
    for (k, v) in params {
        if def.extra_docs.iter().any(|(n, _)| n == k) {
            extras.insert(k.clone(), v.clone());
        } else {
            merged.insert(k.clone(), v.clone());
        }
    }
    let mut cfg: TcpConfig = parse(merged)?;
    // Without a handshake the first flight has no RTT sample, and RFC 6298's 1 s initial RTO would turn
    // any loss in it into a 1 s stall that a real connection (sampled on its SYN) never sees. Datacenter
    // simulations set the initial RTO to the min RTO for this reason (ns-2: rtxcur_init_ = minrto_).
    if !cfg.handshake && !params.contains_key("initial_rto") {
        cfg.initial_rto = cfg.min_rto;
    }
    validate_tcp(&cfg).map_err(|e| format!("params.{e}"))?;
    let mut t = TcpTransport::from(cfg.clone());
    match name {
        "tlp" => {
            let tlp: TlpConfig = parse(extras)?;
            if tlp.pto_floor.0 == 0 {
                return Err("params.pto_floor: must be > 0".into());
            }
            if !cfg.sack {
                return Err("params.sack: TLP needs sack = true".into());
            }
            cfg.tlp = Some(tlp);
        }
        "tcp_ir" => {
            let ir: TcpIrConfig = parse(extras)?;
            if ir.max_block_segments == 0 {
                return Err("params.max_block_segments: must be >= 1".into());
            }
            cfg.tcp_ir = Some(ir);
        }
        "proactive" => cfg.proactive = true,
        "repflow" | "replicated_dctcp" => {
            let r: ReplicaParams = parse(extras)?;
            if !(1..=MAX_COPIES).contains(&r.copies) {
                return Err(format!(
                    "params.copies: must be in 1..={MAX_COPIES}, got {}",
                    r.copies
                ));
            }
            t.replicas = ReplicaPolicy {
                copies: r.copies,
                below_bytes: r.replicate_below.map_or(u64::MAX, |b| b.0),
            };
        }
        "pias" => {
            let p: PiasParams = parse(extras)?;
            let th: Vec<u64> = p.thresholds.iter().map(|b| b.0).collect();
            if th.windows(2).any(|w| w[0] >= w[1]) || th.first() == Some(&0) {
                return Err("params.thresholds: must be positive and strictly ascending".into());
            }
            if th.len() > 7 {
                return Err("params.thresholds: at most 7 thresholds (8 levels)".into());
            }
            t.switch = SwitchDefault::PriorityClasses {
                levels: th.len() as u8 + 1,
            };
            cfg.pias = Some(PiasConfig { thresholds_bytes: th });
        }
        "pfabric" => {
            let p: PfabricParams = parse(extras)?;
            if p.switch_buffer.0 < 1500 {
                return Err(format!(
                    "params.switch_buffer: must hold at least one 1500-byte packet, got {}",
                    p.switch_buffer.0
                ));
            }
            if p.probe_after_timeouts == 0 {
                return Err("params.probe_after_timeouts: must be >= 1".into());
            }
            t.switch = SwitchDefault::Pfabric {
                buffer_bytes: p.switch_buffer.0,
            };
            cfg.pfabric_priority = true;
            cfg.pfabric_probe_after = Some(p.probe_after_timeouts);
        }
        "cp" | "cp_dctcp" => {
            let p: CpParams = parse(extras)?;
            t.switch = cp_switch(&p)?;
            if !cfg.sack {
                return Err("params.sack: CP's PACK is a SACK-format option; needs sack = true".into());
            }
            cfg.cp = true;
        }
        _ => {}
    }
    t.cfg = cfg;
    Ok(Transport::Tcp(t))
}

fn validate_tcp(c: &TcpConfig) -> Result<(), String> {
    if c.mss_bytes == 0 {
        return Err("mss_bytes: must be > 0".into());
    }
    if c.initial_cwnd_segments == 0 {
        return Err("initial_cwnd_segments: must be >= 1".into());
    }
    if c.min_rto.0 == 0 || c.min_rto > c.max_rto {
        return Err(format!("min_rto: must be > 0 and <= max_rto, got {}", c.min_rto));
    }
    if c.dupack_threshold == 0 {
        return Err("dupack_threshold: must be >= 1".into());
    }
    if let CongestionControl::Dctcp { g } = c.congestion_control {
        if !(g > 0.0 && g <= 1.0) {
            return Err(format!("congestion_control.g: must be in (0, 1], got {g}"));
        }
        if !c.ecn {
            return Err("ecn: DCTCP needs ecn = true".into());
        }
    }
    Ok(())
}

/// Everything an engine factory needs for one connection.
pub struct ConnSetup {
    /// Data-sender side's tuple (sender -> receiver).
    pub tuple: FiveTuple,
    /// Whether the data sender opens the connection (false for request/response, where the client
    /// that receives the data opens it).
    pub sender_opens: bool,
    pub isn_sender: Seq,
    pub isn_receiver: Seq,
    pub now: Time,
    /// Size of the flow that opens the connection (DCQUIC picks its packet size by task size).
    pub size_bytes: u64,
    /// Every address of the sender's and the receiver's host (multi-homed hosts have several; the
    /// tuple uses the first).
    pub sender_addrs: Vec<tailcut_proto::Addr>,
    pub receiver_addrs: Vec<tailcut_proto::Addr>,
}

/// One end of a connection as its engine sees it.
pub struct EndSetup<'a> {
    /// This end -> the peer.
    pub tuple: FiveTuple,
    /// This end sends the first packet (the TCP client).
    pub opens: bool,
    pub isn_local: Seq,
    pub isn_peer: Seq,
    /// Every address of this end's host.
    pub addrs: &'a [tailcut_proto::Addr],
    pub rng: Rng,
}

impl ConnSetup {
    /// The data sender's end, then the data receiver's.
    pub fn ends(&self, rng_sender: Rng, rng_receiver: Rng) -> [EndSetup<'_>; 2] {
        [
            EndSetup {
                tuple: self.tuple,
                opens: self.sender_opens,
                isn_local: self.isn_sender,
                isn_peer: self.isn_receiver,
                addrs: &self.sender_addrs,
                rng: rng_sender,
            },
            EndSetup {
                tuple: self.tuple.reversed(),
                opens: !self.sender_opens,
                isn_local: self.isn_receiver,
                isn_peer: self.isn_sender,
                addrs: &self.receiver_addrs,
                rng: rng_receiver,
            },
        ]
    }

    /// Both engines of the connection, each built by `make` from its end.
    pub fn pair<E: Engine + 'static>(
        &self,
        rng_sender: Rng,
        rng_receiver: Rng,
        mut make: impl FnMut(EndSetup<'_>) -> E,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        let [a, b] = self.ends(rng_sender, rng_receiver);
        (Box::new(make(a)), Box::new(make(b)))
    }
}

impl Transport {
    /// Builds the two engines of a connection: (data-sender side, data-receiver side).
    pub fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        match self {
            Transport::Tcp(TcpTransport { cfg, .. }) => s.pair(rng_sender, rng_receiver, |e| {
                let role = if e.opens { Role::Client } else { Role::Server };
                TcpEndpoint::new(cfg.clone(), e.tuple, role, e.isn_local, e.isn_peer)
            }),
            Transport::CloudBurst(t) => s.pair(rng_sender, rng_receiver, |e| {
                CloudBurstEndpoint::new(t.cfg.clone(), e.tuple, e.rng)
            }),
            Transport::Mptcp(t) => t.connect(s, rng_sender, rng_receiver),
            Transport::Custom(f) => f.connect(s, rng_sender, rng_receiver),
        }
    }

    /// (payload bytes per packet, header bytes per packet), for the ideal FCT.
    pub fn framing(&self) -> (u64, u64) {
        match self {
            Transport::Tcp(t) => (t.cfg.mss_bytes as u64, t.cfg.header_bytes as u64),
            Transport::CloudBurst(t) => (t.cfg.symbol_bytes as u64, t.cfg.header_bytes as u64),
            Transport::Mptcp(t) => (t.tcp.mss_bytes as u64, t.tcp.header_bytes as u64),
            Transport::Custom(f) => f.framing(),
        }
    }

    /// Connections that carry a flow of `size_bytes` (RepFlow, replicated DCTCP); 1 otherwise.
    pub fn replicas(&self, size_bytes: u64) -> u32 {
        let n = match self {
            Transport::Tcp(t) if size_bytes < t.replicas.below_bytes => t.replicas.copies,
            Transport::Tcp(_) | Transport::CloudBurst(_) | Transport::Mptcp(_) => 1,
            Transport::Custom(f) => f.replicas(size_bytes),
        };
        n.clamp(1, MAX_COPIES)
    }

    /// Consecutive ports each end of a connection uses (one per MPTCP sub-flow; 1 otherwise).
    pub fn ports_per_end(&self) -> u16 {
        match self {
            Transport::Mptcp(t) => t.ports(),
            _ => 1,
        }
    }

    /// The switch queues this transport runs on, given the experiment's `network` section.
    pub fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        if let Transport::CloudBurst(cb) = self {
            return cb.switch_queues(base);
        }
        let switch = match self {
            Transport::Tcp(t) => t.switch,
            Transport::Mptcp(t) => t.switch,
            _ => return base.clone(),
        };
        match switch {
            SwitchDefault::Unchanged => base.clone(),
            SwitchDefault::PriorityClasses { levels } if base.classes.is_empty() => {
                let classes: Vec<ClassConfig> = (0..levels)
                    .map(|i| ClassConfig {
                        classes: vec![i],
                        limit: None,
                        aqm: None,
                    })
                    .collect();
                SwitchQueues {
                    classes: classes.clone(),
                    sched: SchedConfig::StrictPriority,
                    host_classes: classes,
                    ..base.clone()
                }
            }
            SwitchDefault::PriorityClasses { .. } => base.clone(),
            SwitchDefault::Pfabric { buffer_bytes } => SwitchQueues {
                buffer: Bytes(buffer_bytes),
                aqm: AqmConfig::Pfabric,
                host_aqm: AqmConfig::Pfabric,
                classes: Vec::new(),
                sched: SchedConfig::StrictPriority,
                ..base.clone()
            },
            SwitchDefault::Trim { .. } if matches!(base.aqm, AqmConfig::Trim { .. }) => base.clone(),
            SwitchDefault::Trim {
                header_bytes,
                header_headroom,
                priority_headers,
            } => {
                let ecn_k = match base.aqm {
                    AqmConfig::Ecn { k } => Some(k),
                    _ => None,
                };
                SwitchQueues {
                    aqm: AqmConfig::Trim {
                        header_bytes: Bytes(header_bytes),
                        threshold: None,
                        header_headroom: Bytes(header_headroom),
                        priority_headers,
                        ecn_k,
                    },
                    ..base.clone()
                }
            }
        }
    }
}

impl CloudBurstTransport {
    /// Several messages of one host (each paced at share r) can together exceed its NIC; a real
    /// sender's socket buffer is bounded, and a STOP must not wait behind coded packets. So hosts
    /// serve CloudBurst packets first from a queue of `host_queue_packets` and drop the excess
    /// (coded packets are interchangeable; a lost STOP is repeated).
    fn host_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        if self.host_queue_packets == 0 || !base.host_classes.is_empty() {
            return base.clone();
        }
        let pkt = (self.cfg.symbol_bytes + self.cfg.header_bytes) as u64;
        let background: Vec<u8> = (0..=u8::MAX).filter(|&c| c != self.cfg.class).collect();
        SwitchQueues {
            host_classes: vec![
                ClassConfig {
                    classes: vec![self.cfg.class],
                    limit: Some(Bytes(self.host_queue_packets as u64 * pkt)),
                    aqm: Some(AqmConfig::DropTail),
                },
                ClassConfig {
                    classes: background,
                    limit: None,
                    aqm: None,
                },
            ],
            ..base.clone()
        }
    }

    /// Sec. IV-B / V: CloudBurst packets in a class of their own with a tiny drop-tail limit, WRR
    /// against everything else, unless the experiment lists classes itself.
    pub fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        let base = &self.host_queues(base);
        if !base.classes.is_empty() {
            return base.clone();
        }
        let limit = ((base.buffer.0 as f64 * self.switch_queue_share) as u64).max(3000);
        let background: Vec<u8> = (0..=u8::MAX).filter(|&c| c != self.cfg.class).collect();
        SwitchQueues {
            classes: vec![
                ClassConfig {
                    classes: background,
                    limit: None,
                    aqm: None,
                },
                ClassConfig {
                    classes: vec![self.cfg.class],
                    limit: Some(Bytes(limit)),
                    aqm: Some(AqmConfig::DropTail),
                },
            ],
            sched: SchedConfig::Wrr {
                weights: self.wrr_weights.to_vec(),
            },
            ..base.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailcut_proto::Dur;

    fn tcp(params: serde_json::Value) -> TcpConfig {
        match resolve("tcp", params.as_object().unwrap()).unwrap() {
            Transport::Tcp(t) => t.cfg,
            _ => unreachable!(),
        }
    }

    /// `tailcut schemes` shows each top-level parameter with its documentation; one without a doc line
    /// would be a parameter users cannot look up.
    #[test]
    fn every_top_level_parameter_of_every_transport_is_documented() {
        for info in registry() {
            let params = info.params.as_object().expect("params are a table");
            for name in params.keys() {
                assert!(
                    info.docs.iter().any(|(d, text)| d == name && !text.is_empty()),
                    "{}: parameter `{name}` has no documentation",
                    info.name
                );
            }
        }
    }

    #[test]
    fn initial_rto_follows_min_rto_only_without_a_handshake() {
        let c = tcp(serde_json::json!({ "min_rto": "5ms" }));
        assert_eq!(c.initial_rto, Dur::from_millis(5));
        let c = tcp(serde_json::json!({ "min_rto": "5ms", "handshake": true }));
        assert_eq!(c.initial_rto, Dur::from_millis(1000));
        let c = tcp(serde_json::json!({ "min_rto": "5ms", "initial_rto": "3s" }));
        assert_eq!(c.initial_rto, Dur::from_millis(3000));
    }

    #[test]
    fn dctcp_defaults_and_param_errors() {
        match resolve("dctcp", &Map::new()).unwrap() {
            Transport::Tcp(c) => {
                assert!(c.cfg.ecn && matches!(c.cfg.congestion_control, CongestionControl::Dctcp { .. }))
            }
            _ => unreachable!(),
        }
        let bad = serde_json::json!({ "ecn": false });
        assert!(resolve("dctcp", bad.as_object().unwrap())
            .err()
            .unwrap()
            .contains("ecn"));
        let bad = serde_json::json!({ "min_rtto": "5ms" });
        assert!(resolve("tcp", bad.as_object().unwrap())
            .err()
            .unwrap()
            .contains("min_rtto"));
    }

    #[test]
    fn cp_brings_a_trimming_queue_and_keeps_the_ecn_threshold() {
        let t = resolve("cp_dctcp", &Map::new()).unwrap();
        let Transport::Tcp(tt) = &t else { unreachable!() };
        assert!(tt.cfg.cp && tt.cfg.sack && tt.cfg.ecn);
        assert_eq!(tt.cfg.dupack_threshold, u32::MAX);
        let base = SwitchQueues {
            aqm: AqmConfig::Ecn { k: Bytes(32_000) },
            ..SwitchQueues::default()
        };
        match t.switch_queues(&base).aqm {
            AqmConfig::Trim {
                header_bytes,
                header_headroom,
                priority_headers,
                ecn_k,
                threshold,
            } => {
                assert_eq!(header_bytes, Bytes(66));
                assert_eq!(header_headroom, Bytes(1500));
                assert!(!priority_headers);
                assert_eq!(ecn_k, Some(Bytes(32_000)));
                assert_eq!(threshold, None);
            }
            other => panic!("{other:?}"),
        }
        let bad = serde_json::json!({ "sack": false });
        assert!(resolve("cp", bad.as_object().unwrap())
            .err()
            .unwrap()
            .contains("sack"));
    }
}
