//! The sending half of a TCP connection: segmentation, the congestion and receive windows, loss
//! detection (dupACKs, SACK, early retransmit, RTO) and loss recovery (NewReno, RFC 6675).
//!
//! The sender keeps 64-bit stream offsets; the endpoint converts to wire sequence numbers.

use super::cc::{AckEvent, Algorithm, Congestion, CongestionControl};
use super::config::{LossDetection, RtoBackoff, TcpConfig};
use super::ext::{Extension, Extensions, Step};
use super::jiffies::TimerClock;
use super::ledger::{Charge, SendLedger};
use super::prr::Prr;
use super::rack::{Rack, Tlp};
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::stats::ConnStats;
use super::undo::{Dsack, Prior, Undo};
use crate::engine::AppEvent;
use crate::time::{earliest, Dur, Time};
use crate::{Seq, TcpFlags, TcpHeader};
use std::collections::VecDeque;

/// Linux's floor on the wait between suspecting SACK reneging and timing out
/// (`tcp_check_sack_reneging`: `max(srtt / 2, 10 ms)`).
const RENEGING_MIN_WAIT: Dur = Dur::from_millis(10);

/// Why the sender is in loss recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecoveryKind {
    /// Fast retransmit / fast recovery (RFC 6582 or RFC 6675).
    Fast,
    /// After a retransmission timeout (RFC 6675 Sec. 5.1, RFC 5681 Sec. 3.1 go-back).
    Timeout,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Recovery {
    pub(crate) kind: RecoveryKind,
    /// RFC 6675 RecoveryPoint / RFC 6582 "recover": recovery ends when snd_una reaches it.
    pub(crate) point: u64,
}

/// One segment the sender wants on the wire now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transmission {
    pub(crate) start: u64,
    pub(crate) len_bytes: u32,
    pub(crate) retransmit: bool,
    /// Carry CWR (RFC 3168 Sec. 6.1.2): the first new segment after a window reduction on ECE.
    pub(crate) cwr: bool,
    pub(crate) tag: u64,
}

/// The ACK fields the sender needs, already unwrapped to stream offsets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckInfo {
    pub(crate) ack: u64,
    pub(crate) window_bytes: u64,
    pub(crate) ece: bool,
    /// The segment carries no payload and no SYN/FIN (RFC 5681 Sec. 2 "duplicate ACK" criteria).
    pub(crate) pure: bool,
}

impl AckInfo {
    /// The acknowledgement a received header carries to a sender with initial sequence number `isn`
    /// and `snd_una` = `una`, and its SACK blocks, unwrapped; `None` if the ACK is not near the window.
    pub(crate) fn from_header(
        h: &TcpHeader,
        isn: Seq,
        una: u64,
    ) -> Option<(AckInfo, impl Iterator<Item = (u64, u64)> + Clone + '_)> {
        let ack = h.ack.unwrap_near(isn, una)?;
        let blocks = h
            .sack
            .iter()
            .filter_map(move |(l, r)| Some((l.unwrap_near(isn, una)?, r.unwrap_near(isn, una)?)));
        let info = AckInfo {
            ack,
            window_bytes: u64::from(h.window),
            ece: h.flags.contains(TcpFlags::ECE),
            // A cut (trimmed) data segment still counts as data: it is no duplicate ACK.
            pure: h.payload_len == 0,
        };
        Some((info, blocks))
    }
}

/// Whether cwnd limited the sender over the last round trip (Linux `tcp_cwnd_validate`: its
/// `is_cwnd_limited`, `max_packets_out` and `cwnd_usage_seq`, in bytes).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CwndUse {
    limited: bool,
    max_flight_bytes: u64,
    /// snd_nxt when the last round's record began; a new one begins once snd_una passes it.
    usage_seq: u64,
}

impl CwndUse {
    /// Linux `tcp_cwnd_validate`, after a transmission opportunity: keep the strongest signal of the
    /// round trip (limited once, limited for the round), restarting the record each round trip.
    #[inline]
    fn validate(&mut self, limited: bool, flight_bytes: u64, snd_una: u64, snd_nxt: u64) {
        if snd_una >= self.usage_seq || limited || (!self.limited && flight_bytes > self.max_flight_bytes) {
            self.limited = limited;
            self.max_flight_bytes = flight_bytes;
            self.usage_seq = snd_nxt;
        }
    }

    /// Linux `tcp_is_cwnd_limited`: cwnd limited the sender in the last round trip, or, in slow
    /// start, cwnd is below twice the most data in flight then (so slow start may double it).
    #[inline]
    fn allows_growth(&self, cwnd_bytes: u64, ssthresh_bytes: u64) -> bool {
        self.limited || (cwnd_bytes < ssthresh_bytes && cwnd_bytes < 2 * self.max_flight_bytes)
    }
}

