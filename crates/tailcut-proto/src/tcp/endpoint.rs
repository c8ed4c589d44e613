//! [`TcpEndpoint`]: one end of one TCP connection, gluing the sender, the receiver and the handshake
//! to the [`Engine`] contract and to wire sequence numbers.

use super::cc::CongestionControl as _;
use super::config::{CongestionControl, TcpConfig};
use super::ir::IrEncoder;
use super::ledger::Charge;
use super::receiver::{EcnEcho, Receiver, SegmentOutcome};
use super::sender::{AckInfo, Sender, Transmission};
use super::stats::ConnStats;
use crate::engine::{AppEvent, Engine, MessageStats, MsgId};
use crate::packet::{Ecn, FiveTuple, Header, Packet, Route, SackBlocks, TcpExt, TcpFlags, TcpHeader};
use crate::seq::Seq;
use crate::time::{Dur, Time};
use std::collections::VecDeque;

mod schemes;

/// Active or passive opener; matters only when the handshake is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// Connection state (RFC 793 Sec. 3.2, the subset a simulator needs: no FIN / RST).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Listen,
    SynSent,
    SynReceived,
    Established,
}

/// One end of one full-duplex TCP connection. See the crate's [`Engine`] docs for the drain order.
pub struct TcpEndpoint {
    cfg: TcpConfig,
    tuple: FiveTuple,
    class: u8,
    route: Route,
    state: State,
    isn: Seq,
    peer_isn: Seq,
    sender: Sender,
    receiver: Receiver,
    /// SYN / SYN-ACK retransmission deadline.
    handshake_deadline: Option<Time>,
    /// When the first SYN / SYN-ACK went out, and whether it was retransmitted (Karn).
    syn_sent_at: Option<Time>,
    syn_retransmitted: bool,
    /// A handshake segment is due (first transmission or retransmission).
    syn_due: bool,
    /// Pure ACKs that must precede anything else (DCTCP CE-state flush, TCP-IR coded ACKs).
    control: VecDeque<Packet>,
    /// TCP-IR encoder (`cfg.tcp_ir`).
    ir: Option<IrEncoder>,
    /// Proactive: the copy of the data packet just sent, due next.
    copy: Option<Packet>,
    /// Data segments sent, for per-packet spraying (`cfg.spray_paths`).
    sprayed: u32,
    events: VecDeque<AppEvent>,
}

impl TcpEndpoint {
    /// `tuple` is local -> remote; `isn` / `peer_isn` are the initial sequence numbers of the two
    /// directions (with the handshake the server learns the peer's from its SYN). Without
    /// `cfg.handshake` the connection starts established and `Connected` is the first event.
    pub fn new(cfg: TcpConfig, tuple: FiveTuple, role: Role, isn: Seq, peer_isn: Seq) -> Self {
        let ecn = match (cfg.ecn, cfg.congestion_control) {
            (false, _) => EcnEcho::Off,
            (true, CongestionControl::NewReno) => EcnEcho::Classic,
            (true, CongestionControl::Dctcp { .. }) => EcnEcho::Dctcp,
        };
        let mut events = VecDeque::new();
        let state = match (cfg.handshake, role) {
            (false, _) => {
                events.push_back(AppEvent::Connected);
                State::Established
            }
            (true, Role::Client) => State::SynSent,
            (true, Role::Server) => State::Listen,
        };
        let ir = cfg.tcp_ir.map(IrEncoder::new);
        TcpEndpoint {
            sender: Sender::new(&cfg),
            receiver: Receiver::new(cfg.rcv_window_bytes, cfg.mss_bytes, cfg.delayed_ack, ecn),
            cfg,
            tuple,
            class: 0,
            route: Route::Ecmp,
            state,
            isn,
            peer_isn,
            handshake_deadline: None,
            syn_sent_at: None,
            syn_retransmitted: false,
            syn_due: state == State::SynSent,
            control: VecDeque::new(),
            ir,
            copy: None,
            sprayed: 0,
            events,
        }
    }

    pub fn set_class(&mut self, class: u8) {
        self.class = class;
    }

    pub fn set_route(&mut self, route: Route) {
        self.route = route;
    }

    pub fn stats(&self) -> &ConnStats {
        &self.sender.stats
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.sender.cc.cwnd_bytes()
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.sender.cc.ssthresh_bytes()
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.sender.rtt.srtt()
    }

    /// The current retransmission timeout, back-off included.
    pub fn rto(&self) -> Dur {
        self.sender.rtt.rto()
    }

    /// DCTCP's alpha, if DCTCP is the congestion control.
    pub fn dctcp_alpha(&self) -> Option<f64> {
        self.sender.cc.algo.marked_fraction()
    }

    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// Send stream: oldest unacknowledged offset and next new offset.
    pub fn snd_una(&self) -> u64 {
        self.sender.snd_una
    }

