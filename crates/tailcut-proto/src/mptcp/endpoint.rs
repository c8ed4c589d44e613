//! [`MptcpEndpoint`]: one end of one MPTCP connection (sub-flows, data level, scheduler, Linux MPTCP's
//! opportunistic retransmission / penalisation / reinjection) with FUSO's multipath loss recovery as
//! an option. See `docs/fuso.md` for the mapping to the papers.

use super::config::MptcpConfig;
use super::fuso::{self, PathView};
use super::lia::{self, Lia};
use super::subflow::{Subflow, DSN_MASK, PROTECTED, RECOVERY};
use crate::engine::{AppEvent, Engine, MessageStats, MsgId, Outgoing};
use crate::packet::{Ecn, FiveTuple, Packet, TcpExt, TcpFlags};
use crate::rng::Rng;
use crate::seq::Seq;
use crate::tcp::bytes::SendBytes;
use crate::tcp::cc::Algorithm;
use crate::tcp::ext::{self, Extensions};
use crate::tcp::ledger::{Charge, SendLedger};
use crate::tcp::receiver::{EcnEcho, Receiver};
use crate::tcp::sender::{AckInfo, Sender, Transmission};
use crate::tcp::{CongestionControl, TcpConfig};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// The hidden message of the warm-up bytes (never reported to the application).
const WARMUP_MSG: MsgId = u64::MAX;

/// Connection-level counters (sub-flow counters are in each sub-flow's TCP stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MptcpStats {
    /// FUSO recovery copies sent, and their payload bytes.
    pub recovery_packets: u64,
    pub recovery_bytes: u64,
    /// Opportunistic retransmissions (receive window blocked) and penalisations.
    pub opportunistic_retransmits: u64,
    pub penalizations: u64,
    /// Segments reinjected from sub-flows deemed dead, and how many times a sub-flow was deemed dead.
    pub reinjected_segments: u64,
    pub dead_subflows: u64,
    /// Receiver: segments handed to the data level while out of sequence at sub-flow level.
    pub ofo_delivered_early: u64,
}

/// A chunk of the data stream sent at least once and not yet data-ACKed.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    dsn: u64,
    len: u32,
    /// Sub-flows that carried it (bit i = sub-flow i).
    mask: u32,
}

/// One end of one MPTCP (or FUSO) connection.
pub struct MptcpEndpoint {
    tcp: TcpConfig,
    cfg: MptcpConfig,
    mss: u64,
    class: u8,
    pub(super) subs: Vec<Subflow>,
    /// Local port of sub-flow 0; sub-flow i uses `local_port + i`.
    local_port: u16,
    // ---- data-level sender ----
    stream_end: u64,
    data_nxt: u64,
    data_una: u64,
    peer_window: u64,
    ledger: SendLedger,
    chunks: VecDeque<Chunk>,
    /// Data to send again on another sub-flow (from a dead sub-flow): (dsn, len).
    reinject: VecDeque<(u64, u32)>,
    /// End of the warm-up bytes in the send stream, when application data may start.
    warm_end: u64,
    warm_hold_until: Option<Time>,
    /// The warm-up and its idle period are over (or there is none).
    warm_done: bool,
    /// The data stream's unacknowledged bytes, when the driver carries bytes (`tcp/bytes.rs`).
    send_bytes: Option<SendBytes>,
    // ---- data-level receiver ----
    data_rx: Receiver,
    events: VecDeque<AppEvent>,
    scratch: VecDeque<AppEvent>,
    stats: MptcpStats,
    rng: Rng,
}

