//! PIAS (Bai et al., NSDI'15, Sec. 3.1): a packet's class (MLFQ level) is the number of demotion
//! thresholds at or below the bytes of its message sent before it. Transport `pias`.

use super::Extension;
use crate::packet::Packet;
use crate::tcp::cc::CongestionControl;
use crate::tcp::config::PiasConfig;
use crate::tcp::sender::Sender;

pub(crate) struct Pias {
    cfg: PiasConfig,
}

impl Pias {
    pub(super) fn new(cfg: PiasConfig) -> Self {
        Pias { cfg }
    }
}

impl Extension for Pias {
    fn tag<C: CongestionControl>(&self, p: &mut Packet, offset: u64, s: &Sender<C>) {
        if let Some((start, _)) = s.ledger.bounds(offset) {
            p.class = self.cfg.level(offset - start);
        }
    }
}