    pub fn snd_nxt(&self) -> u64 {
        self.sender.snd_nxt
    }

    /// Receive stream: bytes delivered in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.receiver.rcv_nxt
    }

    /// Retransmit the segment holding send-stream offset `offset` at the next `poll_transmit`,
    /// regardless of cwnd (hook for precise loss notification; used by schemes built on TCP).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn retransmit_segment(&mut self, offset: u64) -> bool {
        self.sender.retransmit_segment(offset)
    }

    fn ts_val(now: Time) -> u32 {
        (now.as_nanos() / 1_000) as u32
    }

    /// A packet with every field this endpoint stamps; `seq`, flags and payload filled by callers.
    fn packet(&self, now: Time, seq: Seq, flags: TcpFlags, payload_len: u32, ecn: Ecn) -> Packet {
        let established = self.state == State::Established;
        let mut flags = flags;
        let (ack, sack) = if established || self.state == State::SynReceived {
            flags.insert(TcpFlags::ACK);
            let sack = if self.cfg.sack && established {
                self.receiver.sack_blocks(self.peer_isn)
            } else {
                SackBlocks::default()
            };
            (Seq::from_offset(self.peer_isn, self.receiver.rcv_nxt), sack)
        } else {
            (Seq(0), SackBlocks::default())
        };
        if established && self.receiver.ece() {
            flags.insert(TcpFlags::ECE);
        }
        Packet {
            tuple: self.tuple,
            size_bytes: self.cfg.header_bytes + payload_len,
            ecn,
            class: self.class,
            priority: 0,
            route: self.route,
            trimmed: false,
            header: Header::Tcp(TcpHeader {
                seq,
                ack,
                flags,
                window: self.receiver.window_bytes(),
                payload_len,
                sack,
                ts_val: Self::ts_val(now),
                ts_ecr: self.receiver.ts_recent,
                ext: TcpExt::None,
            }),
        }
    }

    fn data_packet(&mut self, now: Time, tx: &Transmission) -> Packet {
        let mut flags = TcpFlags::PSH;
        if tx.cwr {
            flags.insert(TcpFlags::CWR);
        }
        // RFC 3168 Sec. 6.1.1: data is sent ECN-capable. Retransmissions too, as Linux does and
        // RFC 8311 Sec. 4.4 permits, so they are marked rather than dropped by AQM.
        let ecn = if self.cfg.ecn { Ecn::Ect0 } else { Ecn::NotEct };
        let seq = Seq::from_offset(self.isn, tx.start);
        let mut p = self.packet(now, seq, flags, tx.len_bytes, ecn);
        self.tag(&mut p, tx.start);
        if self.cfg.spray_paths > 0 {
            p.route = Route::Path(self.sprayed % self.cfg.spray_paths);
            self.sprayed = self.sprayed.wrapping_add(1);
        }
        p
    }

    /// CP receiver (Cheng et al., NSDI'14, "Receiver: packet-loss feedback"): step 1, parse the
    /// payload-cut segment `[start, start + len)`; step 2, build the PACK: an ACK whose first SACK-format
    /// block holds the cut range with its edges swapped (right edge first, so right < left); step 3,
    /// send it at once, ahead of anything else. The PACK also carries the current cumulative ACK and up
    /// to three ordinary SACK blocks after it; a SACK-only parser discards the inverted block as
    /// invalid (RFC 2018 blocks have left < right), so a PACK reads as an ordinary ACK there. The PACK
    /// echoes the cut segment's own timestamp (not TS.Recent), which tells the sender which
    /// transmission was cut.
    fn send_pack(&mut self, now: Time, h: &TcpHeader) {
        self.sender.stats.cut_segments_received += 1;
        let Some(start) = h.seq.unwrap_near(self.peer_isn, self.receiver.rcv_nxt) else {
            return;
        };
        let end = start + u64::from(h.payload_len);
        if end <= self.receiver.rcv_nxt {
            // Every byte already arrived (a cut duplicate): nothing to ask for.
            return;
        }
        let mut p = self.pure_ack(now);
        if let Some(ph) = p.tcp_mut() {
            let mut blocks = SackBlocks::default();
            blocks.push(
                Seq::from_offset(self.peer_isn, end),
                Seq::from_offset(self.peer_isn, start),
            );
            for (l, r) in ph.sack.iter().take(SackBlocks::MAX - 1) {
                blocks.push(l, r);
            }
            ph.sack = blocks;
            ph.ts_ecr = h.ts_val;
        }
        self.sender.stats.packs_sent += 1;
        self.control.push_back(p);
    }

    fn after_data(&mut self, now: Time, out: SegmentOutcome) {
        if let Some(f) = out.flush {
            let mut p = self.pure_ack(now);
            if let Some(ph) = p.tcp_mut() {
                ph.ack = Seq::from_offset(self.peer_isn, f.ack);
                if f.ece {
                    ph.flags.insert(TcpFlags::ECE);
                } else {
                    ph.flags.remove(TcpFlags::ECE);
                }
            }
            self.control.push_back(p);
        }
        let st = &mut self.sender.stats;
        st.bytes_delivered += out.delivered_bytes;
        st.duplicate_segments += u64::from(out.duplicate);
        st.out_of_order_segments += u64::from(out.out_of_order);
    }

    /// CP sender: every SACK-format block with right < left is a PACK naming the cut range
    /// `[right, left)`.
    fn on_packs(&mut self, h: &TcpHeader) {
        for (l, r) in h.sack.iter() {
            let (Some(left), Some(right)) = (
                l.unwrap_near(self.isn, self.sender.snd_una),
                r.unwrap_near(self.isn, self.sender.snd_una),
            ) else {
                continue;
            };
            if right < left {
                self.sender.on_pack(right, h.ts_ecr);
            }
        }
    }

    fn pure_ack(&self, now: Time) -> Packet {
        let seq = Seq::from_offset(self.isn, self.sender.snd_nxt);
        self.packet(now, seq, TcpFlags::empty(), 0, Ecn::NotEct)
    }

    fn established(&mut self, now: Time) {
        self.state = State::Established;
        self.handshake_deadline = None;
        self.syn_due = false;
        // RFC 6298 Sec. 2 / 3: the handshake gives the first RTT sample unless the SYN was
        // retransmitted (Karn); RFC 6298 Sec. 5.7: a timed-out SYN does not carry its back-off over.
        if let Some(t) = self.syn_sent_at.take() {
            if !self.syn_retransmitted {
                self.sender.rtt.on_sample(now - t);
            }
        }
        self.sender.rtt.reset_backoff();
        self.events.push_back(AppEvent::Connected);
    }

    /// Returns true when the segment was consumed by the handshake.
    fn handle_handshake(&mut self, now: Time, h: &TcpHeader) -> bool {
        let syn = h.flags.contains(TcpFlags::SYN);
        let ack = h.flags.contains(TcpFlags::ACK);
        match self.state {
            State::Listen => {
                if syn && !ack {
                    // RFC 793 Sec. 3.4: learn the peer's ISN, answer with SYN-ACK.
                    self.peer_isn = h.seq;
                    self.receiver.ts_recent = h.ts_val;
                    self.state = State::SynReceived;
                    self.syn_due = true;
                }
                true
            }
            State::SynSent => {
                if syn && ack && h.ack == self.isn.wrapping_add(1) {
                    self.peer_isn = h.seq;
                    self.receiver.ts_recent = h.ts_val;
                    self.established(now);
                    // RFC 793 Sec. 3.4: the third segment of the handshake.
                    self.receiver.request_ack();
                }
                true
            }
            State::SynReceived => {
                if syn && !ack {
                    // Our SYN-ACK was lost: the peer retransmitted its SYN.
                    self.syn_due = true;
                    return true;
                }
                if ack && h.ack == self.isn.wrapping_add(1) {
                    self.established(now);
                    return false;
                }
                true
            }
            State::Established => {
                if syn {
                    // A retransmitted SYN-ACK: our ACK was lost; acknowledge again.
                    self.receiver.request_ack();
                    return true;
                }
                false
            }
        }
    }

    fn handshake_timeout(&mut self, now: Time) {
        if self.handshake_deadline.is_some_and(|d| d <= now) {
            // RFC 6298 Sec. 5.5 applied to the SYN (RFC 6298 Sec. 2.1: initial RTO).
            self.sender.rtt.back_off();
            self.syn_retransmitted = true;
            self.syn_due = true;
            self.handshake_deadline = None;
            self.sender.stats.syn_retransmits += 1;
        }
    }

    fn count_sent(&mut self, pkt: &Packet) {
        self.sender.stats.segments_sent += 1;
        if pkt.payload_len() == 0 && !pkt.tcp().is_some_and(|h| h.flags.contains(TcpFlags::SYN)) {
            self.sender.stats.acks_sent += 1;
        }
    }
}

