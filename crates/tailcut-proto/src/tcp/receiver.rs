//! The receiving half of a TCP connection: reassembly bookkeeping, cumulative and selective
//! acknowledgement, delayed ACKs, ECN echo, and in-order message delivery. Payload bytes are kept
//! only when the driver carries them (`bytes.rs`); the bookkeeping never reads them.

use super::bytes::RecvBytes;
use super::config::{DelayedAck, LinuxDelayedAck};
use super::jiffies::TimerClock;
use crate::engine::{AppEvent, MsgId};
use crate::packet::{Ecn, Packet, SackBlocks, TcpFlags, TcpHeader};
use crate::seq::Seq;
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// How the receiver echoes Congestion Experienced marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EcnEcho {
    Off,
    /// RFC 3168 Sec. 6.1.3: set ECE on every ACK from a CE mark until a segment with CWR arrives.
    Classic,
    /// RFC 8257 Sec. 3.2: ECE mirrors the CE state of the latest data segment.
    Dctcp,
}

/// A received range above `rcv_nxt`, `[start, end)`, with the time it last grew (for SACK order).
#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    stamp: u64,
}

/// An ACK that must go out before the current segment is accounted for (DCTCP CE-state change with a
/// delayed ACK pending): it acknowledges `ack` with ECE = `ece`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlushAck {
    pub(crate) ack: u64,
    pub(crate) ece: bool,
}

impl FlushAck {
    /// Make `p`, a pure ACK of the connection whose peer's initial sequence number is `peer_isn`,
    /// this flush ACK.
    pub(crate) fn stamp(self, p: &mut Packet, peer_isn: Seq) {
        if let Some(ph) = p.tcp_mut() {
            ph.ack = Seq::from_offset(peer_isn, self.ack);
            if self.ece {
                ph.flags.insert(TcpFlags::ECE);
            } else {
                ph.flags.remove(TcpFlags::ECE);
            }
        }
    }
}

/// What one data segment did to the receive stream.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SegmentOutcome {
    pub(crate) flush: Option<FlushAck>,
    pub(crate) delivered_bytes: u64,
    pub(crate) duplicate: bool,
    pub(crate) out_of_order: bool,
}

/// Linux's `TCP_MSS_DEFAULT` (536): `tcp_initialize_rcv_mss` starts the receiver's MSS guess no higher.
const LINUX_MSS_DEFAULT: u64 = 536;
/// Linux's `TCP_MIN_MSS` (88): the lowest receiver MSS guess.
const LINUX_MIN_MSS: u64 = 88;
/// `tcp_send_delayed_ack`'s `max_ato` before the RTT bound (HZ / 2).
const LINUX_MAX_ATO: Dur = Dur::from_millis(500);
/// The RTO a receiver assumes before its endpoint tells it one (Linux `TCP_TIMEOUT_INIT`, 1 s).
const INITIAL_RTO: Dur = Dur::from_millis(1_000);

/// Linux's receiver-side ACK state (`struct inet_connection_sock`'s `icsk_ack`).
#[derive(Clone, Copy, Debug)]
struct LinuxAck {
    cfg: LinuxDelayedAck,
    /// `icsk_ack.quick`: segments still to be acknowledged one by one (quick-ACK mode while > 0).
    quick: u32,
    /// `icsk_ack.ato`; zero until the first data segment (`tcp_event_data_recv`).
    ato: Dur,
    /// `icsk_ack.lrcvtime`: when in-order data last arrived.
    lrcvtime: Time,
    /// `icsk_ack.rcv_mss`: the peer's segment size as measured (`tcp_measure_rcv_mss`).
    rcv_mss: u64,
    /// `ICSK_ACK_SCHED`: data arrived that the next ACK acknowledges (`inet_csk_schedule_ack`).
    scheduled: bool,
}

impl LinuxAck {
    fn new(cfg: LinuxDelayedAck, window_bytes: u32, mss_bytes: u64) -> Self {
        // `tcp_initialize_rcv_mss`: an underestimate, corrected upwards by the first full segments.
        let hint = mss_bytes
            .min(u64::from(window_bytes) / 2)
            .clamp(LINUX_MIN_MSS, LINUX_MSS_DEFAULT);
        LinuxAck {
            cfg,
            quick: 0,
            ato: Dur::ZERO,
            lrcvtime: Time::ZERO,
            rcv_mss: hint,
            scheduled: false,
        }
    }

