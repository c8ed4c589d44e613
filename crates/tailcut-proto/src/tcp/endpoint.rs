//! [`TcpEndpoint`]: one end of one TCP connection, gluing the sender, the receiver and the handshake
//! to the [`Engine`] contract and to wire sequence numbers, and calling the installed extensions
//! (`ext/`) at their points.

use super::bytes::SendBytes;
use super::cc::CongestionControl as _;
use super::config::{CongestionControl, TcpConfig};
use super::ext::{Extension, Extensions};
use super::jiffies::TimerClock;
use super::receiver::{EcnEcho, Receiver, SegmentOutcome};
use super::sender::{AckInfo, Sender, Transmission};
use super::stats::ConnStats;
use crate::engine::{AppEvent, Engine, EngineProbe, MessageStats, MsgId, Outgoing};
use crate::packet::{Ecn, FiveTuple, Header, Packet, Route, SackBlocks, TcpExt, TcpFlags, TcpHeader};
use crate::seq::Seq;
use crate::time::{earliest, Dur, Time};
use std::collections::VecDeque;

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
    conn: Conn,
    ext: Extensions,
}

/// The connection without its extensions, which the extensions' endpoint points work on.
pub(crate) struct Conn {
    pub(crate) cfg: TcpConfig,
    tuple: FiveTuple,
    class: u8,
    route: Route,
    state: State,
    pub(crate) isn: Seq,
    pub(crate) peer_isn: Seq,
    pub(crate) sender: Sender,
    pub(crate) receiver: Receiver,
    /// SYN / SYN-ACK retransmission deadline.
    handshake_deadline: Option<Time>,
    /// When the first SYN / SYN-ACK went out, and whether it was retransmitted (Karn).
    syn_sent_at: Option<Time>,
    syn_retransmitted: bool,
    /// A handshake segment is due (first transmission or retransmission).
    syn_due: bool,
    /// Pure ACKs that must precede anything else (DCTCP CE-state flush, extensions' ACKs).
    pub(crate) control: VecDeque<Packet>,
    pub(crate) events: VecDeque<AppEvent>,
    /// The unacknowledged send-stream bytes, when the driver carries bytes (`bytes.rs`).
    send_bytes: Option<SendBytes>,
}

impl TcpEndpoint {
    /// `tuple` is local -> remote; `isn` / `peer_isn` are the initial sequence numbers of the two
    /// directions (with the handshake the server learns the peer's from its SYN). Without
    /// `cfg.handshake` the connection starts established and `Connected` is the first event.
    pub fn new(cfg: TcpConfig, tuple: FiveTuple, role: Role, isn: Seq, peer_isn: Seq) -> Self {
        let ecn = match (cfg.ecn, cfg.congestion_control) {
            (false, _) => EcnEcho::Off,
            (true, CongestionControl::NewReno | CongestionControl::Cubic(_)) => EcnEcho::Classic,
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
        let ext = Extensions::new(&cfg);
        let mut receiver = Receiver::new(cfg.rcv_window_bytes, cfg.mss_bytes, cfg.delayed_ack, ecn);
        receiver.set_dsack(cfg.dsack);
        receiver.set_clock(TimerClock::new(cfg.timer_hz));
        if cfg.carry_bytes {
            // TCP-IR rebuilds a lost segment from the others of its block, some already in order.
            let block = cfg
                .tcp_ir
                .map_or(0, |ir| ir.max_block_segments as usize * cfg.mss_bytes as usize);
            receiver.carry_bytes(block);
        }
        let conn = Conn {
            sender: Sender::new(&cfg),
            receiver,
            send_bytes: cfg.carry_bytes.then(SendBytes::default),
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
            events,
        };
        TcpEndpoint { conn, ext }
    }

    pub fn set_class(&mut self, class: u8) {
        self.conn.class = class;
    }

    pub fn set_route(&mut self, route: Route) {
        self.conn.route = route;
    }

    pub fn stats(&self) -> &ConnStats {
        &self.conn.sender.stats
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.conn.sender.cc.cwnd_bytes()
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.conn.sender.cc.ssthresh_bytes()
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.conn.sender.rtt.srtt()
    }

    /// The current retransmission timeout, back-off included.
    pub fn rto(&self) -> Dur {
        self.conn.sender.rtt.rto()
    }

    /// DCTCP's alpha, if DCTCP is the congestion control.
    pub fn dctcp_alpha(&self) -> Option<f64> {
        self.conn.sender.cc.algo.marked_fraction()
    }

    pub fn is_established(&self) -> bool {
        self.conn.state == State::Established
    }

    /// Send stream: oldest unacknowledged offset and next new offset.
    pub fn snd_una(&self) -> u64 {
        self.conn.sender.snd_una
    }

    pub fn snd_nxt(&self) -> u64 {
        self.conn.sender.snd_nxt
    }

    /// Receive stream: bytes delivered in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.conn.receiver.rcv_nxt
    }