/// The sender, generic over its congestion-control algorithm (`Algorithm`: the one `TcpConfig` names).
pub(crate) struct Sender<C = Algorithm> {
    pub(crate) mss_bytes: u64,
    sack: bool,
    dupack_threshold: u32,
    limited_transmit: bool,
    early_retransmit: bool,
    ecn: bool,
    slow_start_after_idle: bool,
    rto_backoff: RtoBackoff,
    /// Reduce the window in fast recovery by PRR (RFC 6937, Linux) instead of RFC 6675's cwnd =
    /// ssthresh at once.
    prr_enabled: bool,
    /// Restart the RTO when the first unacknowledged segment is retransmitted (Linux).
    rto_restart_on_retransmit: bool,
    /// The clock the timers run on: exact, or Linux's jiffies (`timer_hz`, `tcp/jiffies.rs`).
    clock: TimerClock,
    /// The PRR reduction under way (`prr_enabled`, in a fast recovery the sender itself entered).
    prr: Option<Prr>,
    /// RACK (RFC 8985 Sec. 6), when it is the loss detection in force (see `rack_in_force`).
    rack: Option<Rack>,
    /// RACK-TLP's tail loss probe (RFC 8985 Sec. 7).
    tlp: Option<Tlp>,
    /// D-SACK accounting and undo of spurious reductions (`TcpConfig::dsack` with SACK).
    undo: Option<Undo>,
    /// Linux `tcp_is_cwnd_limited` in force (`TcpConfig::cwnd_limited`) and its state.
    cwnd_use: Option<CwndUse>,
    /// Bytes the application has queued (end of the send stream).
    stream_end: u64,
    pub(crate) snd_una: u64,
    /// Highest offset sent + 1 (RFC 6675 HighData); retransmissions never move it back.
    pub(crate) snd_nxt: u64,
    peer_window_bytes: u64,
    pub(crate) scoreboard: Scoreboard,
    pub(crate) cc: Congestion<C>,
    pub(crate) rtt: RttEstimator,
    pub(crate) rto_deadline: Option<Time>,
    dupacks: u32,
    pub(crate) recovery: Option<Recovery>,
    /// RFC 3168 Sec. 6.1.2: react to ECE at most once per window; no reaction until snd_una passes.
    ecn_recover: Option<u64>,
    cwr_pending: bool,
    /// Timeouts since snd_una last advanced (RFC 5681 Sec. 3.1: ssthresh held on repeated timeouts).
    pub(crate) consecutive_timeouts: u32,
    last_data_sent_at: Option<Time>,
    /// Segments to retransmit at once regardless of cwnd (fast retransmit, NewReno partial ACKs,
    /// explicit loss notifications).
    forced_rtx: VecDeque<u64>,
    pub(crate) ledger: SendLedger,
    pub(crate) stats: ConnStats,
}

/// Whether RACK-TLP replaces DupThresh. Not without SACK (RACK cannot see what was delivered;
/// Linux falls back to NewReno dupACK recovery), not when `dupack_threshold` is `u32::MAX` (schemes
/// that detect losses their own way and by the timer), and not under the `tlp` scheme (`cfg.tlp`:
/// the 2013 draft's probe over DupThresh, the baseline its paper measured).
fn rack_in_force(cfg: &TcpConfig) -> bool {
    cfg.loss_detection == LossDetection::RackTlp
        && cfg.sack
        && cfg.dupack_threshold != u32::MAX
        && cfg.tlp.is_none()
}

impl Sender {
    /// A sender running the congestion control `cfg` names.
    pub(crate) fn new(cfg: &TcpConfig) -> Self {
        Sender::with_cc(cfg, Algorithm::new(cfg.congestion_control))
    }
}

impl<C: CongestionControl> Sender<C> {
    /// A sender running `algo` (MPTCP sub-flows wrap the configured one in LIA).
    pub(crate) fn with_cc(cfg: &TcpConfig, algo: C) -> Self {
        let clock = TimerClock::new(cfg.timer_hz);
        // Linux keeps `tcp_rto_min_us` in jiffies (`tcp_rto_min`).
        let min_rto = clock.round_up(cfg.min_rto);
        Sender {
            mss_bytes: u64::from(cfg.mss_bytes.max(1)),
            sack: cfg.sack,
            dupack_threshold: cfg.dupack_threshold.max(1),
            limited_transmit: cfg.limited_transmit,
            early_retransmit: cfg.early_retransmit,
            ecn: cfg.ecn,
            slow_start_after_idle: cfg.slow_start_after_idle,
            rto_backoff: cfg.rto_backoff,
            prr_enabled: cfg.prr && cfg.sack,
            prr: None,
            rto_restart_on_retransmit: cfg.rto_restart_on_retransmit,
            rack: rack_in_force(cfg).then(|| Rack::new(cfg.rack, clock)),
            tlp: (rack_in_force(cfg) && cfg.rack.tlp).then(|| Tlp::new(&cfg.rack, min_rto, clock)),
            clock,
            undo: (cfg.dsack && cfg.sack).then(Undo::default),
            cwnd_use: cfg.cwnd_limited.then(CwndUse::default),
            stream_end: 0,
            snd_una: 0,
            snd_nxt: 0,
            // Until the peer advertises, assume the window we would offer ourselves.
            peer_window_bytes: u64::from(cfg.rcv_window_bytes),
            scoreboard: Scoreboard::default(),
            cc: Congestion::new(cfg.mss_bytes, cfg.initial_cwnd_segments, algo),
            rtt: RttEstimator::new(cfg.rto_estimator, min_rto, cfg.max_rto, cfg.initial_rto),
            rto_deadline: None,
            dupacks: 0,
            recovery: None,
            ecn_recover: None,
            cwr_pending: false,
            consecutive_timeouts: 0,
            last_data_sent_at: None,
            forced_rtx: VecDeque::new(),
            ledger: SendLedger::default(),
            stats: ConnStats::default(),
        }
    }

    /// Append a message of `len_bytes` to the send stream.
    pub(crate) fn queue_message(&mut self, msg: u64, len_bytes: u64, events: &mut VecDeque<AppEvent>) {
        let start = self.stream_end;
        self.stream_end += len_bytes;
        self.ledger.push(msg, start, self.stream_end, events);
    }

