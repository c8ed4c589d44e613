//! RACK-TLP (RFC 8985) as Linux runs it (`tcp_recovery.c`, `tcp_schedule_loss_probe`): time-based
//! loss marking with a reordering window and its timer (Sec. 6), and the tail loss probe (Sec. 7).
//!
//! The scoreboard reports, per ACK, the newest-sent segment the ACK delivered ([`Delivery`]); RACK
//! keeps the send time of the most recently sent delivered segment and presumes lost every segment
//! sent more than RACK.rtt + RACK.reo_wnd before it. The walk over the scoreboard stops at the first
//! never-retransmitted segment sent after RACK.xmit_ts (every later original was sent later still),
//! so without losses it costs O(1) per ACK.

use super::config::RackConfig;
use super::jiffies::TimerClock;
use super::scoreboard::Scoreboard;
use crate::time::{Dur, Time};

/// What one ACK delivered (cumulatively or by SACK), gathered by the scoreboard as it visits the
/// segments. Reset at the start of every ACK.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Delivery {
    /// The ACK's arrival time and RACK.min_RTT, for the guard against ambiguous retransmissions.
    pub(crate) now: Time,
    pub(crate) min_rtt: Dur,
    /// (send time, end) of the most recently sent segment delivered by this ACK that passes the
    /// guard (RFC 8985 Sec. 6.2 step 2).
    pub(crate) newest: Option<(Time, u64)>,
    /// RACK.fack before this ACK: the highest end of any segment delivered earlier.
    pub(crate) fack_before: u64,
    /// Highest end delivered by this ACK.
    pub(crate) fack: u64,
    /// A never-retransmitted segment was delivered below `fack_before` (RFC 8985 Sec. 6.2 step 3).
    pub(crate) reordering: bool,
}

impl Delivery {
    /// A segment sent at `sent_at`, ending at `end`, was just delivered.
    pub(crate) fn on_delivered(&mut self, sent_at: Time, end: u64, retransmitted: bool) {
        self.fack = self.fack.max(end);
        if !retransmitted && end < self.fack_before {
            self.reordering = true;
        }
        // RFC 8985 Sec. 6.2 step 2 / Linux `tcp_rack_advance`: an ACK of a retransmitted segment
        // that comes back sooner than min_RTT after the retransmission most likely acknowledges the
        // original; it must not advance RACK.
        if retransmitted && self.now.saturating_sub(sent_at) < self.min_rtt {
            return;
        }
        if self.newest.is_none_or(|n| sent_after((sent_at, end), n)) {
            self.newest = Some((sent_at, end));
        }
    }
}

