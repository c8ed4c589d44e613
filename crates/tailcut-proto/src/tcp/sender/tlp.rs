//! Tail loss probe (draft-dukkipati-tcpm-tcp-loss-probe-01 Sec. 2; RFC 8985 Sec. 7): the probe
//! timer, the probe itself and the recovery its ACK can start. A child of `sender.rs`, so it works on
//! the sender's state directly.

use super::{Sender, Transmission};
use crate::tcp::cc::CongestionControl;
use crate::tcp::config::TlpConfig;
use crate::time::{Dur, Time};

/// Tail loss probe state (draft-dukkipati-tcpm-tcp-loss-probe-01 Sec. 2, RFC 8985 Sec. 7).
#[derive(Clone, Copy, Debug)]
pub(super) struct Tlp {
    cfg: TlpConfig,
    /// The probe timer (PTO), armed in the Open state while data is outstanding.
    pub(super) deadline: Option<Time>,
    /// The PTO fired: send a probe at the next transmission opportunity.
    pub(super) probe_due: bool,
    /// The probe outstanding in this episode: (start of the probe segment, snd_nxt after it). At most
    /// one probe per tail: no PTO is armed again until an ACK reaches the second value.
    outstanding: Option<(u64, u64)>,
}

impl Tlp {
    pub(super) fn new(cfg: TlpConfig) -> Self {
        Tlp {
            cfg,
            deadline: None,
            probe_due: false,
            outstanding: None,
        }
    }

    /// A retransmission timeout ends the episode (and any pending probe).
    pub(super) fn end_episode(&mut self) {
        self.deadline = None;
        self.probe_due = false;
        self.outstanding = None;
    }
}

impl<C: CongestionControl> Sender<C> {
    /// The sender's next deadline: the RTO or the probe timeout.
    pub(crate) fn deadline(&self) -> Option<Time> {
        let pto = self.tlp.and_then(|t| t.deadline);
        [self.rto_deadline, pto].into_iter().flatten().min()
    }

    /// A timer expired: the PTO (which pre-empts the RTO when due first) or the RTO.
    pub(crate) fn on_timer(&mut self, now: Time) {
        if let Some(t) = self.tlp.as_mut() {
            if t.deadline.is_some_and(|d| d <= now) {
                // Draft Sec. 2.1 "Sending a loss probe": schedule the probe and rearm the RTO.
                t.deadline = None;
                t.probe_due = true;
                self.rto_deadline = Some(now + self.rtt.rto());
                return;
            }
        }
        self.on_rto(now);
    }

    /// Draft Sec. 2.1 "Scheduling a loss probe": in the Open state, with data outstanding, SACK on,
    /// an RTT sample and no probe outstanding, PTO = max(2 SRTT, 1.5 SRTT + WCDelAckT) with one
    /// segment in flight, else 2 SRTT; then at least `pto_floor`; never later than the RTO.
    pub(super) fn arm_tlp(&mut self, now: Time) {
        let outstanding = self.snd_una < self.snd_nxt;
        let in_flight_segments = self.scoreboard.len();
        let Some(t) = self.tlp.as_mut() else { return };
        t.deadline = None;
        if !outstanding || self.recovery.is_some() || t.outstanding.is_some() || t.probe_due {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else { return };
        let mut pto = srtt.saturating_mul(2);
        if in_flight_segments <= 1 {
            pto = pto.max(Dur(srtt.0 * 3 / 2) + t.cfg.worst_case_delayed_ack);
        }
        pto = pto.max(t.cfg.pto_floor);
        let at = now + pto;
        t.deadline = Some(match self.rto_deadline {
            Some(rto) => at.min(rto),
            None => at,
        });
    }

    /// Draft Sec. 2.1: the probe is a new segment if the receive window admits one (cwnd is
    /// ignored), else a retransmission of the last segment sent (the highest one not SACKed).
    pub(super) fn send_probe(&mut self, now: Time) -> Option<Transmission> {
        if let Some(t) = self.tlp.as_mut() {
            t.probe_due = false;
        }
        if self.snd_una == self.snd_nxt {
            return None;
        }
        self.stats.tlp_probes += 1;
        let tx = if self.can_send_new_data() {
            self.send_new(now, self.mss_bytes)
        } else {
            let n = self.scoreboard.len();
            let idx = (0..n)
                .rev()
                .find(|&i| !self.scoreboard.seg(i).sacked)
                .unwrap_or(n - 1);
            self.retransmit(idx, now)
        };
        if let Some(t) = self.tlp.as_mut() {
            t.outstanding = Some((tx.start, self.snd_nxt));
        }
        Some(tx)
    }

    /// Draft Sec. 2.2 / RFC 8985 Sec. 7.4: an ACK that SACKs the probe while a hole remains below it
    /// reveals a loss the probe did not repair; enter fast recovery with the unSACKed bytes below the
    /// probe presumed lost. An ACK at or above the episode's end closes the episode.
    pub(super) fn tlp_on_ack(&mut self) {
        let Some(t) = self.tlp else { return };
        let Some((probe_start, episode_end)) = t.outstanding else {
            return;
        };
        if self.snd_una >= episode_end {
            if let Some(t) = self.tlp.as_mut() {
                t.outstanding = None;
            }
            return;
        }
        let probe_sacked = self
            .scoreboard
            .find(probe_start)
            .is_some_and(|i| self.scoreboard.seg(i).sacked);
        if self.recovery.is_none() && probe_sacked && self.snd_una < probe_start {
            self.enter_fast_recovery_up_to(probe_start);
        }
    }
}