    fn flight_bytes(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    /// RFC 5681 FlightSize outside recovery; RFC 6675 pipe inside.
    pub(crate) fn used_window_bytes(&self) -> u64 {
        match self.recovery {
            None => self.flight_bytes(),
            Some(_) => self.scoreboard.pipe_bytes(self.flight_bytes()),
        }
    }

    /// RFC 5827 Sec. 3.1: new data can be sent when there is unsent data and the receive window
    /// admits a segment.
    pub(crate) fn can_send_new_data(&self) -> bool {
        self.snd_nxt < self.stream_end && self.snd_nxt < self.snd_una + self.peer_window_bytes
    }

    /// The duplicate-ACK threshold in force. RFC 5827 Sec. 3.1 (early retransmit): with fewer than
    /// four segments outstanding and no new data to send, lower it to `oseg - 1`.
    fn dupthresh(&self) -> u32 {
        if self.dupack_threshold == u32::MAX {
            return u32::MAX;
        }
        let oseg = self.scoreboard.len() as u32;
        if self.early_retransmit && (2..4).contains(&oseg) && !self.can_send_new_data() {
            return self.dupack_threshold.min(oseg - 1);
        }
        self.dupack_threshold
    }

    fn lost_threshold_bytes(&self, dupthresh: u32) -> u64 {
        u64::from(dupthresh - 1) * self.mss_bytes
    }

    /// Process the acknowledgement fields of an incoming segment.
    pub(crate) fn on_ack(
        &mut self,
        now: Time,
        ack: AckInfo,
        sack_blocks: impl Iterator<Item = (u64, u64)> + Clone,
        events: &mut VecDeque<AppEvent>,
        ext: &mut Extensions,
    ) {
        if ack.ack > self.snd_nxt || ack.ack < self.snd_una {
            // Acknowledges data never sent, or an old reordered ACK: ignore (RFC 793 / RFC 5961).
            return;
        }
        // Nothing in flight and nothing new: the ACK field of a segment arriving at the end that only
        // receives (half of all calls on a one-way transfer). None of the steps below could act on it
        // (no delivery, no duplicate, no loss, no window growth, no ECN reaction), so only the window
        // is taken, as Linux's `tcp_ack` does on its fast path for such ACKs.
        if ack.ack == self.snd_una
            && self.snd_una == self.snd_nxt
            && !ack.ece
            && self.recovery.is_none()
            && self.tlp.as_ref().is_none_or(|t| t.end_seq.is_none())
            && sack_blocks.clone().next().is_none()
        {
            self.peer_window_bytes = ack.window_bytes;
            ext.on_ack(self, now, 0);
            return;
        }
        let prev_window = self.peer_window_bytes;
        self.peer_window_bytes = ack.window_bytes;

        if let Some(r) = &self.rack {
            self.scoreboard.delivery = r.begin(now);
        }
        let delivered_before = self.delivered_bytes();
        // RFC 2018 / RFC 6675 Sec. 4 Update(): record SACKed segments. The blocks are read again
        // below for D-SACK (the first two as sent), not tracked here: this loop is on every ACK's path.
        let mut blocks_as_sent = sack_blocks.clone();
        let mut newly_sacked = 0;
        if self.sack {
            for (l, r) in sack_blocks {
                let l = l.max(ack.ack);
                let r = r.min(self.snd_nxt);
                if l < r {
                    newly_sacked += self.scoreboard.sack(l, r);
                }
            }
        }

        let acked = ack.ack - self.snd_una;
        let mut ecn_reacted = false;
        let mut is_dup = false;
        let mut rtt_sample = None;
        if acked > 0 {
            let info = self.scoreboard.ack_to(ack.ack);
            // An ACK that covers retransmitted data gives no sequence-based sample: the wait of data
            // held at the receiver behind the hole (up to an RTO) would count as RTT. Linux
            // (`tcp_clean_rtx_queue`, FLAG_RETRANS_DATA_ACKED) then samples from the timestamp echo,
            // which is the retransmission's, and the sample ends the back-off
            // (`tcp_ack_update_rtt`); Karn (RFC 6298 Sec. 3) takes none and keeps the back-off.
            let sample = match (info.any_retransmitted, self.rto_backoff) {
                (true, RtoBackoff::Karn) => None,
                _ => info.newest_sent_at,
            };
            if let Some(sent_at) = sample {
                let rtt = now - sent_at;
                rtt_sample = Some(rtt);
                self.rtt.on_sample(rtt, ack.ack, self.snd_nxt);
                if let Some(r) = self.rack.as_mut() {
                    r.on_rtt_sample(rtt);
                }
            }
            self.snd_una = ack.ack;
            self.ledger.ack_to(self.snd_una, events);
            self.dupacks = 0;
            self.consecutive_timeouts = 0;
            // RFC 6298 Sec. 5.2 / 5.3: stop the timer when all is acknowledged, else restart it.
            self.rto_deadline = (self.snd_una < self.snd_nxt).then(|| self.rto_at(now));
            if self.sack && self.scoreboard.head_sacked() {
                self.suspect_reneging(now);
            }
        } else {
            is_dup = self.snd_una < self.snd_nxt
                && ack.pure
                && if self.sack {
                    // RFC 6675 Sec. 2: a duplicate ACK carries SACK information that is new.
                    newly_sacked > 0
                } else {
                    // RFC 5681 Sec. 2: same ack, no data, same window, data outstanding.
                    ack.window_bytes == prev_window
                };
            if is_dup {
                self.dupacks += 1;
            }
        }

        if let Some(r) = self.rack.as_mut() {
            r.on_delivery(&self.scoreboard.delivery);
        }
        // Out of line, and only when there is something to read: the common ACK carries no SACK
        // block and comes outside a probe episode (benchmark (a) counts every instruction).
        let probe_open = self.tlp.as_ref().is_some_and(|t| t.end_seq.is_some());
        let first = if self.sack && (self.reads_dsack() || probe_open) {
            blocks_as_sent.next()
        } else {
            None
        };
        if first.is_some() || probe_open {
            let second = first.and_then(|_| blocks_as_sent.next());
            let pure_dupack = acked == 0 && newly_sacked == 0 && ack.pure && ack.window_bytes == prev_window;
            if self.reads_dsack() {
                self.on_dsack_ack(first, second, &ack, pure_dupack, acked > 0);
            } else {
                self.close_probe_episode();
            }
        }

        self.cc.on_ack(AckEvent {
            now,
            acked_bytes: acked,
            ece: ack.ece,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            rtt: rtt_sample,
            srtt: self.rtt.srtt(),
        });

        // RFC 3168 Sec. 6.1.2 / RFC 8257 Sec. 3.3 step 11: reduce once per window of data on ECE,
        // never while loss recovery already reduced it.
        if self.ecn && ack.ece && self.recovery.is_none() && self.ecn_recover.is_none_or(|r| self.snd_una > r)
        {
            self.cc.on_ecn_echo(self.flight_bytes());
            // Linux `tcp_enter_cwr`: congestion is proven, the reduction may not be undone.
            if let Some(u) = self.undo.as_mut() {
                u.forget();
            }
            self.ecn_recover = Some(self.snd_nxt);
            self.cwr_pending = true;
            self.stats.ecn_reductions += 1;
            ecn_reacted = true;
        }

        match self.recovery {
            Some(r) if self.snd_una >= r.point => {
                self.recovery = None;
                if self.reads_dsack() {
                    if let Some(rack) = self.rack.as_mut() {
                        rack.on_recovery_end();
                    }
                }
                if self.prr.take().is_some() {
                    // Linux `tcp_end_cwnd_reduction`: the reduction ends at ssthresh.
                    let ss = self.cc.ssthresh_bytes();
                    self.cc.set_cwnd_bytes(ss);
                } else if r.kind == RecoveryKind::Fast && !self.sack {
                    // RFC 6582 Sec. 3.2 step 3, option (1): deflate to
                    // min(ssthresh, max(FlightSize, SMSS) + SMSS).
                    let w = self
                        .cc
                        .ssthresh_bytes()
                        .min(self.flight_bytes().max(self.mss_bytes) + self.mss_bytes);
                    self.cc.set_cwnd_bytes(w);
                } else if r.kind == RecoveryKind::Timeout {
                    self.grow_cwnd(acked);
                }
            }
            Some(Recovery {
                kind: RecoveryKind::Fast,
                ..
            }) => {
                if self.sack {
                    // RFC 6675 Sec. 5 step (C): recompute losses; cwnd stays at ssthresh (or follows
                    // PRR below).
                    let newly_lost = self.mark_losses_in_recovery(now);
                    let delivered = self.delivered_bytes().saturating_sub(delivered_before);
                    self.prr_step(delivered, acked > 0, newly_lost);
                } else if acked > 0 {
                    // RFC 6582 Sec. 3.2 step 5: partial ACK. Retransmit the first unacknowledged
                    // segment, deflate by the amount acknowledged, add back one SMSS if that was at
                    // least one SMSS.
                    self.forced_rtx.push_back(self.snd_una);
                    let mut w = self.cc.cwnd_bytes().saturating_sub(acked);
                    if acked >= self.mss_bytes {
                        w += self.mss_bytes;
                    }
                    self.cc.set_cwnd_bytes(w);
                } else if is_dup {
                    // RFC 6582 Sec. 3.2 step 4: inflate by one SMSS per further duplicate ACK.
                    let w = self.cc.cwnd_bytes() + self.mss_bytes;
                    self.cc.set_cwnd_bytes(w);
                }
            }
            Some(Recovery {
                kind: RecoveryKind::Timeout,
                ..
            }) if acked > 0 && self.undo.as_ref().is_some_and(Undo::all_dsacked) => {
                // Linux `tcp_process_loss` -> `tcp_try_undo_loss`: the timeout was spurious.
                self.try_undo(true);
            }
            Some(Recovery {
                kind: RecoveryKind::Timeout,
                ..
            }) => {
                // Slow start while going back over the window (RFC 5681 Sec. 3.1).
                self.grow_cwnd(acked);
                if self.sack {
                    self.mark_losses_in_recovery(now);
                }
            }
            None => {
                if !ecn_reacted {
                    self.grow_cwnd(acked);
                }
                if self.rack.is_some() {
                    self.rack_detect_loss(now);
                } else {
                    self.detect_loss();
                }
                // The ACK that started a recovery is its first PRR step (Linux: `tcp_fastretrans_alert`
                // enters recovery, then `tcp_cong_control` reduces with the same ACK).
                let delivered = self.delivered_bytes().saturating_sub(delivered_before);
                self.prr_step(delivered, acked > 0, true);
            }
        }
        if acked > 0 {
            self.arm_tlp(now);
        }
        ext.on_ack(self, now, acked);
    }

    /// Linux `tcp_check_dsack` on the ACK's first SACK block (see `undo.rs`).
    fn check_dsack(&mut self, first: (u64, u64), second: Option<(u64, u64)>, ack: &AckInfo) -> Option<Dsack> {
        let probe_end = self.tlp.as_ref().and_then(|t| t.end_seq);
        let u = self.undo.as_mut()?;
        // Linux compares with the largest window the peer ever offered; this receiver always
        // offers its whole buffer, so the current one is that.
        u.check(
            first,
            second,
            ack.ack,
            self.mss_bytes,
            ack.window_bytes,
            probe_end,
        )
    }

    /// When a retransmission timer armed now for the current RTO fires (on `timer_hz`'s clock).
    #[inline]
    pub(crate) fn rto_at(&self, now: Time) -> Time {
        self.clock.at(now, self.rtt.rto())
    }

    /// Whether the sender reads D-SACK (`TcpConfig::dsack`, with SACK): its undo state exists.
    fn reads_dsack(&self) -> bool {
        self.undo.is_some()
    }

    /// Without D-SACK, an ACK at or beyond the probe's end closes its episode, asking nothing more.
    #[inline(never)]
    fn close_probe_episode(&mut self) {
        if let Some(t) = self.tlp.as_mut() {
            t.on_ack(self.snd_una);
        }
    }

    /// What an ACK's SACK blocks and a loss probe's episode mean when the sender reads D-SACK. A
    /// D-SACK means one fewer retransmission the undo waits for and RACK's reordering window
    /// growth; the probe's episode ends with or without a loss (Linux `tcp_process_tlp_ack`: after
    /// a loss the window is reduced once, as a CWR episode that ends at once).
    #[inline(never)]
    fn on_dsack_ack(
        &mut self,
        first: Option<(u64, u64)>,
        second: Option<(u64, u64)>,
        ack: &AckInfo,
        pure_dupack: bool,
        una_advanced: bool,
    ) {
        let dsack = first.and_then(|f| self.check_dsack(f, second, ack));
        if let Some(d) = dsack {
            if let Some(u) = self.undo.as_mut() {
                u.on_dsack(d);
            }
            if let Some(r) = self.rack.as_mut() {
                r.on_dsack(d.of_probe, self.snd_una, self.snd_nxt);
            }
        }
        let of_probe = dsack.is_some_and(|d| d.of_probe);
        let repaired = self
            .tlp
            .as_mut()
            .is_some_and(|t| t.on_ack_checked(ack.ack, of_probe, pure_dupack));
        if repaired && self.recovery.is_none() {
            // Linux `tcp_init_cwnd_reduction` + `tcp_end_cwnd_reduction` in CWR: cwnd = ssthresh.
            let ss = self.cc.reduce_ssthresh(self.flight_bytes());
            self.cc.set_cwnd_bytes(ss);
            self.ecn_recover = Some(self.snd_nxt);
            self.stats.tlp_loss_reductions += 1;
        }
        // Only a D-SACK can complete the count; after a timeout the undo also waits for an ACK
        // that advances snd_una (the Timeout arm of `on_ack` tries again on those).
        if dsack.is_some() && self.undo.as_ref().is_some_and(Undo::all_dsacked) {
            self.try_undo(una_advanced);
        }
    }

    /// Linux `tcp_init_undo` with what an undo restores (`prior_cwnd`, `prior_ssthresh` =
    /// `tcp_current_ssthresh`); no ssthresh to restore while an ECN reduction is under way.
    fn begin_undo(&mut self) {
        let in_reduction = self.ecn_recover.is_some_and(|r| self.snd_una < r);
        let cwnd = self.cc.cwnd_bytes();
        let prior = Prior {
            cwnd_bytes: cwnd,
            ssthresh_bytes: (!in_reduction).then(|| self.cc.ssthresh_bytes().max(cwnd / 2 + cwnd / 4)),
        };
        let retrans_out = self.scoreboard.rtx_bytes().div_ceil(self.mss_bytes);
        if let Some(u) = self.undo.as_mut() {
            u.begin(self.snd_una, retrans_out, prior);
        }
    }

    /// Undo a reduction every retransmission of which came back D-SACKed (Linux, no timestamps):
    /// `tcp_try_undo_dsack` outside recovery and during fast recovery, `tcp_try_undo_recovery` as it
    /// ends, `tcp_try_undo_loss` after a timeout on an ACK that advances snd_una. cwnd and ssthresh
    /// return to at least what they were (`tcp_undo_cwnd_reduction`, `tcp_reno_undo_cwnd`); the
    /// recovery ends (`tcp_try_keep_open`), and after a timeout what it presumed lost is not.
    #[inline(never)]
    fn try_undo(&mut self, una_advanced: bool) {
        let kind = self.recovery.map(|r| r.kind);
        if kind == Some(RecoveryKind::Timeout) && !una_advanced {
            return;
        }
        let Some(prior) = self.undo.as_mut().and_then(Undo::take_if_spurious) else {
            return;
        };
        if let Some(ss) = prior.ssthresh_bytes {
            let w = self.cc.cwnd_bytes().max(prior.cwnd_bytes);
            self.cc.set_cwnd_bytes(w);
            if ss > self.cc.ssthresh_bytes() {
                self.cc.restore_ssthresh(ss);
            }
        }
        let ending = self.recovery.is_some_and(|r| self.snd_una >= r.point);
        match kind {
            Some(RecoveryKind::Timeout) => {
                self.scoreboard.unmark_lost();
                self.consecutive_timeouts = 0;
            }
            Some(RecoveryKind::Fast) if ending => {}
            _ => {
                if let Some(r) = self.rack.as_mut() {
                    r.on_dsack_undo();
                }
            }
        }
        self.recovery = None;
        self.prr = None;
        self.stats.spurious_undos += 1;
    }

    /// Congestion avoidance / slow start for `acked` new bytes, unless the application rather than
    /// cwnd limits the sender (`TcpConfig::cwnd_limited`, Linux `tcp_is_cwnd_limited`).
    #[inline]
    fn grow_cwnd(&mut self, acked: u64) {
        if let Some(u) = &self.cwnd_use {
            if !u.allows_growth(self.cc.cwnd_bytes(), self.cc.ssthresh_bytes()) {
                return;
            }
        }
        self.cc.on_new_ack(acked);
    }

    /// Record a transmission opportunity for `cwnd_limited` (Linux `tcp_cwnd_validate`).
    #[inline(always)]
    fn note_cwnd_use(&mut self, limited: bool) {
        let flight = self.flight_bytes();
        if let Some(u) = self.cwnd_use.as_mut() {
            u.validate(limited, flight, self.snd_una, self.snd_nxt);
        }
    }

    /// Loss marking inside a recovery: RACK's (RFC 8985 Sec. 6.2) or RFC 6675 IsLost(). Returns
    /// whether a segment was newly marked lost.
    fn mark_losses_in_recovery(&mut self, now: Time) -> bool {
        if self.rack.is_some() {
            self.rack_detect_loss(now)
        } else {
            let t = self.lost_threshold_bytes(self.dupthresh());
            self.scoreboard.mark_lost_by_sack(t)
        }
    }

    /// Bytes the receiver has reported delivered: cumulatively ACKed plus SACKed above snd_una. What
    /// one ACK adds to it is what PRR counts; a segment SACKed and later cumulatively ACKed is counted
    /// once. (It may fall when SACK information is forgotten after reneging.)
    fn delivered_bytes(&self) -> u64 {
        self.snd_una + self.scoreboard.sacked_bytes()
    }

    /// One PRR step for an ACK during a reduction (RFC 6937; Linux `tcp_cwnd_reduction`): cwnd =
    /// pipe + what PRR lets out for the `delivered` bytes this ACK newly delivered.
    fn prr_step(&mut self, delivered: u64, una_advanced: bool, newly_lost: bool) {
        let Some(prr) = self.prr.as_mut() else { return };
        let pipe = self.scoreboard.pipe_bytes(self.snd_nxt - self.snd_una);
        let ss = self.cc.ssthresh_bytes();
        if let Some(w) = prr.on_ack(delivered, pipe, ss, self.mss_bytes, una_advanced, newly_lost) {
            self.cc.set_cwnd_bytes(w);
        }
    }

    /// Start a PRR reduction from the current cwnd, if PRR is on; returns whether it did. Called
    /// before ssthresh is lowered (Linux `tcp_init_cwnd_reduction` saves `prior_cwnd` first).
    fn start_prr(&mut self) -> bool {
        if self.prr_enabled {
            self.prr = Some(Prr::start(self.cc.cwnd_bytes()));
        }
        self.prr.is_some()
    }

    /// RFC 8985 Sec. 6.2 step 5 and, outside recovery, recovery entry when RACK marks a loss (Linux
    /// `tcp_identify_packet_loss` then `tcp_time_to_recover`: any segment lost).
    /// With nothing in flight (the receiving end of a transfer, on every data segment) there is
    /// nothing to mark and no timer to keep: answered inline (the call cost 3 instructions per
    /// packet-hop on benchmark (a)).
    #[inline(always)]
    fn rack_detect_loss(&mut self, now: Time) -> bool {
        let Some(rack) = self.rack.as_mut() else {
            return false;
        };
        if self.scoreboard.is_empty() {
            rack.reo_deadline = None;
            return false;
        }
        self.rack_detect_loss_in_flight(now)
    }

    #[inline(never)]
    fn rack_detect_loss_in_flight(&mut self, now: Time) -> bool {
        let Some(rack) = self.rack.as_mut() else {
            return false;
        };
        let lost = rack.detect_loss(
            now,
            &mut self.scoreboard,
            self.recovery.is_some(),
            self.mss_bytes,
            self.dupack_threshold,
            self.rtt.srtt(),
        );
        if lost && self.recovery.is_none() {
            self.enter_rack_recovery();
        }
        lost
    }

    /// RFC 8985 Sec. 6.2 / RFC 6675 Sec. 5 steps (4.1)-(4.3): RecoveryPoint = HighData, cwnd =
    /// ssthresh, the first lost segment retransmitted at once; the rest follow in sequence order
    /// as `pipe` allows (NextSeg() rule 1).
    fn enter_rack_recovery(&mut self) {
        let prr = self.start_prr();
        let ss = self.begin_fast_recovery();
        if !prr {
            self.cc.set_cwnd_bytes(ss);
        }
        if let Some(idx) = self.scoreboard.next_lost() {
            let off = self.scoreboard.seg(idx).start;
            self.fast_retransmit(off);
        }
        if let Some(t) = self.tlp.as_mut() {
            t.cancel();
        }
    }

    /// RFC 8985 Sec. 7.2: (re)schedule the probe timeout.
    fn arm_tlp(&mut self, now: Time) {
        if let Some(t) = self.tlp.as_mut() {
            t.arm(
                now,
                self.recovery.is_none(),
                self.scoreboard.len(),
                self.rtt.srtt(),
                self.rto_deadline,
            );
        }
    }

    /// RFC 5681 Sec. 3.2 / RFC 6675 Sec. 5: enter fast recovery on DupThresh duplicate ACKs or when
    /// the first unacknowledged segment IsLost().
    fn detect_loss(&mut self) {
        let dt = self.dupthresh();
        if dt == u32::MAX || self.snd_una == self.snd_nxt {
            return;
        }
        let sack_lost = self.sack && self.scoreboard.sacked_bytes() > self.lost_threshold_bytes(dt);
        if self.dupacks >= dt || sack_lost {
            self.enter_fast_recovery(dt);
        }
    }

    /// Enter fast recovery because a probe (TLP) or a coded packet (TCP-IR) arrived while the
    /// unSACKed bytes below `end` did not: those are presumed lost (as RACK / FACK would).
    pub(crate) fn enter_fast_recovery_up_to(&mut self, end: u64) {
        if self.recovery.is_some() || self.snd_una >= end.min(self.snd_nxt) {
            return;
        }
        // RFC 6675 Sec. 5 step (4.2): cwnd = ssthresh (also without SACK: no dupACKs to inflate by).
        // With PRR the ACK that carried the probe's or coded packet's news steps it as any other.
        let prr = self.start_prr();
        let ss = self.begin_fast_recovery();
        if !prr {
            self.cc.set_cwnd_bytes(ss);
        }
        self.scoreboard.mark_lost_up_to(end);
        self.fast_retransmit(self.snd_una);
    }

    /// RFC 6675 Sec. 5 step (4.1) / RFC 6582 Sec. 3.2 step 2: RecoveryPoint = HighData;
    /// ssthresh = max(FlightSize / 2, 2 SMSS). Returns the new ssthresh.
    pub(crate) fn begin_fast_recovery(&mut self) -> u64 {
        self.begin_undo();
        self.recovery = Some(Recovery {
            kind: RecoveryKind::Fast,
            point: self.snd_nxt,
        });
        self.cc.reduce_ssthresh(self.flight_bytes())
    }

    /// RFC 6675 Sec. 5 step (4.3): retransmit the segment holding `offset` (the first one presumed
    /// lost, or one a loss notification names), regardless of cwnd.
    pub(crate) fn fast_retransmit(&mut self, offset: u64) {
        // A loss reduction covers the ECN reaction for this window too (RFC 3168 Sec. 6.1.2).
        self.ecn_recover = Some(self.snd_nxt);
        self.forced_rtx.push_back(offset);
        self.stats.fast_retransmits += 1;
        self.ledger.charge_fast_retransmit(offset);
    }

    fn enter_fast_recovery(&mut self, dt: u32) {
        let prr = self.sack && self.start_prr();
        let ss = self.begin_fast_recovery();
        if self.sack {
            // RFC 6675 Sec. 5 step (4.2): cwnd = ssthresh; with PRR the entering ACK steps it.
            if !prr {
                self.cc.set_cwnd_bytes(ss);
            }
            let t = self.lost_threshold_bytes(dt);
            self.scoreboard.mark_lost_by_sack(t);
        } else {
            // RFC 6582 Sec. 3.2 step 2 / RFC 5681 Sec. 3.2 step 3: cwnd = ssthresh + 3 SMSS
            // (the segments that left the network; DupThresh of them with early retransmit).
            let inflation = u64::from(dt.min(3)) * self.mss_bytes;
            self.cc.set_cwnd_bytes(ss + inflation);
        }
        self.fast_retransmit(self.snd_una);
    }

    /// An explicit request to retransmit the segment holding `offset` at once, regardless of cwnd
    /// (for schemes with precise loss notification). Returns false if it is no longer outstanding.
    pub(crate) fn retransmit_segment(&mut self, offset: u64) -> bool {
        if offset < self.snd_una || offset >= self.snd_nxt {
            return false;
        }
        self.forced_rtx.push_back(offset);
        true
    }

    /// The cumulative ACK stopped at a SACKed segment: the receiver does not hold data it SACKed
    /// (RFC 2018 Sec. 8). As Linux (`tcp_check_sack_reneging`), give it a short while to send more
    /// ACKs, then time out: the timer is re-armed to `max(SRTT / 2, 10 ms)` (never later than the RTO),
    /// and the timeout forgets the SACK marks (`on_rto`). Without this a segment SACKed but not held
    /// is never sent again and the flow stalls for good.
    fn suspect_reneging(&mut self, now: Time) {
        self.stats.sack_renegings += 1;
        let half_srtt = self.rtt.srtt().map_or(Dur::ZERO, |s| Dur(s.0 / 2));
        let wait = half_srtt.max(RENEGING_MIN_WAIT).min(self.rtt.rto());
        self.rto_deadline = Some(self.clock.at(now, wait));
    }

    /// The sender's next deadline: the RTO, RACK's reordering timer, the probe timeout or an
    /// extension's.
    pub(crate) fn deadline(&self, ext: &Extensions) -> Option<Time> {
        let reo = self.rack.as_ref().and_then(|r| r.reo_deadline);
        let pto = self.tlp.as_ref().and_then(|t| t.deadline);
        earliest(
            earliest(self.rto_deadline, reo),
            earliest(pto, ext.deadline(self)),
        )
    }

    /// A timer expired: an extension's (TLP's probe timeout pre-empts the RTO when due first),
    /// RACK's reordering timer, RACK-TLP's probe timeout, or the RTO.
    pub(crate) fn on_timer(&mut self, now: Time, ext: &mut Extensions) {
        if ext.on_timer(self, now) {
            return;
        }
        if self
            .rack
            .as_ref()
            .and_then(|r| r.reo_deadline)
            .is_some_and(|d| d <= now)
        {
            // RFC 8985 Sec. 6.3: re-run the detection; what is lost now enters recovery.
            self.stats.reorder_timeouts += 1;
            let entered = self.recovery.is_none();
            self.rack_detect_loss(now);
            if entered && self.recovery.is_some() {
                // Linux `tcp_rack_reo_timeout` steps PRR as if one segment had been delivered (never
                // more than has been).
                self.prr_step(self.mss_bytes.min(self.delivered_bytes()), false, true);
            }
            return;
        }
        if let Some(t) = self.tlp.as_mut() {
            if t.deadline.is_some_and(|d| d <= now) {
                // RFC 8985 Sec. 7.3: send the probe at the next opportunity and re-arm the RTO
                // (Linux `tcp_send_loss_probe` ends with `tcp_rearm_rto`).
                t.deadline = None;
                t.probe_due = self.recovery.is_none();
                self.rto_deadline = Some(self.rto_at(now));
                self.stats.probe_timeouts += 1;
                return;
            }
        }
        self.on_rto(now, ext);
    }

    /// RFC 6298 Sec. 5.4-5.6 and RFC 5681 Sec. 3.1: the retransmission timer expired.
    pub(crate) fn on_rto(&mut self, now: Time, ext: &mut Extensions) {
        match self.rto_deadline {
            Some(d) if d <= now => {}
            _ => return,
        }
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
            return;
        }
        // Linux `tcp_enter_loss`: a timeout outside recovery starts a reduction that may be undone;
        // one during a recovery keeps that recovery's.
        if self.recovery.is_none() {
            self.begin_undo();
        }
        self.cc.on_timeout(
            self.flight_bytes(),
            self.consecutive_timeouts == 0,
            now,
            self.snd_nxt,
        );
        self.consecutive_timeouts += 1;
        let reneged = self.scoreboard.head_sacked();
        // Back off unless an extension holds the RTO (pFabric probe mode probes at a fixed period).
        // Under Karn not after reneging: Linux doubles the RTO there too, but collapses it again on
        // the first ACK of the resent data (its RTT sample from the timestamp echo resets the
        // back-off), while Karn would keep it doubled until data never retransmitted is ACKed; so
        // Karn skips the doubling and ends up where Linux does once the left edge is ACKed.
        let skip = reneged && self.rto_backoff == RtoBackoff::Karn;
        if !ext.on_rto(self.consecutive_timeouts) && !skip {
            self.rtt.back_off();
        }
        if let Some(t) = self.tlp.as_mut() {
            t.cancel();
        }
        if let Some(r) = self.rack.as_mut() {
            r.reo_deadline = None;
        }
        // RFC 6675 Sec. 5.1: keep the SACK scoreboard, presume everything else lost. But if the
        // first unacknowledged segment is SACKed the receiver reneged: forget every SACK mark
        // (RFC 2018 Sec. 8; Linux `tcp_timeout_mark_lost`), so the left edge is resent.
        if reneged {
            self.scoreboard.mark_all_lost_forgetting_sacks();
        } else {
            self.scoreboard.mark_all_lost();
        }
        self.forced_rtx.clear();
        // A timeout ends any PRR reduction (Linux `tcp_enter_loss`: the Loss state slow-starts).
        self.prr = None;
        self.recovery = Some(Recovery {
            kind: RecoveryKind::Timeout,
            point: self.snd_nxt,
        });
        self.ecn_recover = Some(self.snd_nxt);
        self.dupacks = 0;
        self.stats.timeouts += 1;
        self.ledger.charge_timeout(self.snd_una);
        // RFC 6298 Sec. 5.5 / 5.6: restart the timer with the backed-off RTO. The retransmission of
        // the first segment follows from cwnd = 1 SMSS and NextSeg().
        self.rto_deadline = Some(self.rto_at(now));
    }

