//! The resolved transport of a workload component: what builds the engines of its connections and what it
//! needs from the network. The scheme layer (`tailcut-scheme`) resolves an experiment's `transport`
//! and `params` into a `SchemeSpec`, which becomes one here (`From<SchemeSpec>`); Rust users (and tests) plug in engines of their own with [`Transport::new`].

use crate::topo::SwitchQueues;
use std::sync::Arc;
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::{Engine, FiveTuple, Seq, Time};

mod cloudburst;
mod dcquic;
mod mptcp;
mod reconnect;
mod switch;
mod tcp;
mod tls;

#[cfg(test)]
mod tests;

pub use cloudburst::CloudBurstTransport;
pub use dcquic::DcquicTransport;
pub use mptcp::MptcpTransport;
pub use reconnect::ReconnectTransport;
pub use switch::apply as apply_switch_default;
use tailcut_scheme::{EngineSpec, SchemeSpec};
pub use tailcut_scheme::{ReplicaPolicy, SwitchDefault, MAX_COPIES};
pub use tcp::TcpTransport;
pub use tls::TlsTransport;

/// Builds the engines of one connection, and says what the network around them must provide. Only
/// `connect` and `framing` are required: the rest defaults to one connection per flow, one port per end
/// and the experiment's switch queues unchanged.
pub trait EngineFactory: Send + Sync {
    /// (data-sender side, data-receiver side).
    fn connect(
        &self,
        setup: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>);
    /// (payload bytes per packet, header bytes per packet), for the ideal FCT.
    fn framing(&self) -> (u64, u64);
    /// Connections that carry a flow of `size_bytes` (1 = no replication; at most [`MAX_COPIES`]).
    fn replicas(&self, _size_bytes: u64) -> u32 {
        1
    }
    /// Consecutive ports each end of a connection uses (one per MPTCP sub-flow).
    fn ports_per_end(&self) -> u16 {
        1
    }
    /// The switch and host queues this transport runs on, given the experiment's `network` section
    /// (used when the scheme gives no `network` of its own).
    fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        base.clone()
    }
    /// The TCP configuration of the engines (of each sub-flow for MPTCP), as a host shim would read it
    /// from their SYN options; `None` for engines that are not TCP.
    fn tcp(&self) -> Option<&TcpConfig> {
        None
    }
}

/// A resolved transport: cheap to clone, shared by every connection of the components that use it.
#[derive(Clone)]
pub struct Transport(Arc<dyn EngineFactory>);

impl Transport {
    pub fn new(engines: impl EngineFactory + 'static) -> Transport {
        Transport(Arc::new(engines))
    }

    /// Builds the two engines of a connection: (data-sender side, data-receiver side).
    pub fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        self.0.connect(s, rng_sender, rng_receiver)
    }

    /// (payload bytes per packet, header bytes per packet), for the ideal FCT.
    pub fn framing(&self) -> (u64, u64) {
        self.0.framing()
    }

    /// Connections that carry a flow of `size_bytes` (RepFlow, replicated DCTCP); 1 otherwise.
    pub fn replicas(&self, size_bytes: u64) -> u32 {
        self.0.replicas(size_bytes).clamp(1, MAX_COPIES)
    }

    /// Consecutive ports each end of a connection uses (one per MPTCP sub-flow; 1 otherwise).
    pub fn ports_per_end(&self) -> u16 {
        self.0.ports_per_end()
    }

    /// The switch queues this transport runs on, given the experiment's `network` section.
    pub fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        self.0.switch_queues(base)
    }

    /// See [`EngineFactory::tcp`].
    pub fn tcp(&self) -> Option<&TcpConfig> {
        self.0.tcp()
    }
}

/// The simulator's engines of a resolved scheme.
impl From<SchemeSpec> for Transport {
    fn from(s: SchemeSpec) -> Transport {
        let tcp = |cfg| TcpTransport {
            cfg,
            replicas: s.replicas,
            switch: s.switch,
        };
        match s.engine {
            EngineSpec::Tcp(cfg) => Transport::new(tcp(cfg)),
            EngineSpec::Mptcp { tcp, cfg } => Transport::new(MptcpTransport {
                tcp,
                cfg,
                switch: s.switch,
            }),
            EngineSpec::CloudBurst {
                cfg,
                nic_rate_from_host,
            } => Transport::new(CloudBurstTransport {
                cfg,
                nic_rate_from_host,
                switch: s.switch,
            }),
            EngineSpec::Dcquic(cfg) => Transport::new(DcquicTransport::new(cfg)),
            EngineSpec::Tls { tcp: cfg, tls } => Transport::new(TlsTransport { inner: tcp(cfg), tls }),
            EngineSpec::Reconnect { tcp, reconnect_after } => Transport::new(ReconnectTransport {
                cfg: tcp,
                reconnect_after,
            }),
        }
    }
}

impl From<Arc<dyn EngineFactory>> for Transport {
    fn from(engines: Arc<dyn EngineFactory>) -> Transport {
        Transport(engines)
    }
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
    /// The fastest NIC of the sender's and of the receiver's host, in bit/s.
    pub sender_nic_bps: u64,
    pub receiver_nic_bps: u64,
    /// The run checks bytes (`check_bytes`): engines that can carry real payloads do.
    pub carry_bytes: bool,
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
    /// The fastest NIC of this end's host, in bit/s.
    pub nic_bps: u64,
    pub rng: Rng,
    /// Carry real payload bytes (the run's `check_bytes`).
    pub carry_bytes: bool,
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
                nic_bps: self.sender_nic_bps,
                rng: rng_sender,
                carry_bytes: self.carry_bytes,
            },
            EndSetup {
                tuple: self.tuple.reversed(),
                opens: !self.sender_opens,
                isn_local: self.isn_receiver,
                isn_peer: self.isn_sender,
                addrs: &self.receiver_addrs,
                nic_bps: self.receiver_nic_bps,
                rng: rng_receiver,
                carry_bytes: self.carry_bytes,
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