    /// `tcp_measure_rcv_mss`, the growing half: a segment at least as long as the guess raises it
    /// (never above our MSS). Linux's shrinking on runs of equal shorter segments is left out.
    fn measure_rcv_mss(&mut self, len: u64, mss_bytes: u64) {
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(mss_bytes);
        }
    }

    /// `tcp_incr_quickack`: window / (2 rcv_mss) quick ACKs (2 if that is 0), at most `max`, never
    /// fewer than are left.
    fn incr_quickack(&mut self, max: u32, window_bytes: u32) {
        let n = u64::from(window_bytes) / (2 * self.rcv_mss.max(1));
        let n = if n == 0 {
            2
        } else {
            n.min(u64::from(u32::MAX)) as u32
        };
        self.quick = self.quick.max(n.min(max));
    }

    /// `tcp_enter_quickack_mode`: more quick ACKs and the ATO back to its floor (pingpong mode, which
    /// Linux also leaves here, is not modelled).
    fn enter_quickack_mode(&mut self, max: u32, window_bytes: u32) {
        self.incr_quickack(max, window_bytes);
        self.ato = self.cfg.ato_min;
    }

    /// `tcp_event_data_recv`: the ATO follows the spacing of in-order arrivals; the first data
    /// segment, and one after an idle period longer than the RTO, enters quick-ACK mode.
    fn data_recv(&mut self, now: Time, rto: Dur, window_bytes: u32) {
        let ato_min = self.cfg.ato_min;
        if self.ato == Dur::ZERO {
            self.incr_quickack(self.cfg.quickacks_max, window_bytes);
            self.ato = ato_min;
        } else {
            let m = now - self.lrcvtime;
            if m <= Dur(ato_min.0 / 2) {
                self.ato = Dur(self.ato.0 / 2 + ato_min.0 / 2);
            } else if m < self.ato {
                self.ato = Dur(self.ato.0 / 2 + m.0).min(rto);
            } else if m > rto {
                // "Too long gap": the sender restarts from a small window; ACK it quickly.
                self.incr_quickack(self.cfg.quickacks_max, window_bytes);
            }
        }
        self.lrcvtime = now;
    }

    /// `tcp_send_delayed_ack`: the timeout for an ACK held back now.
    fn delack_timeout(&self, srtt: Option<Dur>) -> Dur {
        let mut ato = self.ato;
        if ato > self.cfg.delack_min {
            // Arrivals are far apart: no longer than an RTT (at least `delack_min`) or HZ / 2.
            // Linux lowers HZ / 2 to `TCP_DELACK_MAX` after a pushed segment; the clamp at
            // `delack_max` below covers that unless `delack_max` is set above 200 ms.
            let mut max_ato = LINUX_MAX_ATO;
            if let Some(rtt) = srtt {
                max_ato = max_ato.min(rtt.max(self.cfg.delack_min));
            }
            ato = ato.min(max_ato);
        }
        ato.min(self.cfg.delack_max)
    }
}

/// The receiver's ACK policy (`TcpConfig::delayed_ack`).
#[derive(Clone, Copy, Debug)]
enum AckPolicy {
    /// Every segment at once.
    Immediate,
    /// Every second full segment or after the fixed delay.
    Fixed(Dur),
    Linux(LinuxAck),
}