    /// The next segment to put on the wire, if the windows allow one (RFC 6675 Sec. 5 step (C),
    /// NextSeg() rules 1 and 2; no Nagle).
    ///
    /// NextSeg() rules 3 and 4 (retransmitting segments not yet deemed lost, and the once-per-recovery
    /// "rescue" retransmission) are left out on purpose: RFC 6675 leaves them to the implementer,
    /// Linux does not use them, and tail-loss recovery is exactly what the schemes built on this
    /// sender (TLP, TCP-IR, CP) are compared on, so the baseline must not hide a tail loss itself.
    #[inline(always)]
    pub(crate) fn next_transmission(&mut self, now: Time, ext: &mut Extensions) -> Option<Transmission> {
        match ext.before_retransmissions(self, now) {
            Step::Pass => {}
            Step::Send(tx) => return Some(tx),
            Step::Hold => return None,
        }
        while let Some(off) = self.forced_rtx.pop_front() {
            if let Some(idx) = self.scoreboard.find(off) {
                if !self.scoreboard.seg(idx).sacked {
                    return Some(self.retransmit(idx, now));
                }
            }
        }
        if self.tlp.as_ref().is_some_and(|t| t.probe_due) {
            let tx = super::ext::loss_probe(self, now);
            if let Some(t) = self.tlp.as_mut() {
                t.probe_due = false;
                t.end_seq = tx.map(|_| self.snd_nxt);
                t.retrans = tx.is_some_and(|x| x.retransmit);
            }
            if tx.is_some() {
                return tx;
            }
        }
        match ext.after_retransmissions(self, now) {
            Step::Pass => {}
            Step::Send(tx) => return Some(tx),
            Step::Hold => return None,
        }
        let used = self.used_window_bytes();
        let cwnd = self.cc.cwnd_bytes();
        if self.recovery.is_some() {
            if let Some(idx) = self.scoreboard.next_lost() {
                let len = u64::from(self.scoreboard.seg(idx).len_bytes);
                if used + len <= cwnd || used == 0 {
                    return Some(self.retransmit(idx, now));
                }
                self.note_cwnd_use(true);
                return None;
            }
        }
        if !self.can_send_new_data() {
            return None;
        }
        // RFC 5681 Sec. 4.1: restart from the initial window after an idle period > RTO.
        if self.slow_start_after_idle && self.snd_una == self.snd_nxt {
            if let Some(t) = self.last_data_sent_at {
                if now - t > self.rtt.rto() {
                    self.cc.restart_after_idle();
                }
            }
        }
        let len = (self.stream_end - self.snd_nxt)
            .min(self.mss_bytes)
            .min(self.snd_una + self.peer_window_bytes - self.snd_nxt);
        // RFC 3042: on the first two duplicate ACKs, allow one more segment each beyond cwnd.
        let mut allowance = cwnd;
        if self.limited_transmit && self.recovery.is_none() && self.dupacks <= 2 {
            allowance += u64::from(self.dupacks) * self.mss_bytes;
        }
        if used + len > allowance {
            self.note_cwnd_use(true);
            return None;
        }
        // Linux `CA_EVENT_TX_START`: data leaves with nothing in flight.
        if self.snd_una == self.snd_nxt {
            if let Some(t) = self.last_data_sent_at {
                self.cc.on_tx_start(now, t);
            }
        }
        let tx = self.send_new(now, len);
        self.note_cwnd_use(used + len >= cwnd);
        self.arm_tlp(now);
        ext.on_new_data(self, now);
        Some(tx)
    }