/// RFC 8985 Sec. 6.2 RACK_sent_after: `a` was sent after `b` (the higher end breaks ties).
fn sent_after(a: (Time, u64), b: (Time, u64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
}

/// RACK state of one sender.
#[derive(Clone, Debug)]
pub(crate) struct Rack {
    cfg: RackConfig,
    /// The clock its reordering timer runs on (`timer_hz`).
    clock: TimerClock,
    /// RACK.xmit_ts and RACK.end_seq: the most recently sent segment delivered so far.
    xmit: Option<(Time, u64)>,
    /// RACK.rtt: the RTT measured from that segment.
    rtt: Dur,
    /// RACK.min_RTT: the least RTT sample seen (Linux keeps a 5-minute windowed minimum; flows here
    /// are far shorter, so the all-time minimum is the same thing).
    min_rtt: Option<Dur>,
    /// RACK.fack.
    fack: u64,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// The reordering timer (RFC 8985 Sec. 6.3).
    pub(crate) reo_deadline: Option<Time>,
    /// RACK.reo_wnd_mult (Linux `reo_wnd_steps`): grown by one per round trip that brings a D-SACK.
    reo_wnd_mult: u32,
    /// RACK.reo_wnd_persist: recoveries left before the multiplier falls back to 1.
    reo_wnd_persist: u32,
    /// RACK.dsack_round: snd_nxt when the multiplier last grew; no growth until snd_una passes it.
    dsack_round: Option<u64>,
}

/// RFC 8985 Sec. 6.2 step 4 / Linux `TCP_RACK_RECOVERY_THRESH`: recoveries a grown window lasts.
const REO_WND_PERSIST: u32 = 16;

impl Rack {
    pub(crate) fn new(cfg: RackConfig, clock: TimerClock) -> Self {
        Rack {
            cfg,
            clock,
            xmit: None,
            rtt: Dur::ZERO,
            min_rtt: None,
            fack: 0,
            reordering_seen: false,
            reo_deadline: None,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
        }
    }

    /// A valid RTT sample of the connection (RFC 8985 Sec. 6.2 step 2: RACK.min_RTT).
    pub(crate) fn on_rtt_sample(&mut self, rtt: Dur) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// The guard inputs for the next ACK's [`Delivery`].
    pub(crate) fn begin(&self, now: Time) -> Delivery {
        Delivery {
            now,
            min_rtt: self.min_rtt.unwrap_or(Dur::ZERO),
            fack_before: self.fack,
            ..Delivery::default()
        }
    }

    /// RFC 8985 Sec. 6.2 steps 2-3: take in what the ACK delivered.
    pub(crate) fn on_delivery(&mut self, d: &Delivery) {
        self.fack = self.fack.max(d.fack);
        self.reordering_seen |= d.reordering;
        if let Some(n) = d.newest {
            if self.xmit.is_none_or(|x| sent_after(n, x)) {
                self.xmit = Some(n);
                self.rtt = d.now.saturating_sub(n.0);
            }
        }
    }

    /// RFC 8985 Sec. 6.2 step 4 as Linux `tcp_rack_reo_wnd`: no window (be as quick as DupThresh)
    /// while no reordering was seen and either recovery is under way or `dupthresh` segments are
    /// SACKed; else RACK.reo_wnd_mult x min_RTT / 4, at most SRTT.
    fn reo_wnd(&self, in_recovery: bool, sacked_segments: u64, dupthresh: u32, srtt: Option<Dur>) -> Dur {
        if !self.reordering_seen && (in_recovery || sacked_segments >= u64::from(dupthresh)) {
            return Dur::ZERO;
        }
        let w = Dur(self.min_rtt.unwrap_or(Dur::ZERO).0 / u64::from(self.cfg.reo_wnd_min_rtt_divisor.max(1)));
        let w = w.saturating_mul(u64::from(self.reo_wnd_mult));
        srtt.map_or(w, |s| w.min(s))
    }

    /// RFC 8985 Sec. 6.2 step 4 / Linux `tcp_rack_update_reo_wnd`: a D-SACK may mean RACK marked a
    /// merely reordered segment lost, so the window grows by min_RTT / 4, at most once per round
    /// trip. Linux (`tcp_dsack_seen`) counts only D-SACKs after reordering was seen and not the
    /// loss probe's (a probe is sent by a timer, not by RACK's window).
    pub(crate) fn on_dsack(&mut self, of_probe: bool, snd_una: u64, snd_nxt: u64) {
        if self.dsack_round.is_some_and(|r| snd_una >= r) {
            self.dsack_round = None;
        }
        if !self.reordering_seen || of_probe || self.dsack_round.is_some() {
            return;
        }
        self.dsack_round = Some(snd_nxt);
        self.reo_wnd_mult = (self.reo_wnd_mult + 1).min(255);
        self.reo_wnd_persist = REO_WND_PERSIST;
    }

    /// A recovery ended. Linux `tcp_try_undo_recovery`: one that was not undone uses up one of the
    /// recoveries a grown window persists for; then the multiplier is 1 again (RFC 8985 Sec. 6.2
    /// step 4; Linux resets `reo_wnd_steps` on the next ACK).
    pub(crate) fn on_recovery_end(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_mult = 1;
        }
    }

    /// Linux `tcp_try_undo_dsack`: a reduction proved spurious by D-SACK keeps the grown window one
    /// recovery longer.
    pub(crate) fn on_dsack_undo(&mut self) {
        self.reo_wnd_persist = (self.reo_wnd_persist + 1).min(REO_WND_PERSIST);
    }

    /// RFC 8985 Sec. 6.2 step 5 (RACK_detect_loss) and Sec. 6.3 (the reordering timer): mark lost
    /// every segment sent RACK.rtt + RACK.reo_wnd before RACK.xmit_ts or longer; arm the timer for
    /// the earliest segment that may be marked later. Returns whether any segment was newly marked.
    pub(crate) fn detect_loss(
        &mut self,
        now: Time,
        board: &mut Scoreboard,
        in_recovery: bool,
        mss_bytes: u64,
        dupthresh: u32,
        srtt: Option<Dur>,
    ) -> bool {
        self.reo_deadline = None;
        let Some(xmit) = self.xmit else { return false };
        // Worked out at the first segment that needs it: on most ACKs the oldest segment in flight
        // was sent after RACK.xmit_ts and the scan stops there (3 instructions per packet-hop on
        // benchmark (a)).
        let mut wait = None;
        let mut any = false;
        let mut remaining_max = Dur::ZERO;
        for idx in 0..board.len() {
            let s = *board.seg(idx);
            if s.sacked || (s.lost && !s.rtx_in_flight) {
                continue;
            }
            if !sent_after(xmit, (s.sent_at, s.end())) {
                if s.retransmitted {
                    continue;
                }
                break;
            }
            let wait = *wait.get_or_insert_with(|| {
                let sacked_segments = board.sacked_bytes() / mss_bytes.max(1);
                self.rtt + self.reo_wnd(in_recovery, sacked_segments, dupthresh, srtt)
            });
            let due = s.sent_at + wait;
            if due <= now {
                any |= board.mark_lost_again(idx);
            } else {
                remaining_max = remaining_max.max(due - now);
            }
        }
        // RFC 8985 Sec. 6.3: one timer for the latest of the segments still waiting (RACK_detect_loss
        // returns the maximum remaining time, Linux `tcp_rack_detect_loss` the same).
        if remaining_max > Dur::ZERO {
            self.reo_deadline = Some(self.clock.at(now, remaining_max));
        }
        any
    }
}