impl MptcpEndpoint {
    /// `tuple` is sub-flow 0's local -> remote tuple; sub-flow i adds i to both ports. `tcp` is every
    /// sub-flow's TCP configuration with the connection's total initial window (split evenly, at least
    /// one segment each). Sub-flows start established (MP_CAPABLE / MP_JOIN handshakes are not
    /// modelled); `isn` / `peer_isn` seed every sub-flow's initial sequence numbers.
    pub fn new(
        tcp: TcpConfig,
        cfg: MptcpConfig,
        tuple: FiveTuple,
        isn: Seq,
        peer_isn: Seq,
        rng: Rng,
    ) -> Self {
        let n = cfg.subflows.max(1);
        let mut sub_cfg = tcp.clone();
        sub_cfg.initial_cwnd_segments = (tcp.initial_cwnd_segments / n).max(1);
        sub_cfg.handshake = false;
        let ecn = match (tcp.ecn, tcp.congestion_control) {
            (false, _) => EcnEcho::Off,
            (true, CongestionControl::NewReno | CongestionControl::Cubic(_)) => EcnEcho::Classic,
            (true, CongestionControl::Dctcp { .. }) => EcnEcho::Dctcp,
        };
        let subs = (0..n)
            .map(|i| {
                let k = i as u16;
                let spread = i.wrapping_mul(0x3c6e_f35f);
                Subflow {
                    tuple: FiveTuple {
                        src_port: tuple.src_port.wrapping_add(k),
                        dst_port: tuple.dst_port.wrapping_add(k),
                        ..tuple
                    },
                    isn: isn.wrapping_add(spread),
                    peer_isn: peer_isn.wrapping_add(spread),
                    sender: Sender::with_cc(&sub_cfg, Lia::new(Algorithm::new(tcp.congestion_control))),
                    ext: Extensions::subflow(&sub_cfg),
                    receiver: Receiver::new(tcp.rcv_window_bytes, tcp.mss_bytes, tcp.delayed_ack, ecn),
                    control: VecDeque::new(),
                    queued: None,
                    held: Vec::new(),
                    since_last_rtx: 0,
                    dead: false,
                    last_penalized: None,
                }
            })
            .collect();
        let mut data_rx = Receiver::new(tcp.rcv_window_bytes, tcp.mss_bytes, None, EcnEcho::Off);
        if tcp.carry_bytes {
            data_rx.carry_bytes(0);
        }
        let mut ep = MptcpEndpoint {
            mss: u64::from(tcp.mss_bytes.max(1)),
            peer_window: u64::from(tcp.rcv_window_bytes),
            send_bytes: tcp.carry_bytes.then(|| {
                let mut b = SendBytes::default();
                b.push_zeros(cfg.warmup_bytes);
                b
            }),
            data_rx,
            tcp: sub_cfg,
            class: 0,
            subs,
            local_port: tuple.src_port,
            stream_end: 0,
            data_nxt: 0,
            data_una: 0,
            ledger: SendLedger::default(),
            chunks: VecDeque::new(),
            reinject: VecDeque::new(),
            warm_end: cfg.warmup_bytes,
            warm_hold_until: None,
            warm_done: cfg.warmup_bytes == 0,
            events: VecDeque::new(),
            scratch: VecDeque::new(),
            stats: MptcpStats::default(),
            rng,
            cfg,
        };
        ep.events.push_back(AppEvent::Connected);
        if ep.warm_end > 0 {
            ep.ledger.push(WARMUP_MSG, 0, ep.warm_end, &mut ep.scratch);
            ep.stream_end = ep.warm_end;
            ep.data_rx
                .expect_message(WARMUP_MSG, ep.warm_end, &mut ep.scratch);
            ep.scratch.clear();
        }
        ep
    }

