//! Engines of TCP and of the baselines built into the TCP endpoint (TLP, TCP-IR, Proactive, PIAS, pFabric,
//! CP), optionally replicated over several connections (RepFlow, replicated DCTCP).

use super::{ConnSetup, EngineFactory, SwitchDefault};
use crate::topo::SwitchQueues;
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::{Role, TcpConfig, TcpEndpoint};
use tailcut_proto::Engine;

/// The endpoint configuration plus what the simulator does around it.
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

impl EngineFactory for TcpTransport {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            let role = if e.opens { Role::Client } else { Role::Server };
            let cfg = TcpConfig {
                carry_bytes: e.carry_bytes,
                ..self.cfg.clone()
            };
            TcpEndpoint::new(cfg, e.tuple, role, e.isn_local, e.isn_peer)
        })
    }

    fn framing(&self) -> (u64, u64) {
        (self.cfg.mss_bytes as u64, self.cfg.header_bytes as u64)
    }

    fn replicas(&self, size_bytes: u64) -> u32 {
        if size_bytes < self.replicas.below_bytes {
            self.replicas.copies
        } else {
            1
        }
    }

    fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        self.switch.apply(base)
    }

    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.cfg)
    }
}
