//! Engines of MPTCP and FUSO: one engine per connection end owning its sub-flows, each on its own port.

use super::{ConnSetup, EngineFactory, SwitchDefault};
use crate::topo::SwitchQueues;
use tailcut_proto::mptcp::{MptcpConfig, MptcpEndpoint};
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::Engine;

/// Each sub-flow's TCP configuration (with the connection's total initial window) and the multipath
/// layer's.
#[derive(Clone, Debug, PartialEq)]
pub struct MptcpTransport {
    pub tcp: TcpConfig,
    pub cfg: MptcpConfig,
    /// `cp = true`: CP's payload-cutting switch ports, as the `cp` scheme declares them.
    pub switch: SwitchDefault,
}

impl EngineFactory for MptcpTransport {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            let tcp = TcpConfig {
                carry_bytes: e.carry_bytes,
                ..self.tcp.clone()
            };
            MptcpEndpoint::new(tcp, self.cfg.clone(), e.tuple, e.isn_local, e.isn_peer, e.rng)
        })
    }

    fn framing(&self) -> (u64, u64) {
        (self.tcp.mss_bytes as u64, self.tcp.header_bytes as u64)
    }

    /// One port per sub-flow, consecutive.
    fn ports_per_end(&self) -> u16 {
        self.cfg.subflows as u16
    }

    fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        super::apply_switch_default(self.switch, base)
    }

    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.tcp)
    }
}
