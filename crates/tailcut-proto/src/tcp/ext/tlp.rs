//! Tail loss probe (draft-dukkipati-tcpm-tcp-loss-probe-01 Sec. 2; RFC 8985 Sec. 7): the probe timer
//! (PTO), the probe itself and the fast recovery its ACK can start. Transport `tlp`.

use super::{Extension, Step};
use crate::tcp::cc::CongestionControl;
use crate::tcp::config::TlpConfig;
use crate::tcp::sender::{Sender, Transmission};
use crate::time::{Dur, Time};

#[derive(Clone, Copy, Debug)]
pub(crate) struct Tlp {
    cfg: TlpConfig,
    /// The probe timer, armed in the Open state while data is outstanding. It is void in loss
    /// recovery (the draft arms it in the Open state only), whoever started the recovery.
    deadline: Option<Time>,
    /// The PTO fired: send a probe at the next transmission opportunity.
    probe_due: bool,
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

    /// Draft Sec. 2.1 "Scheduling a loss probe": in the Open state, with data outstanding, SACK on,
    /// an RTT sample and no probe outstanding, PTO = max(2 SRTT, 1.5 SRTT + WCDelAckT) with one
    /// segment in flight, else 2 SRTT; then at least `pto_floor`; never later than the RTO.
    fn arm<C: CongestionControl>(&mut self, s: &Sender<C>, now: Time) {
        self.deadline = None;
        let outstanding = s.snd_una < s.snd_nxt;
        if !outstanding || s.recovery.is_some() || self.outstanding.is_some() || self.probe_due {
            return;
        }
        let Some(srtt) = s.rtt.srtt() else { return };
        let mut pto = srtt.saturating_mul(2);
        if s.scoreboard.len() <= 1 {
            pto = pto.max(Dur(srtt.0 * 3 / 2) + self.cfg.worst_case_delayed_ack);
        }
        pto = pto.max(self.cfg.pto_floor);
        let at = now + pto;
        self.deadline = Some(match s.rto_deadline {
            Some(rto) => at.min(rto),
            None => at,
        });
    }

    /// Draft Sec. 2.2 / RFC 8985 Sec. 7.4: an ACK that SACKs the probe while a hole remains below it
    /// reveals a loss the probe did not repair; enter fast recovery with the unSACKed bytes below the
    /// probe presumed lost. An ACK at or above the episode's end closes the episode.
    fn on_probe_ack<C: CongestionControl>(&mut self, s: &mut Sender<C>) {
        let Some((probe_start, episode_end)) = self.outstanding else {
            return;
        };
        if s.snd_una >= episode_end {
            self.outstanding = None;
            return;
        }
        let probe_sacked = s
            .scoreboard
            .find(probe_start)
            .is_some_and(|i| s.scoreboard.seg(i).sacked);
        if s.recovery.is_none() && probe_sacked && s.snd_una < probe_start {
            s.enter_fast_recovery_up_to(probe_start);
        }
    }

    /// Draft Sec. 2.1: the probe is a new segment if the receive window admits one (cwnd is
    /// ignored), else a retransmission of the last segment sent (the highest one not SACKed).
    fn send_probe<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Step {
        self.probe_due = false;
        let Some(tx) = loss_probe(s, now) else {
            return Step::Pass;
        };
        self.outstanding = Some((tx.start, s.snd_nxt));
        Step::Send(tx)
    }
}

/// Draft Sec. 2.1 and RFC 8985 Sec. 7.3: the probe is a new segment if the receive window admits one
/// (cwnd is ignored), else a retransmission of the last segment sent (the highest one not SACKed).
/// `None` with nothing outstanding.
pub(crate) fn loss_probe<C: CongestionControl>(s: &mut Sender<C>, now: Time) -> Option<Transmission> {
    if s.snd_una == s.snd_nxt {
        return None;
    }
    s.stats.tlp_probes += 1;
    Some(if s.can_send_new_data() {
        s.send_new(now, s.mss_bytes)
    } else {
        let n = s.scoreboard.len();
        let idx = (0..n)
            .rev()
            .find(|&i| !s.scoreboard.seg(i).sacked)
            .unwrap_or(n - 1);
        s.retransmit_probe(idx, now)
    })
}

impl Extension for Tlp {
    fn on_ack<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time, _acked_bytes: u64) {
        self.on_probe_ack(s);
        self.arm(s, now);
    }

    /// Draft Sec. 2.1 "Sending a loss probe": the PTO pre-empts the RTO when due first; schedule the
    /// probe and rearm the RTO.
    fn on_timer<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> bool {
        if self.deadline(s).is_none_or(|d| d > now) {
            return false;
        }
        self.deadline = None;
        self.probe_due = true;
        s.rto_deadline = Some(s.rto_at(now));
        s.stats.probe_timeouts += 1;
        true
    }

    fn deadline<C: CongestionControl>(&self, s: &Sender<C>) -> Option<Time> {
        self.deadline.filter(|_| s.recovery.is_none())
    }

    /// A retransmission timeout ends the episode (and any pending probe).
    fn on_rto(&mut self, _consecutive: u32) -> bool {
        self.deadline = None;
        self.probe_due = false;
        self.outstanding = None;
        false
    }

    fn after_retransmissions<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Step {
        if self.probe_due {
            self.send_probe(s, now)
        } else {
            Step::Pass
        }
    }

    fn on_new_data<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) {
        self.arm(s, now);
    }
}