impl Engine for TcpEndpoint {
    fn send_message(&mut self, _now: Time, msg: MsgId, len_bytes: u64) {
        self.sender.queue_message(msg, len_bytes, &mut self.events);
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.receiver.expect_message(msg, len_bytes, &mut self.events);
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, _payload: &[u8]) {
        let Some(h) = pkt.tcp() else { return };
        if (self.state != State::Established || h.flags.contains(TcpFlags::SYN))
            && self.handle_handshake(now, h)
        {
            return;
        }
        if h.flags.contains(TcpFlags::ACK) {
            let Some((info, blocks)) = AckInfo::from_header(h, self.isn, self.sender.snd_una) else {
                return;
            };
            self.sender.on_ack(now, info, blocks, &mut self.events);
            if self.cfg.cp {
                self.on_packs(h);
            }
        }
        match h.ext {
            TcpExt::XorCoded {
                start,
                len_bytes,
                seg_bytes,
            } => {
                self.on_coded(now, pkt, start, len_bytes, seg_bytes);
                return;
            }
            TcpExt::CodedAck { end } => {
                if let Some(end) = end.unwrap_near(self.isn, self.sender.snd_una) {
                    self.sender.enter_fast_recovery_up_to(end);
                }
            }
            _ => {}
        }
        let Some(start) = h.seq.unwrap_near(self.peer_isn, self.receiver.rcv_nxt) else {
            return;
        };
        // RFC 7323 Sec. 4.3: remember the timestamp of a segment that does not leave a hole.
        if start <= self.receiver.rcv_nxt {
            self.receiver.ts_recent = h.ts_val;
        }
        if pkt.trimmed && h.payload_len > 0 {
            if self.cfg.cp {
                self.send_pack(now, h);
            }
            return;
        }
        let len = pkt.payload_len();
        if len > 0 {
            let out = self.receiver.on_data(
                now,
                start,
                len,
                pkt.ecn == Ecn::Ce,
                h.flags.contains(TcpFlags::CWR),
                &mut self.events,
            );
            self.after_data(now, out);
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.handshake_timeout(now);
        if self.state == State::Established {
            let timeouts = self.sender.stats.timeouts;
            self.sender.on_timer(now);
            if self.sender.stats.timeouts != timeouts {
                if let Some(ir) = self.ir.as_mut() {
                    ir.clear();
                }
            }
        }
        // The delayed-ACK deadline is checked by `ack_due` in `poll_transmit`.
    }

    fn poll_transmit(&mut self, now: Time, _payload: &mut Vec<u8>) -> Option<Packet> {
        if let Some(p) = self.control.pop_front() {
            self.count_sent(&p);
            return Some(p);
        }
        if self.syn_due {
            self.syn_due = false;
            let flags = TcpFlags::SYN;
            let p = self.packet(now, self.isn, flags, 0, Ecn::NotEct);
            if self.syn_sent_at.is_none() {
                self.syn_sent_at = Some(now);
            }
            self.handshake_deadline = Some(now + self.sender.rtt.rto());
            self.count_sent(&p);
            return Some(p);
        }
        if self.state != State::Established {
            return None;
        }
        if let Some(p) = self.copy.take() {
            self.count_sent(&p);
            return Some(p);
        }
        let una = self.sender.snd_una;
        if let Some(b) = self.ir.as_mut().and_then(|ir| ir.pop_due(now, una)) {
            let p = self.coded_packet(now, b);
            self.receiver.on_ack_sent();
            self.count_sent(&p);
            return Some(p);
        }
        if let Some(tx) = self.sender.next_transmission(now) {
            let p = self.data_packet(now, &tx);
            if !tx.retransmit {
                let srtt = self.sender.rtt.srtt();
                if let Some(ir) = self.ir.as_mut() {
                    ir.on_new_segment(now, tx.start, tx.len_bytes, self.cfg.mss_bytes, srtt);
                }
            }
            if self.cfg.proactive {
                // Flach et al. Sec. 3 (Proactive): every data packet goes out twice, the copy right
                // after the original; the copy's bytes are redundant.
                let end = tx.start + u64::from(tx.len_bytes);
                self.sender.ledger.charge_bytes(tx.start, end, Charge::Redundant);
                let st = &mut self.sender.stats;
                st.data_segments_sent += 1;
                st.payload_bytes_sent += u64::from(tx.len_bytes);
                self.copy = Some(p);
            }
            self.receiver.on_ack_sent();
            self.count_sent(&p);
            return Some(p);
        }
        if self.receiver.ack_due(now) {
            let p = self.pure_ack(now);
            self.receiver.on_ack_sent();
            self.count_sent(&p);
            return Some(p);
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        let (rto, coded) = if self.state == State::Established {
            (
                self.sender.deadline(),
                self.ir.as_ref().and_then(|ir| ir.deadline()),
            )
        } else {
            (None, None)
        };
        [rto, coded, self.handshake_deadline, self.receiver.ack_deadline]
            .into_iter()
            .flatten()
            .min()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.sender.ledger.stats(msg)
    }
}