/// The tail loss probe of RFC 8985 Sec. 7, scheduled as Linux `tcp_schedule_loss_probe` does.
#[derive(Clone, Debug)]
pub(crate) struct Tlp {
    /// The clock the probe timer runs on (`timer_hz`).
    clock: TimerClock,
    /// Added to 2 SRTT with one segment in flight (WCDelAckT).
    delayed_ack_allowance: Dur,
    /// Added to 2 SRTT with more than one in flight (Linux `TCP_TIMEOUT_MIN_US`).
    min_extra: Dur,
    pub(crate) deadline: Option<Time>,
    /// The PTO fired: the next transmission opportunity sends the probe.
    pub(crate) probe_due: bool,
    /// TLP.end_seq: snd_nxt when the probe went out; one probe per episode until it is ACKed.
    pub(crate) end_seq: Option<u64>,
    /// The probe was a retransmission (Linux `tlp_retrans`), not new data.
    pub(crate) retrans: bool,
}

impl Tlp {
    /// `min_rto` as the sender keeps it (in jiffies under `timer_hz`).
    pub(crate) fn new(cfg: &RackConfig, min_rto: Dur, clock: TimerClock) -> Self {
        Tlp {
            clock,
            delayed_ack_allowance: cfg.tlp_delayed_ack_allowance.unwrap_or(min_rto),
            min_extra: cfg.tlp_min_extra,
            deadline: None,
            probe_due: false,
            end_seq: None,
            retrans: false,
        }
    }

    /// RFC 8985 Sec. 7.2 / Linux `tcp_schedule_loss_probe`: PTO = 2 SRTT plus the delayed-ACK
    /// allowance with one segment in flight (else plus `min_extra`); 1 s without an RTT sample;
    /// never later than the RTO. Only in the Open state, with data outstanding and no probe
    /// outstanding.
    pub(crate) fn arm(
        &mut self,
        now: Time,
        open: bool,
        segments_out: usize,
        srtt: Option<Dur>,
        rto_deadline: Option<Time>,
    ) {
        self.deadline = None;
        if !open || segments_out == 0 || self.end_seq.is_some() || self.probe_due {
            return;
        }
        let pto = match srtt {
            Some(s) => {
                let extra = if segments_out == 1 {
                    self.delayed_ack_allowance
                } else {
                    self.min_extra
                };
                s.saturating_mul(2) + extra
            }
            None => Dur::from_millis(1_000),
        };
        let at = self.clock.at(now, pto);
        self.deadline = Some(rto_deadline.map_or(at, |r| at.min(r)));
    }

    /// An ACK at or beyond TLP.end_seq ends the episode, without asking whether the probe repaired
    /// a loss (the sender when it does not read D-SACK, `TcpConfig::dsack` off): no reduction.
    pub(crate) fn on_ack(&mut self, snd_una: u64) {
        if self.end_seq.is_some_and(|e| snd_una >= e) {
            self.end_seq = None;
        }
    }

    /// RFC 8985 Sec. 7.4 as Linux `tcp_process_tlp_ack`, for a sender that reads D-SACK: returns
    /// whether the probe repaired a loss, which calls for a window reduction. A probe of new data, a
    /// D-SACK of the probe (original and probe both arrived) or a pure duplicate ACK at TLP.end_seq
    /// end the episode with no loss; an ACK beyond TLP.end_seq without such a D-SACK means the
    /// probe was the only copy that arrived. Any other ACK at TLP.end_seq leaves the episode open.
    pub(crate) fn on_ack_checked(&mut self, ack: u64, dsack_of_probe: bool, pure_dupack: bool) -> bool {
        let Some(end) = self.end_seq else { return false };
        if ack < end {
            return false;
        }
        let loss = self.retrans && !dsack_of_probe && ack > end;
        if !self.retrans || dsack_of_probe || loss || pure_dupack {
            self.end_seq = None;
        }
        loss
    }

    /// A retransmission timeout or a recovery ends the episode (Linux clears `tlp_high_seq` in
    /// `tcp_enter_loss` and `tcp_init_cwnd_reduction`).
    pub(crate) fn cancel(&mut self) {
        self.deadline = None;
        self.probe_due = false;
        self.end_seq = None;
    }
}