    /// Payload bytes held for the peer and the application (0 without `carry_bytes`).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.conn.send_bytes.as_ref().map_or(0, |b| b.held())
            + self.conn.receiver.bytes().map_or(0, |b| b.held())
    }

    /// Retransmit the segment holding send-stream offset `offset` at the next `poll_transmit`,
    /// regardless of cwnd (hook for precise loss notification; used by schemes built on TCP).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn retransmit_segment(&mut self, offset: u64) -> bool {
        self.conn.sender.retransmit_segment(offset)
    }
}

impl Conn {
    fn ts_val(now: Time) -> u32 {
        (now.as_nanos() / 1_000) as u32
    }

    /// A packet with every field this endpoint stamps; `seq`, flags and payload filled by callers.
    pub(crate) fn packet(&self, now: Time, seq: Seq, flags: TcpFlags, payload_len: u32, ecn: Ecn) -> Packet {
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

    /// RFC 3168 Sec. 6.1.1: data is sent ECN-capable. Retransmissions too, as Linux does and
    /// RFC 8311 Sec. 4.4 permits, so they are marked rather than dropped by AQM.
    pub(crate) fn data_ecn(&self) -> Ecn {
        if self.cfg.ecn {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        }
    }

    fn data_packet(&self, now: Time, tx: &Transmission, ext: &Extensions) -> Packet {
        let mut flags = TcpFlags::PSH;
        if tx.cwr {
            flags.insert(TcpFlags::CWR);
        }
        let seq = Seq::from_offset(self.isn, tx.start);
        let mut p = self.packet(now, seq, flags, tx.len_bytes, self.data_ecn());
        ext.tag(&mut p, tx.start, &self.sender);
        p
    }

    /// The receiver took a data segment: send its CE-state flush ACK, if any, and count it.
    pub(crate) fn after_data(&mut self, now: Time, out: SegmentOutcome) {
        if let Some(f) = out.flush {
            let mut p = self.pure_ack(now);
            f.stamp(&mut p, self.peer_isn);
            self.control.push_back(p);
        }
        self.sender.stats.count_segment(&out);
    }

    pub(crate) fn pure_ack(&self, now: Time) -> Packet {
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
                let (una, nxt) = (self.sender.snd_una, self.sender.snd_nxt);
                self.sender.rtt.on_sample(now - t, una, nxt);
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
            // A lost SYN or SYN-ACK costs the message waiting behind it a whole RTO: it is a
            // retransmission timeout of that message like any other (docs/metrics.md).
            self.sender.ledger.charge_handshake_timeout(self.sender.snd_una);
        }
    }

    fn count_sent(&mut self, pkt: &Packet) {
        self.sender.stats.segments_sent += 1;
        if pkt.payload_len() == 0 && !pkt.tcp().is_some_and(|h| h.flags.contains(TcpFlags::SYN)) {
            self.sender.stats.acks_sent += 1;
        }
    }

