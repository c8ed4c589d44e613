//! Engines of TCP and of the baselines built into the TCP endpoint (TLP, TCP-IR, Proactive, PIAS, pFabric,
//! CP), optionally replicated over several connections (RepFlow, replicated DCTCP).

use super::{ConnSetup, EngineFactory, ReplicaPolicy, SwitchDefault};
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
        self.replicas.copies_for(size_bytes)
    }

    fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        super::apply_switch_default(self.switch, base)
    }

    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.cfg)
    }
}
