//! Engines of DCQUIC: QUIC connections (quinn-proto) sharing one configuration and session-ticket store.

use super::{ConnSetup, EngineFactory};
use std::sync::Arc;
use tailcut_proto::dcquic::{DcquicConfig, DcquicEngine, Shared};
use tailcut_proto::rng::Rng;
use tailcut_proto::Engine;

pub struct DcquicTransport {
    shared: Arc<Shared>,
}

impl DcquicTransport {
    /// `cfg` must be validated.
    pub fn new(cfg: DcquicConfig) -> DcquicTransport {
        DcquicTransport {
            shared: Arc::new(Shared::new(cfg, quic_epoch())),
        }
    }
}

/// The `Instant` the DCQUIC engines lay simulated time on (quinn-proto's time type cannot be built from a
/// number). The driver reads the clock once for it; only differences from it are used, so it never
/// affects a result (as `run::WallClock`, the other allowed read).
fn quic_epoch() -> std::time::Instant {
    #[allow(clippy::disallowed_methods)]
    std::time::Instant::now()
}

impl EngineFactory for DcquicTransport {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            DcquicEngine::new(
                self.shared.clone(),
                e.tuple,
                e.opens,
                e.addrs.to_vec(),
                s.size_bytes,
                e.rng,
                s.now,
            )
        })
    }

    fn framing(&self) -> (u64, u64) {
        let c = &self.shared.cfg;
        let mps = if c.mps.negotiate {
            c.mps.small_task.0
        } else {
            c.mps.base.0
        };
        (mps, c.header_bytes as u64)
    }
}
