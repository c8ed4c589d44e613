//! pFabric (Alizadeh et al., SIGCOMM'13) at the end host: the priority of a packet is the bytes of its
//! message not yet acknowledged (Sec. 4.1), and probe mode (Sec. 4.3): after a fixed number of
//! consecutive timeouts a flow stops retransmitting full segments and sends minimum-size probes (one
//! byte of payload) once per RTO, without further back-off, until one is acknowledged; then it
//! resumes (in slow start from one segment, as after any timeout). Transport `pfabric`.

use super::{Extension, Step};
use crate::packet::Packet;
use crate::tcp::cc::CongestionControl;
use crate::tcp::ledger::Charge;
use crate::tcp::sender::{Sender, Transmission};
use crate::time::Time;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pfabric {
    /// Stamp `Packet::priority`.
    priority: bool,
    /// Consecutive timeouts that start probe mode; `None` disables it.
    probe_after: Option<u32>,
    probing: bool,
    /// A timeout fired in probe mode: one probe is due.
    probe_due: bool,
}

impl Pfabric {
    pub(super) fn new(priority: bool, probe_after: Option<u32>) -> Self {
        Pfabric {
            priority,
            probe_after,
            ..Pfabric::default()
        }
    }

    /// In probe mode: the one-byte probe of the first unacknowledged byte, once per timeout.
    fn probe<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Option<Transmission> {
        if !self.probe_due || s.snd_una >= s.snd_nxt {
            return None;
        }
        self.probe_due = false;
        let start = s.snd_una;
        s.ledger.charge_bytes(start, start + 1, Charge::Retransmit);
        s.stats.retransmits += 1;
        s.stats.retransmitted_bytes += 1;
        s.on_data_sent(now, 1);
        Some(Transmission {
            start,
            len_bytes: 1,
            retransmit: true,
            cwr: false,
            tag: 0,
        })
    }
}

impl Extension for Pfabric {
    /// New data was acknowledged: the path works again.
    fn on_ack<C: CongestionControl>(&mut self, _s: &mut Sender<C>, _now: Time, acked_bytes: u64) {
        if acked_bytes > 0 {
            self.probing = false;
            self.probe_due = false;
        }
    }

    /// Probe mode probes at a fixed period, the current RTO: it holds the RTO.
    fn on_rto(&mut self, consecutive: u32) -> bool {
        if self.probe_after.is_some_and(|n| consecutive >= n) {
            self.probing = true;
            self.probe_due = true;
        }
        self.probing
    }

    /// In probe mode the probe is all the sender sends.
    fn before_retransmissions<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Step {
        if !self.probing {
            return Step::Pass;
        }
        match self.probe(s, now) {
            Some(tx) => Step::Send(tx),
            None => Step::Hold,
        }
    }

    /// Sec. 4.1: the priority is the bytes of the message not yet acknowledged. `offset` is the
    /// packet's first stream byte.
    fn tag<C: CongestionControl>(&self, p: &mut Packet, offset: u64, s: &Sender<C>) {
        if !self.priority {
            return;
        }
        if let Some((start, end)) = s.ledger.bounds(offset) {
            p.priority = end - start.max(s.snd_una);
        }
    }
}