    /// Payload bytes held for the peer and the application (0 without `carry_bytes`).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.send_bytes.as_ref().map_or(0, |b| b.held()) + self.data_rx.bytes().map_or(0, |b| b.held())
    }

    pub fn set_class(&mut self, class: u8) {
        self.class = class;
    }

    pub fn stats(&self) -> &MptcpStats {
        &self.stats
    }

    pub fn subflow_count(&self) -> usize {
        self.subs.len()
    }

    /// Sub-flow `i`'s TCP counters.
    pub fn subflow_stats(&self, i: usize) -> &crate::tcp::ConnStats {
        &self.subs[i].sender.stats
    }

    pub fn subflow_cwnd(&self, i: usize) -> u64 {
        self.subs[i].sender.cc.cwnd_bytes()
    }

    pub fn subflow_srtt(&self, i: usize) -> Option<Dur> {
        self.subs[i].srtt()
    }

    /// Data level: oldest un-ACKed and next new data sequence number; bytes delivered in order.
    pub fn data_una(&self) -> u64 {
        self.data_una
    }
    pub fn data_nxt(&self) -> u64 {
        self.data_nxt
    }
    pub fn data_rcv_nxt(&self) -> u64 {
        self.data_rx.rcv_nxt
    }

    fn move_events(&mut self) {
        while let Some(ev) = self.scratch.pop_front() {
            let hidden = matches!(
                ev,
                AppEvent::MessageReceived { msg: WARMUP_MSG }
                    | AppEvent::MessageAcked { msg: WARMUP_MSG, .. }
            );
            if !hidden {
                self.events.push_back(ev);
            } else if ev == (AppEvent::MessageReceived { msg: WARMUP_MSG }) {
                self.data_rx.take_bytes(WARMUP_MSG);
            }
        }
    }

    fn dsn_at(&self, i: usize, offset: u64) -> Option<u64> {
        let sb = &self.subs[i].sender.scoreboard;
        sb.find(offset).map(|idx| sb.seg(idx).tag & DSN_MASK)
    }

    // ---- sending ---------------------------------------------------------------------------

    /// The data packet for transmission `tx` of sub-flow `i`.
    fn emit(&mut self, i: usize, now: Time, tx: Transmission) -> Packet {
        let dsn = tx.tag & DSN_MASK;
        if tx.retransmit {
            self.ledger
                .charge_bytes(dsn, dsn + u64::from(tx.len_bytes), Charge::Retransmit);
        }
        let data_ack = self.data_rx.rcv_nxt;
        let window = self.tcp.rcv_window_bytes;
        let ecn = if self.tcp.ecn { Ecn::Ect0 } else { Ecn::NotEct };
        let (hdr, class, sack) = (self.tcp.header_bytes, self.class, self.tcp.sack);
        let s = &mut self.subs[i];
        s.since_last_rtx = match (tx.retransmit, s.since_last_rtx) {
            (true, _) => 1,
            (false, 0) => 0,
            (false, k) => k + 1,
        };
        let mut flags = TcpFlags::PSH;
        if tx.cwr {
            flags.insert(TcpFlags::CWR);
        }
        let seq = Seq::from_offset(s.isn, tx.start);
        let p = s.packet(
            now,
            hdr,
            class,
            sack,
            window,
            seq,
            flags,
            tx.len_bytes,
            ecn,
            TcpExt::Dss { dsn, data_ack },
        );
        s.receiver.on_ack_sent();
        p
    }

    /// Sub-flow `i`'s own next segment (a retransmission, or its queued chunk), if its windows allow.
    fn subflow_transmit(&mut self, i: usize, now: Time) -> Option<Packet> {
        let s = &mut self.subs[i];
        let mut tx = s.sender.next_transmission(now, &mut s.ext)?;
        if !tx.retransmit {
            let (tag, left) = s.queued.take().unwrap_or((0, 0));
            let sent = u64::from(tx.len_bytes);
            if sent < left {
                // The DSN (low bits of the tag) of the rest moves on; the marks stay.
                s.queued = Some((tag + sent, left - sent));
            }
            if let Some(idx) = s.sender.scoreboard.find(tx.start) {
                s.sender.scoreboard.set_tag(idx, tag);
            }
            tx.tag = tag;
        }
        Some(self.emit(i, now, tx))
    }

    /// Queue one chunk on sub-flow `i` (which has room) and send it.
    fn send_chunk(&mut self, i: usize, now: Time, dsn: u64, len: u32, flags: u64) -> Option<Packet> {
        let s = &mut self.subs[i];
        debug_assert!(s.queued.is_none());
        s.sender.queue_message(0, u64::from(len), &mut self.scratch);
        self.scratch.clear();
        s.queued = Some((dsn | flags, u64::from(len)));
        self.subflow_transmit(i, now)
    }

    /// Linux MPTCP's default scheduler: among sub-flows that may take new data (not dead, not in RTO
    /// recovery, a free cwnd slot), the one with the lowest smoothed RTT; sub-flows in `avoid` only
    /// if no other is available.
    fn schedule(&self, avoid: u32) -> Option<usize> {
        let pick = |skip: u32| {
            self.subs
                .iter()
                .enumerate()
                .filter(|(i, s)| {
                    skip & (1 << i) == 0
                        && !s.dead
                        && s.queued.is_none()
                        && !s.in_timeout_recovery()
                        && s.has_room(self.mss)
                })
                .min_by_key(|(i, s)| (s.rtt_or_zero(), *i))
                .map(|(i, _)| i)
        };
        pick(avoid).or_else(|| if avoid != 0 { pick(0) } else { None })
    }

    fn chunk_index(&self, dsn: u64) -> Option<usize> {
        let i = self.chunks.partition_point(|c| c.dsn + u64::from(c.len) <= dsn);
        (i < self.chunks.len() && self.chunks[i].dsn <= dsn).then_some(i)
    }

    fn warm_holding(&mut self, now: Time) -> bool {
        if !self.warm_done && self.warm_hold_until.is_some_and(|t| now >= t) {
            self.warm_done = true;
        }
        !self.warm_done && self.data_nxt >= self.warm_end
    }

    /// New data or reinjected data, through the scheduler.
    fn send_data(&mut self, now: Time) -> Option<Packet> {
        while let Some(&(dsn, len)) = self.reinject.front() {
            if dsn + u64::from(len) <= self.data_una {
                self.reinject.pop_front();
                continue;
            }
            let mask = self.chunk_index(dsn).map_or(0, |c| self.chunks[c].mask);
            let i = self.schedule(mask)?;
            self.reinject.pop_front();
            if let Some(c) = self.chunk_index(dsn) {
                self.chunks[c].mask |= 1 << i;
            }
            self.ledger
                .charge_bytes(dsn, dsn + u64::from(len), Charge::Retransmit);
            self.stats.reinjected_segments += 1;
            return self.send_chunk(i, now, dsn, len, 0);
        }
        if self.data_nxt >= self.stream_end || self.warm_holding(now) {
            return None;
        }
        let room = (self.data_una + self.peer_window).saturating_sub(self.data_nxt);
        if room == 0 {
            return None;
        }
        let mut len = (self.stream_end - self.data_nxt).min(self.mss).min(room);
        if self.data_nxt < self.warm_end {
            len = len.min(self.warm_end - self.data_nxt);
        }
        let i = self.schedule(0)?;
        let dsn = self.data_nxt;
        self.data_nxt += len;
        self.chunks.push_back(Chunk {
            dsn,
            len: len as u32,
            mask: 1 << i,
        });
        self.ledger.charge_bytes(dsn, dsn + len, Charge::New);
        self.send_chunk(i, now, dsn, len as u32, 0)
    }

    /// Linux MPTCP (`mptcp_rcv_buf_optimization`): the data-level receive window blocks new data, so
    /// send the data-level head again on the sub-flow the scheduler picks (if it has not carried it),
    /// and halve the window of each slower sub-flow that carried it, at most once per its RTT.
    fn opportunistic(&mut self, now: Time) -> Option<Packet> {
        if !self.cfg.opportunistic_retransmit || self.data_nxt >= self.stream_end || self.warm_holding(now) {
            return None;
        }
        if self.data_nxt < self.data_una + self.peer_window {
            return None;
        }
        let head = *self.chunks.front()?;
        let i = self.schedule(head.mask)?;
        if head.mask & (1 << i) != 0 {
            return None;
        }
        if self.cfg.penalize {
            let my_rtt = self.subs[i].rtt_or_zero();
            for (j, s) in self.subs.iter_mut().enumerate() {
                if head.mask & (1 << j) == 0 || s.rtt_or_zero() <= my_rtt || s.sender.recovery.is_some() {
                    continue;
                }
                let rtt = s.rtt_or_zero();
                if s.last_penalized.is_some_and(|t| now - t < rtt) {
                    continue;
                }
                let cw = s.sender.cc.cwnd_bytes();
                s.sender.cc.set_cwnd_bytes(cw / 2);
                let ss = s.sender.cc.ssthresh_bytes();
                if ss != u64::MAX {
                    // Halve ssthresh as RFC 5681 would, not as a loss of the algorithm's.
                    s.sender.cc.window.reduce_ssthresh(ss);
                }
                s.last_penalized = Some(now);
                self.stats.penalizations += 1;
            }
        }
        self.chunks[0].mask |= 1 << i;
        self.ledger
            .charge_bytes(head.dsn, head.dsn + u64::from(head.len), Charge::Retransmit);
        self.stats.opportunistic_retransmits += 1;
        self.send_chunk(i, now, head.dsn, head.len, 0)
    }

    /// FUSO Algorithm 1, one iteration of `try_send_recoveries()`: with all application data sent and
    /// total bytes in flight below the total cwnd, send a copy of the oldest unprotected un-ACKed
    /// packet of the worst sub-flow on the best sub-flow, as new data of the best sub-flow.
    fn try_send_recovery(&mut self, now: Time) -> Option<Packet> {
        let f = self.cfg.fuso?;
        if self.data_nxt < self.stream_end || !self.reinject.is_empty() {
            return None;
        }
        let (mut flight, mut cwnd) = (0u64, 0u64);
        for s in &self.subs {
            flight += s.sender.used_window_bytes();
            cwnd += s.sender.cc.cwnd_bytes();
        }
        if flight >= cwnd {
            return None;
        }
        let mut worst_views = [PathView {
            cost: None,
            rtt: Dur::ZERO,
            eligible: false,
        }; 32];
        let mut best_views = worst_views;
        for (i, s) in self.subs.iter().enumerate() {
            let cost = s.loss_cost(f.alpha, f.beta);
            worst_views[i] = PathView {
                cost,
                rtt: s.rtt_or_zero(),
                eligible: s.protectable(self.data_una).is_some(),
            };
            best_views[i] = PathView {
                cost,
                rtt: s.rtt_or_zero(),
                eligible: !s.dead && s.queued.is_none() && s.has_room(self.mss),
            };
        }
        let n = self.subs.len();
        let w = fuso::worst(&worst_views[..n])?;
        let b = fuso::best(&best_views[..n], &mut self.rng)?;
        let (off, dsn, len) = self.subs[w].protectable(self.data_una)?;
        let sb = &mut self.subs[w].sender.scoreboard;
        if let Some(idx) = sb.find(off) {
            let tag = sb.seg(idx).tag;
            sb.set_tag(idx, tag | PROTECTED);
        }
        if let Some(c) = self.chunk_index(dsn) {
            self.chunks[c].mask |= 1 << b;
        }
        self.ledger
            .charge_bytes(dsn, dsn + u64::from(len), Charge::Redundant);
        self.stats.recovery_packets += 1;
        self.stats.recovery_bytes += u64::from(len);
        self.send_chunk(b, now, dsn, len, RECOVERY)
    }

    /// Message `msg` takes the next `len_bytes` bytes of the data stream.
    fn queue(&mut self, msg: MsgId, len_bytes: u64) {
        let start = self.stream_end;
        self.stream_end += len_bytes;
        self.ledger.push(msg, start, self.stream_end, &mut self.scratch);
        self.move_events();
    }

    fn pure_ack(&mut self, i: usize, now: Time) -> Packet {
        let p = self.ack_packet(i, now);
        self.subs[i].receiver.on_ack_sent();
        p
    }

    /// A pure ACK of sub-flow `i` (no side effects on the ACK state).
    fn ack_packet(&self, i: usize, now: Time) -> Packet {
        let data_ack = self.data_rx.rcv_nxt;
        let window = self.tcp.rcv_window_bytes;
        let (hdr, class, sack) = (self.tcp.header_bytes, self.class, self.tcp.sack);
        let s = &self.subs[i];
        let seq = Seq::from_offset(s.isn, s.sender.snd_nxt);
        s.packet(
            now,
            hdr,
            class,
            sack,
            window,
            seq,
            TcpFlags::empty(),
            0,
            Ecn::NotEct,
            TcpExt::Dss { dsn: 0, data_ack },
        )
    }

    // ---- receiving -------------------------------------------------------------------------

    fn deliver(&mut self, now: Time, dsn: u64, len: u32) {
        self.data_rx
            .on_data(now, dsn, len, false, false, &mut self.scratch);
        self.move_events();
    }

    fn on_subflow_ack(&mut self, i: usize, now: Time, pkt: &Packet) {
        let Some(h) = pkt.tcp() else { return };
        let una = self.subs[i].sender.snd_una;
        let Some((info, blocks)) = AckInfo::from_header(h, self.subs[i].isn, una) else {
            return;
        };
        if self.cfg.coupled && self.subs.len() > 1 {
            let sc = lia::scale(&self.subs, i);
            self.subs[i].sender.cc.algo.set_share(sc);
        }
        let s = &mut self.subs[i];
        let fast = s.sender.stats.fast_retransmits;
        s.sender.on_ack(now, info, blocks, &mut self.scratch, &mut s.ext);
        self.scratch.clear();
        if s.sender.snd_una > una {
            s.dead = false;
        }
        if s.sender.stats.fast_retransmits != fast {
            let off = s.sender.snd_una;
            if let Some(dsn) = self.dsn_at(i, off) {
                self.ledger.charge_fast_retransmit(dsn);
            }
        }
        // CP's sender (as `TcpEndpoint`): the sub-flow retransmits the segment a PACK names, which
        // keeps its scoreboard tag and so its DSN. A PACK that opens a recovery is charged, like a
        // fast retransmit, to the message owning the cut segment's DSN.
        let s = &mut self.subs[i];
        let opened = s
            .ext
            .cp
            .as_mut()
            .and_then(|cp| cp.on_packs(&mut s.sender, h, s.isn));
        if let Some(dsn) = opened.and_then(|off| self.dsn_at(i, off)) {
            self.ledger.charge_fast_retransmit(dsn);
        }
    }

    /// CP's receiver on sub-flow `i` (as `TcpEndpoint`): a cut segment is no data; if any of its
    /// sub-flow range is still missing, a PACK goes out at once, ahead of anything else. The cut
    /// segment's DSN is not needed: the sender's retransmission carries it again.
    fn send_pack(&mut self, i: usize, now: Time, h: &crate::packet::TcpHeader) {
        let s = &mut self.subs[i];
        s.sender.stats.cut_segments_received += 1;
        s.receiver.arrival(h, s.peer_isn);
        let (rcv_nxt, peer_isn) = (s.receiver.rcv_nxt, s.peer_isn);
        if let Some(p) = ext::pack(h, rcv_nxt, peer_isn, self.ack_packet(i, now)) {
            let s = &mut self.subs[i];
            s.sender.stats.packs_sent += 1;
            s.control.push_back(p);
        }
    }

    fn on_data_ack(&mut self, now: Time, data_ack: u64, window: u32) {
        self.peer_window = u64::from(window);
        if data_ack <= self.data_una || data_ack > self.data_nxt {
            return;
        }
        self.data_una = data_ack;
        if let Some(b) = self.send_bytes.as_mut() {
            b.release_to(data_ack);
        }
        self.ledger.ack_to(data_ack, &mut self.scratch);
        self.move_events();
        while self
            .chunks
            .front()
            .is_some_and(|c| c.dsn + u64::from(c.len) <= data_ack)
        {
            self.chunks.pop_front();
        }
        if self.warm_end > 0 && data_ack >= self.warm_end && self.warm_hold_until.is_none() {
            // Idle one RTO (the largest of the sub-flows'), so slow start after idle restarts every
            // sub-flow from its initial window.
            let rto = self
                .subs
                .iter()
                .map(|s| s.sender.rtt.rto())
                .max()
                .unwrap_or(Dur::ZERO);
            self.warm_hold_until = Some(now + rto + Dur(1));
        }
    }

    fn on_subflow_data(&mut self, i: usize, now: Time, pkt: &Packet, dsn: u64, payload: &[u8]) {
        let Some(h) = pkt.tcp() else { return };
        let len = pkt.payload_len();
        // The bytes go to the data level at once, wherever the segment stands at sub-flow level;
        // the data level's accounting says when they are in order.
        if !self.data_rx.accept_bytes(dsn, len, payload) {
            return;
        }
        let s = &mut self.subs[i];
        let Some(start) = s.receiver.arrival(h, s.peer_isn) else {
            return;
        };
        let in_seq = start <= s.receiver.rcv_nxt;
        if s.receiver.reads_rtt() {
            s.receiver.set_rtt(s.sender.rtt.rto(), s.sender.rtt.srtt());
        }
        let out = s.receiver.on_segment(now, start, pkt, h, &mut self.scratch);
        self.scratch.clear();
        if let Some(f) = out.flush {
            let mut p = self.ack_packet(i, now);
            f.stamp(&mut p, self.subs[i].peer_isn);
            self.subs[i].control.push_back(p);
        }
        self.subs[i].sender.stats.count_segment(&out);
        if in_seq || self.cfg.ofo_to_data_level {
            if !in_seq {
                self.stats.ofo_delivered_early += 1;
            }
            self.deliver(now, dsn, len);
        } else {
            self.subs[i].held.push((start, start + u64::from(len), dsn));
        }
        // Sub-flow-level in-order now: hand what waited in the sub-flow's out-of-order queue up.
        let rcv = self.subs[i].receiver.rcv_nxt;
        let mut k = 0;
        while k < self.subs[i].held.len() {
            let (st, end, d) = self.subs[i].held[k];
            if end <= rcv {
                self.subs[i].held.swap_remove(k);
                self.deliver(now, d, (end - st) as u32);
            } else {
                k += 1;
            }
        }
    }

    fn on_subflow_timer(&mut self, i: usize, now: Time) {
        let s = &mut self.subs[i];
        if s.sender.deadline(&s.ext).is_none_or(|d| d > now) {
            return;
        }
        let timeouts = s.sender.stats.timeouts;
        s.sender.on_timer(now, &mut s.ext);
        if s.sender.stats.timeouts == timeouts {
            return;
        }
        let una = s.sender.snd_una;
        let consecutive = s.sender.consecutive_timeouts;
        if let Some(dsn) = self.dsn_at(i, una) {
            self.ledger.charge_timeout(dsn);
        }
        let dead_after = self.cfg.dead_after_timeouts;
        if dead_after == 0 || consecutive < dead_after || self.subs[i].dead || self.subs.len() == 1 {
            return;
        }
        // Linux MPTCP's failover: reinject everything the dead sub-flow still holds.
        self.subs[i].dead = true;
        self.stats.dead_subflows += 1;
        let data_una = self.data_una;
        for seg in self.subs[i].sender.scoreboard.iter() {
            let dsn = seg.tag & DSN_MASK;
            if !seg.sacked && dsn + u64::from(seg.len_bytes) > data_una {
                self.reinject.push_back((dsn, seg.len_bytes));
            }
        }
    }
}