    fn send_message(&mut self, msg: MsgId, len_bytes: u64) {
        if let Some(b) = self.send_bytes.as_mut() {
            // A message given by length only, on a connection that carries bytes, is zeros.
            b.push_zeros(len_bytes);
        }
        self.sender.queue_message(msg, len_bytes, &mut self.events);
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.receiver.expect_message(msg, len_bytes, &mut self.events);
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8], ext: &mut Extensions) {
        let Some(h) = pkt.tcp() else { return };
        if self.receiver.carries_bytes() && payload.len() != pkt.payload_len() as usize {
            // Its bytes disagree with its header: dropped whole, as a segment failing its checksum.
            return;
        }
        if (self.state != State::Established || h.flags.contains(TcpFlags::SYN))
            && self.handle_handshake(now, h)
        {
            return;
        }
        if h.flags.contains(TcpFlags::ACK) {
            let Some((info, blocks)) = AckInfo::from_header(h, self.isn, self.sender.snd_una) else {
                return;
            };
            self.sender.on_ack(now, info, blocks, &mut self.events, ext);
            ext.on_ack_received(self, now, h);
        }
        if ext.on_segment(self, now, pkt, h, payload) {
            return;
        }
        let Some(start) = self.receiver.arrival(h, self.peer_isn) else {
            return;
        };
        if pkt.trimmed && h.payload_len > 0 {
            ext.on_cut_segment(self, now, h);
            return;
        }
        if pkt.payload_len() > 0 && self.receiver.accept_bytes(start, h.payload_len, payload) {
            // Only Linux's ACK policy reads them; the RTO costs a few instructions per segment.
            if self.receiver.reads_rtt() {
                self.receiver
                    .set_rtt(self.sender.rtt.rto(), self.sender.rtt.srtt());
            }
            let out = self.receiver.on_segment(now, start, pkt, h, &mut self.events);
            self.after_data(now, out);
        }
        if let Some(b) = self.send_bytes.as_mut() {
            b.release_to(
                ext.hold_from(self.sender.snd_una)
                    .map_or(self.sender.snd_una, |o| o.min(self.sender.snd_una)),
            );
        }
    }

    /// Writes the payload of `p`, about to leave, when the connection carries bytes: the stream
    /// bytes it names, or for a TCP-IR coded packet the XOR of its block's segments.
    fn write_payload(&self, p: &Packet, out: &mut Vec<u8>) {
        let (Some(b), Some(h)) = (self.send_bytes.as_ref(), p.tcp()) else {
            return;
        };
        if p.payload_len() == 0 {
            return;
        }
        if let TcpExt::XorCoded {
            start,
            len_bytes,
            seg_bytes,
        } = h.ext
        {
            let Some(start) = start.unwrap_near(self.isn, self.sender.snd_una) else {
                return;
            };
            let at = out.len();
            out.resize(at + seg_bytes as usize, 0);
            let seg = u64::from(seg_bytes.max(1));
            let end = start + u64::from(len_bytes);
            let mut lo = start;
            while lo < end {
                let n = (end - lo).min(seg) as usize;
                b.xor_into(lo, &mut out[at..at + n]);
                lo += seg;
            }
            return;
        }
        if let Some(start) = h.seq.unwrap_near(self.isn, self.sender.snd_una) {
            b.copy_to(start, h.payload_len, out);
        }
    }

    fn handle_timeout(&mut self, now: Time, ext: &mut Extensions) {
        self.handshake_timeout(now);
        if self.state == State::Established {
            self.sender.on_timer(now, ext);
        }
        // The delayed-ACK deadline is checked by `ack_due` in `poll_transmit`; Linux's policy also
        // adapts its ATO when its timer fires.
        if self.receiver.reads_rtt() {
            self.receiver
                .set_rtt(self.sender.rtt.rto(), self.sender.rtt.srtt());
            self.receiver.on_timeout(now);
        }
    }

    fn poll_transmit(&mut self, now: Time, ext: &mut Extensions) -> Option<Packet> {
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
            self.handshake_deadline = Some(self.sender.rto_at(now));
            self.count_sent(&p);
            return Some(p);
        }
        if self.state != State::Established {
            return None;
        }
        if let Some((p, _)) = ext.poll_transmit(self, now) {
            self.count_sent(&p);
            return Some(p);
        }
        if let Some(tx) = self.sender.next_transmission(now, ext) {
            let mut p = self.data_packet(now, &tx, ext);
            ext.on_data_packet(self, now, &tx, &mut p);
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

    fn poll_timeout(&self, ext: &Extensions) -> Option<Time> {
        let rto = if self.state == State::Established {
            self.sender.deadline(ext)
        } else {
            None
        };
        earliest(earliest(rto, self.handshake_deadline), self.receiver.ack_deadline)
    }
}

impl Engine for TcpEndpoint {
    fn send_message(&mut self, _now: Time, msg: MsgId, len_bytes: u64) {
        self.conn.send_message(msg, len_bytes);
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.conn.expect_message(msg, len_bytes);
    }

    fn send_bytes(&mut self, _now: Time, _how: Outgoing, msg: MsgId, data: &[u8]) {
        if let Some(b) = self.conn.send_bytes.as_mut() {
            b.push(data);
        }
        self.conn
            .sender
            .queue_message(msg, data.len() as u64, &mut self.conn.events);
    }

    fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        self.conn.receiver.take_bytes(msg)
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        self.conn.handle_packet(now, pkt, payload, &mut self.ext);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.conn.handle_timeout(now, &mut self.ext);
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        // The packet stays in its `Option`: taken out and put back, it was copied twice more (12
        // instructions per packet-hop on benchmark (a)).
        let p = self.conn.poll_transmit(now, &mut self.ext);
        if let Some(p) = &p {
            self.conn.write_payload(p, payload);
        }
        p
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.conn.poll_timeout(&self.ext)
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.conn.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.conn.sender.ledger.stats(msg)
    }

    fn release_memory(&mut self) {
        self.conn.sender.scoreboard.shrink();
    }

    fn probe(&self) -> Option<EngineProbe> {
        let s = self.stats();
        Some(EngineProbe {
            cwnd_bytes: self.cwnd_bytes(),
            ssthresh_bytes: self.ssthresh_bytes(),
            rto: self.rto(),
            srtt: self.srtt(),
            retransmits: s.retransmits,
            timeouts: s.timeouts,
            probe_timeouts: s.probe_timeouts,
            reorder_timeouts: s.reorder_timeouts,
        })
    }
}