pub(crate) struct Receiver {
    pub(crate) rcv_nxt: u64,
    /// Sorted, disjoint, non-adjacent ranges received above `rcv_nxt`.
    ooo: Vec<Range>,
    stamp: u64,
    window_bytes: u32,
    policy: AckPolicy,
    mss_bytes: u64,
    /// The connection's RTO and SRTT (`set_rtt`), which bound Linux's ATO and delayed-ACK timer.
    rto: Dur,
    srtt: Option<Dur>,
    /// In-order bytes received since the last ACK sent.
    unacked_bytes: u64,
    pub(crate) ack_deadline: Option<Time>,
    ack_now: bool,
    ecn: EcnEcho,
    ece_latched: bool,
    ce_state: bool,
    /// RFC 7323 TS.Recent: the peer's timestamp to echo.
    pub(crate) ts_recent: u32,
    /// Expected messages: (id, end offset), in stream order.
    msgs: VecDeque<(MsgId, u64)>,
    expected_end: u64,
    /// The payload bytes, when the driver carries them.
    bytes: Option<RecvBytes>,
    /// RFC 2883 D-SACK on (`TcpConfig::dsack`).
    dsack_on: bool,
    /// The clock of the delayed-ACK timer (`timer_hz`).
    clock: TimerClock,
    /// The duplicate range `[start, end)` the next ACK reports as its first SACK block (Linux
    /// `tcp_dsack_set`; cleared once an ACK went out).
    dsack: Option<(u64, u64)>,
}

impl Receiver {
    pub(crate) fn new(
        window_bytes: u32,
        mss_bytes: u32,
        delayed_ack: Option<DelayedAck>,
        ecn: EcnEcho,
    ) -> Self {
        let mss_bytes = u64::from(mss_bytes.max(1));
        let policy = match delayed_ack {
            None => AckPolicy::Immediate,
            Some(DelayedAck::Fixed(d)) => AckPolicy::Fixed(d),
            Some(DelayedAck::Linux(cfg)) => AckPolicy::Linux(LinuxAck::new(cfg, window_bytes, mss_bytes)),
        };
        Receiver {
            rcv_nxt: 0,
            ooo: Vec::new(),
            stamp: 0,
            window_bytes,
            policy,
            mss_bytes,
            rto: INITIAL_RTO,
            srtt: None,
            unacked_bytes: 0,
            ack_deadline: None,
            ack_now: false,
            ecn,
            ece_latched: false,
            ce_state: false,
            ts_recent: 0,
            msgs: VecDeque::new(),
            expected_end: 0,
            bytes: None,
            dsack_on: false,
            clock: TimerClock::default(),
            dsack: None,
        }
    }

    /// Report duplicate segments with D-SACK (RFC 2883).
    pub(crate) fn set_dsack(&mut self, on: bool) {
        self.dsack_on = on;
    }

    /// Linux's delayed-ACK timer runs in jiffies under `timer_hz` (`tcp/jiffies.rs`).
    pub(crate) fn set_clock(&mut self, clock: TimerClock) {
        self.clock = clock;
    }

    /// Linux `tcp_data_queue_ofo`: data already held out of order is D-SACKed (`tcp_dsack_set` for a
    /// segment inside a block; the overlap for a partial one). Out of line: rare, and `on_data` is
    /// on every packet's path.
    #[cold]
    fn dsack_ooo_overlap(&mut self, start: u64, end: u64) {
        if let Some(r) = self.ooo.iter().find(|r| r.start < end && start < r.end) {
            let (s, e) = (start.max(r.start), end.min(r.end));
            self.dsack_set(s, e);
        }
    }

    /// Linux `tcp_dsack_set`: remember the duplicate `[start, end)` for the next ACK (a later
    /// duplicate before that ACK replaces it, as Linux's single `duplicate_sack` slot does).
    fn dsack_set(&mut self, start: u64, end: u64) {
        if self.dsack_on && start < end {
            self.dsack = Some((start, end));
        }
    }

    /// Keep payload bytes and hand each message's over (`take_bytes`); `history` in-order bytes
    /// stay for TCP-IR's rebuild of a lost segment.
    pub(crate) fn carry_bytes(&mut self, history: usize) {
        let mut b = RecvBytes::new(self.window_bytes);
        b.keep_history(history);
        self.bytes = Some(b);
    }

    pub(crate) fn carries_bytes(&self) -> bool {
        self.bytes.is_some()
    }