impl Engine for MptcpEndpoint {
    fn send_message(&mut self, _now: Time, msg: MsgId, len_bytes: u64) {
        if let Some(b) = self.send_bytes.as_mut() {
            // A message given by length only, on a connection that carries bytes, is zeros.
            b.push_zeros(len_bytes);
        }
        self.queue(msg, len_bytes);
    }

    fn send_bytes(&mut self, _now: Time, _how: Outgoing, msg: MsgId, data: &[u8]) {
        if let Some(b) = self.send_bytes.as_mut() {
            b.push(data);
        }
        self.queue(msg, data.len() as u64);
    }

    fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        self.data_rx.take_bytes(msg)
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.data_rx.expect_message(msg, len_bytes, &mut self.scratch);
        self.move_events();
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        let Some(h) = pkt.tcp() else { return };
        if self.data_rx.carries_bytes() && payload.len() != pkt.payload_len() as usize {
            // Its bytes disagree with its header: dropped whole, as a segment failing its checksum.
            return;
        }
        let i = usize::from(pkt.tuple.dst_port.wrapping_sub(self.local_port));
        if i >= self.subs.len() {
            return;
        }
        let TcpExt::Dss { dsn, data_ack } = h.ext else {
            return;
        };
        if h.flags.contains(TcpFlags::ACK) {
            self.on_subflow_ack(i, now, pkt);
            self.on_data_ack(now, data_ack, h.window);
        }
        if pkt.trimmed && h.payload_len > 0 {
            // Without CP a cut segment is simply lost (its payload is gone).
            if self.subs[i].ext.cp.is_some() {
                self.send_pack(i, now, h);
            }
            return;
        }
        if pkt.payload_len() > 0 {
            self.on_subflow_data(i, now, pkt, dsn, payload);
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        for i in 0..self.subs.len() {
            let r = &mut self.subs[i].receiver;
            if r.reads_rtt() {
                r.on_timeout(now);
            }
            self.on_subflow_timer(i, now);
        }
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        let p = self.next_packet(now)?;
        if let (Some(b), Some(h)) = (self.send_bytes.as_ref(), p.tcp()) {
            if let (TcpExt::Dss { dsn, .. }, true) = (h.ext, p.payload_len() > 0) {
                b.copy_to(dsn, h.payload_len, payload);
            }
        }
        Some(p)
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next_deadline()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.ledger.stats(msg)
    }

