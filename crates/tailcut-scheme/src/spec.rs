//! What a resolved scheme is: the engine family with its checked configuration, how many connections
//! carry one flow, and what the scheme needs from the network. Every driver (simulator, sockets,
//! testbed) builds its engines from a [`SchemeSpec`] and nothing else, so a scheme means the same
//! thing everywhere; a driver that cannot give the scheme what it needs refuses it ([`crate::driver`]).

use tailcut_proto::cloudburst::CloudBurstConfig;
use tailcut_proto::dcquic::DcquicConfig;
use tailcut_proto::mptcp::MptcpConfig;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::tls13::TlsModel;
use tailcut_proto::Dur;

/// A scheme resolved from its registry name and `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemeSpec {
    /// The registry name (`transport` in an experiment file).
    pub transport: &'static str,
    pub engine: EngineSpec,
    /// Connections that carry one flow (RepFlow, replicated DCTCP); one otherwise.
    pub replicas: ReplicaPolicy,
    /// The switch and host queues the scheme needs, applied to the experiment's own unless the scheme
    /// entry gives a `network` of its own.
    pub switch: SwitchDefault,
}

/// The engine families. A TCP extension is a switch of [`TcpConfig`], not a family.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineSpec {
    /// tailcut's TCP endpoint with its extensions and congestion control.
    Tcp(TcpConfig),
    /// MPTCP (FUSO when `cfg.fuso` is set); every sub-flow runs `tcp`.
    Mptcp { tcp: TcpConfig, cfg: MptcpConfig },
    /// CloudBurst's coded messages. With `nic_rate_from_host` LINK_CAP is each host's NIC rate.
    CloudBurst {
        cfg: CloudBurstConfig,
        nic_rate_from_host: bool,
    },
    /// DCQUIC (quinn-proto).
    Dcquic(DcquicConfig),
    /// TCP with a TLS 1.3 handshake before data (DCQUIC's baseline).
    Tls { tcp: TcpConfig, tls: TlsModel },
    /// A TCP RPC client that reconnects from its next NIC when an RPC stalls (DCQUIC's baseline).
    Reconnect { tcp: TcpConfig, reconnect_after: Dur },
}

impl EngineSpec {
    /// The TCP configuration of the engines (of each sub-flow for MPTCP); `None` for engines that
    /// are not TCP.
    pub fn tcp(&self) -> Option<&TcpConfig> {
        match self {
            EngineSpec::Tcp(c)
            | EngineSpec::Mptcp { tcp: c, .. }
            | EngineSpec::Tls { tcp: c, .. }
            | EngineSpec::Reconnect { tcp: c, .. } => Some(c),
            EngineSpec::CloudBurst { .. } | EngineSpec::Dcquic(_) => None,
        }
    }

    /// The family's name, as errors and reports give it.
    pub fn family(&self) -> &'static str {
        match self {
            EngineSpec::Tcp(_) => "tcp",
            EngineSpec::Mptcp { .. } => "mptcp",
            EngineSpec::CloudBurst { .. } => "cloudburst",
            EngineSpec::Dcquic(_) => "dcquic",
            EngineSpec::Tls { .. } => "tcp+tls",
            EngineSpec::Reconnect { .. } => "tcp+reconnect",
        }
    }
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

impl ReplicaPolicy {
    /// Connections that carry a flow of `size_bytes`.
    pub fn copies_for(&self, size_bytes: u64) -> u32 {
        if size_bytes < self.below_bytes {
            self.copies
        } else {
            1
        }
    }
}

/// The switch and host queues a scheme needs. The simulator applies them to the experiment's
/// `network` section; a real network provides them or the driver refuses the scheme.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SwitchDefault {
    Unchanged,
    /// PIAS: `levels` strict-priority classes (packet class i -> queue i) at switches, unless the
    /// experiment already lists classes. Buffer and discipline (e.g. ECN at K) are kept. Host NICs get
    /// the same classes only with `host_priority`: the PIAS implementation marks DSCP at the host and
    /// leaves the NIC a FIFO, so the deployed scheme's hosts send in arrival order.
    PriorityClasses {
        levels: u8,
        host_priority: bool,
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
    /// CloudBurst (Sec. IV-B / V): its packets (class `class`) in a class of their own at switches
    /// with a drop-tail limit of `share` of the port buffer (at least two full packets), WRR
    /// (background, CloudBurst) with `wrr_weights`, unless the experiment lists classes itself; at
    /// host NICs served first from a queue of `host_queue_packets` (0 = the host NIC unchanged).
    CloudBurstClass {
        class: u8,
        share: f64,
        wrr_weights: [u32; 2],
        host_queue_packets: u32,
    },
}

/// Size of a payload-cut packet at a CP switch (the CP slides: 66 B).
pub const TRIM_HEADER_BYTES: u64 = 66;
/// Room cut headers may use beyond the port buffer (the CP slides: < 1 packet, 1,500 B).
pub const TRIM_HEADER_HEADROOM: u64 = 1500;
