//! pFabric's probe mode (Alizadeh et al., SIGCOMM'13, Sec. 4.3): after a fixed number of consecutive
//! timeouts a flow stops retransmitting full segments and sends minimum-size probes (one byte of
//! payload) once per RTO, without further back-off, until one is acknowledged; then it resumes (in
//! slow start from one segment, as after any timeout). A child of `sender.rs`.

use super::{Sender, Transmission};
use crate::tcp::cc::CongestionControl;
use crate::tcp::ledger::Charge;
use crate::time::Time;

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ProbeMode {
    /// Consecutive timeouts that start probe mode; `None` disables it.
    after: Option<u32>,
    active: bool,
    /// A timeout fired in probe mode: one probe is due.
    due: bool,
}

impl ProbeMode {
    pub(super) fn new(after: Option<u32>) -> Self {
        ProbeMode {
            after,
            ..ProbeMode::default()
        }
    }

    pub(super) fn active(&self) -> bool {
        self.active
    }

    /// A retransmission timeout, the `consecutive`-th in a row. Returns true when the sender is (now)
    /// probing, in which case the RTO is not backed off.
    pub(super) fn on_timeout(&mut self, consecutive: u32) -> bool {
        if self.after.is_some_and(|n| consecutive >= n) {
            self.active = true;
            self.due = true;
        }
        self.active
    }

    /// New data was acknowledged: the path works again.
    pub(super) fn on_new_ack(&mut self) {
        self.active = false;
        self.due = false;
    }
}

impl<C: CongestionControl> Sender<C> {
    /// In probe mode: the one-byte probe of the first unacknowledged byte, once per timeout.
    pub(super) fn pfabric_probe(&mut self, now: Time) -> Option<Transmission> {
        if !self.probe.due || self.snd_una >= self.snd_nxt {
            return None;
        }
        self.probe.due = false;
        let start = self.snd_una;
        self.ledger.charge_bytes(start, start + 1, Charge::Retransmit);
        self.stats.retransmits += 1;
        self.stats.retransmitted_bytes += 1;
        self.on_data_sent(now, 1);
        Some(Transmission {
            start,
            len_bytes: 1,
            retransmit: true,
            cwr: false,
            tag: 0,
        })
    }
}