    fn release_memory(&mut self) {
        for s in &mut self.subs {
            s.sender.scoreboard.shrink();
        }
    }
}

impl MptcpEndpoint {
    /// The next packet: sub-flow control ACKs, sub-flow retransmissions and queued chunks, then new,
    /// opportunistic or FUSO recovery data through the scheduler, then due ACKs.
    fn next_packet(&mut self, now: Time) -> Option<Packet> {
        for s in &mut self.subs {
            if let Some(p) = s.control.pop_front() {
                s.sender.stats.segments_sent += 1;
                s.sender.stats.acks_sent += 1;
                return Some(p);
            }
        }
        let mut out = None;
        for i in 0..self.subs.len() {
            if let Some(p) = self.subflow_transmit(i, now) {
                out = Some((i, p));
                break;
            }
        }
        if out.is_none() {
            let p = self
                .send_data(now)
                .or_else(|| self.opportunistic(now))
                .or_else(|| self.try_send_recovery(now));
            if let Some(p) = p {
                let i = usize::from(p.tuple.src_port.wrapping_sub(self.local_port));
                out = Some((i, p));
            }
        }
        if out.is_none() {
            for i in 0..self.subs.len() {
                if self.subs[i].receiver.ack_due(now) {
                    let p = self.pure_ack(i, now);
                    self.subs[i].sender.stats.acks_sent += 1;
                    out = Some((i, p));
                    break;
                }
            }
        }
        let (i, p) = out?;
        self.subs[i].sender.stats.segments_sent += 1;
        Some(p)
    }

    fn next_deadline(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        for s in &self.subs {
            for d in [s.sender.deadline(&s.ext), s.receiver.ack_deadline]
                .into_iter()
                .flatten()
            {
                t = Some(t.map_or(d, |x| x.min(d)));
            }
        }
        if let Some(h) = self.warm_hold_until.filter(|_| !self.warm_done) {
            if self.data_nxt < self.stream_end && self.data_nxt >= self.warm_end {
                t = Some(t.map_or(h, |x| x.min(h)));
            }
        }
        t
    }
}