    /// Put the next `len` (at most) new bytes on the wire.
    #[inline(always)]
    pub(crate) fn send_new(&mut self, now: Time, len: u64) -> Transmission {
        let len = len
            .min(self.stream_end - self.snd_nxt)
            .min(self.snd_una + self.peer_window_bytes - self.snd_nxt);
        let start = self.snd_nxt;
        self.snd_nxt += len;
        self.scoreboard.push(start, len as u32, now, 0);
        self.ledger.charge_bytes(start, start + len, Charge::New);
        self.on_data_sent(now, len);
        let cwr = std::mem::take(&mut self.cwr_pending);
        Transmission {
            start,
            len_bytes: len as u32,
            retransmit: false,
            cwr,
            tag: 0,
        }
    }

    pub(crate) fn retransmit(&mut self, idx: usize, now: Time) -> Transmission {
        self.retransmit_counted(idx, now, true)
    }

    /// A loss probe's retransmission: Linux sends it through `__tcp_retransmit_skb`, which the undo
    /// does not wait for (`undo_retrans` unchanged).
    pub(crate) fn retransmit_probe(&mut self, idx: usize, now: Time) -> Transmission {
        self.retransmit_counted(idx, now, false)
    }

    fn retransmit_counted(&mut self, idx: usize, now: Time, counts_for_undo: bool) -> Transmission {
        if let Some(u) = self.undo.as_mut() {
            u.on_retransmit(counts_for_undo);
        }
        self.scoreboard.on_retransmit(idx, now);
        let s = *self.scoreboard.seg(idx);
        let len = u64::from(s.len_bytes);
        self.ledger.charge_bytes(s.start, s.end(), Charge::Retransmit);
        self.stats.retransmits += 1;
        self.stats.retransmitted_bytes += len;
        self.on_data_sent(now, len);
        // Linux `tcp_xmit_retransmit_queue`: retransmitting the head of the retransmission queue
        // re-arms the RTO from now (unless RACK's reordering timer holds Linux's one timer slot), so
        // a repair that waits in a deep queue is not overtaken by a timer armed from the last ACK.
        // RFC 6298 Sec. 5 restarts the timer only on ACKs of new data and on its own expiry.
        let reo_pending = self.rack.as_ref().is_some_and(|r| r.reo_deadline.is_some());
        if self.rto_restart_on_retransmit && s.start == self.snd_una && !reo_pending {
            self.rto_deadline = Some(self.rto_at(now));
        }
        Transmission {
            start: s.start,
            len_bytes: s.len_bytes,
            retransmit: true,
            cwr: false,
            tag: s.tag,
        }
    }

    pub(crate) fn on_data_sent(&mut self, now: Time, len: u64) {
        if let Some(p) = self.prr.as_mut() {
            p.on_sent(len);
        }
        self.stats.data_segments_sent += 1;
        self.stats.payload_bytes_sent += len;
        self.last_data_sent_at = Some(now);
        // RFC 6298 Sec. 5.1: start the timer if it is not running.
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(self.rto_at(now));
        }
    }
}