    /// Stores the payload of a data segment at stream offset `start` whose header says `len` bytes.
    /// False (the segment is to be dropped unseen) when the receiver carries bytes and the payload
    /// is not `len` bytes long or lies beyond its buffer; always true without bytes.
    #[inline(always)]
    pub(crate) fn accept_bytes(&mut self, start: u64, len: u32, payload: &[u8]) -> bool {
        let Some(b) = self.bytes.as_mut() else {
            return true;
        };
        if payload.len() != len as usize || !b.acceptable(start + u64::from(len), self.expected_end) {
            return false;
        }
        b.store(start, payload);
        true
    }

    /// The bytes of received message `msg`, once.
    pub(crate) fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        self.bytes.as_mut()?.take(msg)
    }

    /// The receiver's bytes, when it carries them.
    pub(crate) fn bytes(&self) -> Option<&RecvBytes> {
        self.bytes.as_ref()
    }

    pub(crate) fn window_bytes(&self) -> u32 {
        self.window_bytes
    }

    /// The next `len_bytes` bytes of the stream (after those already expected) are message `msg`.
    pub(crate) fn expect_message(&mut self, msg: MsgId, len_bytes: u64, events: &mut VecDeque<AppEvent>) {
        self.expected_end += len_bytes;
        if len_bytes == 0 {
            if let Some(b) = self.bytes.as_mut() {
                b.finish_empty(msg);
            }
            events.push_back(AppEvent::MessageReceived { msg });
            return;
        }
        self.msgs.push_back((msg, self.expected_end));
        self.deliver_messages(events);
    }

    #[inline(always)]
    fn deliver_messages(&mut self, events: &mut VecDeque<AppEvent>) {
        while let Some(&(msg, end)) = self.msgs.front() {
            if end > self.rcv_nxt {
                break;
            }
            if let Some(b) = self.bytes.as_mut() {
                b.finish(msg, end);
            }
            events.push_back(AppEvent::MessageReceived { msg });
            self.msgs.pop_front();
        }
    }

    /// ECE for the next ACK.
    pub(crate) fn ece(&self) -> bool {
        match self.ecn {
            EcnEcho::Off => false,
            EcnEcho::Classic => self.ece_latched,
            EcnEcho::Dctcp => self.ce_state,
        }
    }

    /// A data segment `[start, start + len)` arrived (`len > 0`).
    pub(crate) fn on_data(
        &mut self,
        now: Time,
        start: u64,
        len_bytes: u32,
        ce: bool,
        cwr: bool,
        events: &mut VecDeque<AppEvent>,
    ) -> SegmentOutcome {
        let mut out = SegmentOutcome::default();
        let linux = matches!(self.policy, AckPolicy::Linux(_));
        // Linux `__tcp_ecn_check_ce`: the first CE mark of an episode (no ECE being echoed yet) enters
        // quick-ACK mode for 2 segments, since the sender may be down to a tiny window. Applied once the
        // segment's ATO update is done, as Linux calls it from `tcp_event_data_recv`.
        let mut ce_quickack = false;
        if linux && self.ecn != EcnEcho::Off && cwr {
            // Linux `tcp_ecn_accept_cwr`: a data segment with CWR is acknowledged at once.
            self.ack_now = true;
        }
        match self.ecn {
            EcnEcho::Off => {}
            EcnEcho::Classic => {
                // RFC 3168 Sec. 6.1.3: CWR stops the echo; a new CE starts it again.
                if cwr {
                    self.ece_latched = false;
                }
                if ce {
                    ce_quickack = !self.ece_latched;
                    self.ece_latched = true;
                }
            }
            EcnEcho::Dctcp => {
                // RFC 8257 Sec. 3.2: on a CE-state change, acknowledge at once what arrived under the
                // old state (with the old ECE) so the sender sees marks byte-exactly.
                if ce != self.ce_state {
                    if self.unacked_bytes > 0 {
                        out.flush = Some(FlushAck {
                            ack: self.rcv_nxt,
                            ece: self.ce_state,
                        });
                        self.unacked_bytes = 0;
                        self.ack_deadline = None;
                    }
                    self.ce_state = ce;
                    // Linux `dctcp_ece_ack_update` also acknowledges the segment that changed the
                    // state at once. DCTCP takes over the echo, so no quick-ACK mode on CE.
                    if linux {
                        self.ack_now = true;
                    }
                }
            }
        }

        let end = start + u64::from(len_bytes);
        self.stamp += 1;
        let (window, rto, srtt) = (self.window_bytes, self.rto, self.srtt);
        if let AckPolicy::Linux(l) = &mut self.policy {
            l.scheduled = true;
            if end > self.rcv_nxt && start <= self.rcv_nxt {
                l.measure_rcv_mss(u64::from(len_bytes), self.mss_bytes);
            }
        }
        if end <= self.rcv_nxt {
            // RFC 5681 Sec. 4.2: a duplicate segment is acknowledged at once. Linux `tcp_data_queue`
            // also enters quick-ACK mode: the sender retransmitted, so an ACK was probably lost.
            // RFC 2883 Sec. 4 / Linux `tcp_data_queue` -> `tcp_dsack_set`: that ACK reports the
            // duplicate as a D-SACK block.
            out.duplicate = true;
            self.dsack_set(start, end);
            self.ack_now = true;
            if let AckPolicy::Linux(l) = &mut self.policy {
                l.enter_quickack_mode(l.cfg.quickacks_max, window);
            }
        } else if start > self.rcv_nxt {
            // RFC 5681 Sec. 4.2: an out-of-order segment is acknowledged at once (dupACK with SACK).
            // Linux (`tcp_data_queue_ofo`, `__tcp_ack_snd_check`) does so without quick-ACK mode since
            // 4.18; its compression of the 4th and later dupACKs (`tcp_comp_sack_nr`) is left out.
            out.out_of_order = true;
            if self.dsack_on {
                self.dsack_ooo_overlap(start, end);
            }
            self.insert_range(start, end);
            self.ack_now = true;
            if let (AckPolicy::Linux(l), true) = (&mut self.policy, ce_quickack) {
                l.enter_quickack_mode(2, window);
            }
        } else {
            if start < self.rcv_nxt {
                // Linux `tcp_data_queue`: a segment partly below `rcv_nxt` D-SACKs the old part.
                self.dsack_set(start, self.rcv_nxt);
            }
            let had_holes = !self.ooo.is_empty();
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            // Pull in the ranges the new data now touches.
            let n = self.ooo.partition_point(|r| r.start <= self.rcv_nxt);
            if n > 0 {
                self.rcv_nxt = self.rcv_nxt.max(self.ooo[n - 1].end);
                self.ooo.drain(..n);
            }
            out.delivered_bytes = self.rcv_nxt - before;
            if let Some(b) = self.bytes.as_mut() {
                b.advance(self.rcv_nxt);
            }
            self.deliver_messages(events);
            if let AckPolicy::Linux(l) = &mut self.policy {
                l.data_recv(now, rto, window);
                if ce_quickack {
                    l.enter_quickack_mode(2, window);
                }
            }
            if had_holes {
                // RFC 5681 Sec. 4.2: a segment that fills (part of) a hole is acknowledged at once.
                self.ack_now = true;
            } else {
                self.unacked_bytes += out.delivered_bytes;
                match &mut self.policy {
                    // RFC 1122 Sec. 4.2.3.2 / RFC 5681 Sec. 4.2: ACK at least every second
                    // full-sized segment, and within the delay. As Linux (`__tcp_ack_snd_check`):
                    // ACK once more than one MSS is unacknowledged.
                    AckPolicy::Fixed(delay) if self.unacked_bytes <= self.mss_bytes => {
                        if self.ack_deadline.is_none() {
                            self.ack_deadline = Some(now + *delay);
                        }
                    }
                    AckPolicy::Linux(l) => {
                        // `__tcp_ack_snd_check`: at once when more than one full segment (as
                        // measured) is unacknowledged, in quick-ACK mode, or when asked to (CWR, a
                        // DCTCP CE change); otherwise the delayed-ACK timer. Linux also requires the
                        // window it would offer now to reach the one offered; the application here
                        // reads at once, so it always does.
                        if self.unacked_bytes > l.rcv_mss || l.quick > 0 || self.ack_now {
                            self.ack_now = true;
                        } else {
                            self.send_delayed_ack(now, srtt);
                        }
                    }
                    _ => self.ack_now = true,
                }
            }
        }
        out
    }

    /// Linux `tcp_send_delayed_ack`: arm the delayed-ACK timer at the ATO (bounded as
    /// `LinuxAck::delack_timeout` says), keeping an earlier deadline; an ACK whose timer would fire
    /// within a quarter of the new timeout goes out now.
    fn send_delayed_ack(&mut self, now: Time, srtt: Option<Dur>) {
        let AckPolicy::Linux(l) = &self.policy else {
            return;
        };
        let ato = l.delack_timeout(srtt);
        let mut timeout = self.clock.at(now, ato);
        if let Some(old) = self.ack_deadline {
            if old <= now + Dur(ato.0 / 4) {
                self.ack_now = true;
                return;
            }
            timeout = timeout.min(old);
        }
        self.ack_deadline = Some(timeout);
    }

    /// Whether the ACK policy reads the connection's RTO and SRTT and adapts at its timer (Linux's);
    /// the endpoint skips `set_rtt` and `on_timeout` otherwise (benchmark (a) paid 17 instructions
    /// per packet-hop for them).
    #[inline]
    pub(crate) fn reads_rtt(&self) -> bool {
        matches!(self.policy, AckPolicy::Linux(_))
    }

    /// The connection's current RTO (back-off included, Linux's `icsk_rto`) and SRTT, which Linux's
    /// ACK policy reads; the endpoint sets them before handing over a segment.
    pub(crate) fn set_rtt(&mut self, rto: Dur, srtt: Option<Dur>) {
        self.rto = rto;
        self.srtt = srtt;
    }

    /// Timers are due at `now`. Linux `tcp_delack_timer_handler`: a delayed ACK that had to wait for
    /// its timer doubles the ATO (at most the RTO) and goes out. The fixed rule sends it from
    /// `ack_due` alone.
    pub(crate) fn on_timeout(&mut self, now: Time) {
        let rto = self.rto;
        if let AckPolicy::Linux(l) = &mut self.policy {
            if self.ack_deadline.is_some_and(|d| d <= now) {
                self.ack_deadline = None;
                if l.scheduled {
                    l.ato = Dur(l.ato.0.saturating_mul(2)).min(rto);
                    self.ack_now = true;
                }
            }
        }
    }

    /// The stream offset of segment `h` from a peer with initial sequence number `peer_isn`, if it is
    /// near the window. RFC 7323 Sec. 4.3: remember the timestamp of a segment that leaves no hole.
    pub(crate) fn arrival(&mut self, h: &TcpHeader, peer_isn: Seq) -> Option<u64> {
        let start = h.seq.unwrap_near(peer_isn, self.rcv_nxt)?;
        if start <= self.rcv_nxt {
            self.ts_recent = h.ts_val;
        }
        Some(start)
    }

    /// Data segment `pkt` (header `h`) arrived at stream offset `start`.
    pub(crate) fn on_segment(
        &mut self,
        now: Time,
        start: u64,
        pkt: &Packet,
        h: &TcpHeader,
        events: &mut VecDeque<AppEvent>,
    ) -> SegmentOutcome {
        let ce = pkt.ecn == Ecn::Ce;
        let cwr = h.flags.contains(TcpFlags::CWR);
        self.on_data(now, start, pkt.payload_len(), ce, cwr, events)
    }

    /// The byte ranges of `[start, end)` not received yet, in order.
    pub(crate) fn holes(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut cursor = start.max(self.rcv_nxt);
        let mut ranges = self.ooo.iter();
        std::iter::from_fn(move || {
            while cursor < end {
                let Some(r) = ranges.next() else {
                    let hole = (cursor, end);
                    cursor = end;
                    return Some(hole);
                };
                if r.end <= cursor {
                    continue;
                }
                let hole = (r.start > cursor).then(|| (cursor, r.start.min(end)));
                cursor = cursor.max(r.end);
                if hole.is_some() {
                    return hole;
                }
            }
            None
        })
    }

    /// Insert `[start, end)` (above `rcv_nxt`) into the sorted range set, merging neighbours.
    fn insert_range(&mut self, start: u64, end: u64) {
        let stamp = self.stamp;
        // First range that ends at or after `start` (could merge).
        let i = self.ooo.partition_point(|r| r.end < start);
        // Ranges [i, j) overlap or touch [start, end).
        let j = self.ooo.partition_point(|r| r.start <= end);
        if i == j {
            self.ooo.insert(i, Range { start, end, stamp });
            return;
        }
        let merged = Range {
            start: start.min(self.ooo[i].start),
            end: end.max(self.ooo[j - 1].end),
            stamp,
        };
        self.ooo[i] = merged;
        self.ooo.drain(i + 1..j);
    }

    /// RFC 2018 Sec. 4: the first block holds the most recently received segment, the rest are the
    /// most recently changed other blocks. Cost O(blocks * holes); holes are few.
    /// Most segments go out with nothing out of order to report: that test is inlined into every
    /// segment's header (the call alone cost 5 instructions per packet-hop on benchmark (a)).
    #[inline(always)]
    pub(crate) fn sack_blocks(&self, isn: Seq) -> SackBlocks {
        if self.ooo.is_empty() && self.dsack.is_none() {
            return SackBlocks::default();
        }
        self.sack_blocks_of_holes(isn)
    }

    /// RFC 2883 Sec. 4 / Linux `tcp_established_options`: a pending D-SACK block goes first, the
    /// out-of-order blocks after it.
    #[inline(never)]
    fn sack_blocks_of_holes(&self, isn: Seq) -> SackBlocks {
        let mut out = SackBlocks::default();
        if let Some((s, e)) = self.dsack {
            out.push(Seq::from_offset(isn, s), Seq::from_offset(isn, e));
        }
        let mut last_taken = u64::MAX;
        for _ in out.len()..SackBlocks::MAX {
            let best = self
                .ooo
                .iter()
                .filter(|r| r.stamp < last_taken)
                .max_by_key(|r| r.stamp);
            match best {
                Some(r) => {
                    out.push(Seq::from_offset(isn, r.start), Seq::from_offset(isn, r.end));
                    last_taken = r.stamp;
                }
                None => break,
            }
        }
        out
    }

    /// Is an ACK due now (immediate ACK requested, or the delayed-ACK timer expired)?
    pub(crate) fn ack_due(&self, now: Time) -> bool {
        self.ack_now || self.ack_deadline.is_some_and(|d| d <= now)
    }

    /// An ACK (pure or piggybacked) carrying `rcv_nxt` went out.
    pub(crate) fn on_ack_sent(&mut self) {
        if let AckPolicy::Linux(l) = &mut self.policy {
            // `tcp_event_ack_sent` -> `tcp_dec_quickack_mode` (6.6+): an ACK of new data uses one
            // quick ACK; the last one sets the ATO back to its floor.
            if l.scheduled && l.quick > 0 {
                l.quick -= 1;
                if l.quick == 0 {
                    l.ato = l.cfg.ato_min;
                }
            }
            l.scheduled = false;
        }
        self.ack_now = false;
        self.unacked_bytes = 0;
        self.ack_deadline = None;
        self.dsack = None;
    }

    /// Ask for an immediate ACK (e.g. a duplicate SYN-ACK).
    pub(crate) fn request_ack(&mut self) {
        self.ack_now = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_sack_order() {
        let mut ev = VecDeque::new();
        let mut r = Receiver::new(1 << 20, 10, None, EcnEcho::Off);
        r.on_data(Time(0), 0, 10, false, false, &mut ev);
        r.on_data(Time(0), 20, 10, false, false, &mut ev);
        r.on_data(Time(0), 40, 10, false, false, &mut ev);
        r.on_data(Time(0), 30, 10, false, false, &mut ev);
        let isn = Seq(0);
        let b: Vec<_> = r.sack_blocks(isn).iter().collect();
        assert_eq!(b, vec![(Seq(21), Seq(51))]);
        r.on_data(Time(0), 60, 10, false, false, &mut ev);
        r.on_data(Time(0), 10, 10, false, false, &mut ev);
        assert_eq!(r.rcv_nxt, 50);
        let b: Vec<_> = r.sack_blocks(isn).iter().collect();
        assert_eq!(b, vec![(Seq(61), Seq(71))]);
    }
}
