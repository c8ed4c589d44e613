//! Engines of the reconnecting TCP RPC client (DCQUIC Sec. 4.3's baseline): a client that opens a new
//! connection from its next NIC when an RPC stalls.

use super::{ConnSetup, EngineFactory};
use tailcut_proto::reconnect::Reconnect;
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::{Dur, Engine};

pub struct ReconnectTransport {
    pub cfg: TcpConfig,
    pub reconnect_after: Dur,
}

impl EngineFactory for ReconnectTransport {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            Reconnect::new(
                self.cfg.clone(),
                e.tuple,
                e.opens,
                e.addrs.to_vec(),
                e.isn_local,
                e.isn_peer,
                self.reconnect_after,
                s.now,
            )
        })
    }

    fn framing(&self) -> (u64, u64) {
        (self.cfg.mss_bytes as u64, self.cfg.header_bytes as u64)
    }

    fn tcp(&self) -> Option<&TcpConfig> {
        Some(&self.cfg)
    }
}
