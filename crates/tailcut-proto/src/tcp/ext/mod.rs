//! TCP extensions: the schemes built on TCP (TLP, TCP-IR, Proactive, PIAS, pFabric, CP) and
//! per-packet spraying, one file each. The core (`sender.rs`, `receiver.rs`, `endpoint.rs`) holds no
//! state of theirs and never asks which scheme runs: it calls the installed extensions at the points
//! of the [`Extension`] trait, and each extension overrides the points it needs.
//!
//! The installed set is a fixed struct of optional extensions ([`Extensions`]), built once per
//! connection from the `TcpConfig` fields the transport registry sets; a connection with none (plain
//! TCP, DCTCP) pays one branch per point. Extensions are called in a fixed order, the order in which
//! their effects must land when more than one is installed (`docs/tcp.md`, "Extensions").

mod cp;
mod ir;
mod pfabric;
mod pias;
mod proactive;
mod spray;
mod tlp;

use super::cc::CongestionControl;
use super::config::TcpConfig;
use super::endpoint::Conn;
use super::sender::{Sender, Transmission};
use crate::packet::{Packet, TcpHeader};
use crate::time::{earliest, Time};
pub(crate) use cp::{pack, Cp};
use ir::TcpIr;
use pfabric::Pfabric;
use pias::Pias;
use proactive::Proactive;
use spray::Spray;
pub(crate) use tlp::loss_probe;
use tlp::Tlp;

/// What an extension makes of a transmission opportunity of the sender.
pub(crate) enum Step {
    /// Nothing to send: the sender goes on as usual.
    Pass,
    /// Send this segment.
    Send(Transmission),
    /// Send nothing now, and nothing else either.
    Hold,
}

/// The points where the core calls an extension. Every method defaults to doing nothing.
///
/// Sender points receive the sender (generic over its congestion control, so MPTCP sub-flows run
/// the same extensions); endpoint points receive the rest of a TCP connection ([`Conn`]).
pub(crate) trait Extension {
    /// The sender processed an acceptable ACK that acknowledged `acked_bytes` new bytes.
    fn on_ack<C: CongestionControl>(&mut self, _s: &mut Sender<C>, _now: Time, _acked_bytes: u64) {}

    /// A timer fired; the sender checks its RTO only if no extension claims the timer (true).
    fn on_timer<C: CongestionControl>(&mut self, _s: &mut Sender<C>, _now: Time) -> bool {
        false
    }

    /// The extension's own next deadline.
    fn deadline<C: CongestionControl>(&self, _s: &Sender<C>) -> Option<Time> {
        None
    }

    /// A retransmission timeout, the `consecutive`-th in a row. True holds the RTO where it is (no
    /// exponential back-off).
    fn on_rto(&mut self, _consecutive: u32) -> bool {
        false
    }

    /// A transmission opportunity, before the sender's forced retransmissions.
    fn before_retransmissions<C: CongestionControl>(&mut self, _s: &mut Sender<C>, _now: Time) -> Step {
        Step::Pass
    }

    /// A transmission opportunity after the forced retransmissions, before loss recovery and new data.
    fn after_retransmissions<C: CongestionControl>(&mut self, _s: &mut Sender<C>, _now: Time) -> Step {
        Step::Pass
    }

    /// The sender's new data (not an extension's) just went out.
    fn on_new_data<C: CongestionControl>(&mut self, _s: &mut Sender<C>, _now: Time) {}

    /// Stamp a packet whose first stream byte is `offset` (class, priority).
    fn tag<C: CongestionControl>(&self, _p: &mut Packet, _offset: u64, _s: &Sender<C>) {}

    /// A data packet for transmission `tx` is about to leave.
    fn on_data_packet(&mut self, _c: &mut Conn, _now: Time, _tx: &Transmission, _p: &mut Packet) {}

    /// A packet of the extension's own, ahead of the sender's data: the packet and, if it is to be
    /// tagged, its first stream byte.
    fn poll_transmit(&mut self, _c: &mut Conn, _now: Time) -> Option<(Packet, Option<u64>)> {
        None
    }

    /// An incoming segment's ACK fields were processed by the sender.
    fn on_ack_received(&mut self, _c: &mut Conn, _now: Time, _h: &TcpHeader) {}

    /// An incoming segment with its payload bytes (empty unless the connection carries bytes),
    /// before the receiver sees it; true consumes it.
    fn on_segment(
        &mut self,
        _c: &mut Conn,
        _now: Time,
        _pkt: &Packet,
        _h: &TcpHeader,
        _payload: &[u8],
    ) -> bool {
        false
    }

    /// The oldest send-stream byte the extension may still read (a coded packet not yet sent),
    /// which a connection carrying bytes must keep even once acknowledged (`snd_una`).
    fn hold_from(&self, _snd_una: u64) -> Option<u64> {
        None
    }

    /// An incoming data segment whose payload a switch cut off (it carries no data).
    fn on_cut_segment(&mut self, _c: &mut Conn, _now: Time, _h: &TcpHeader) {}
}

/// The extensions installed on one connection (or one MPTCP sub-flow).
#[derive(Default)]
pub(crate) struct Extensions {
    /// Any installed: the fast path of plain TCP skips every point on this flag.
    installed: bool,
    spray: Option<Spray>,
    pias: Option<Pias>,
    pfabric: Option<Pfabric>,
    tlp: Option<Tlp>,
    ir: Option<TcpIr>,
    proactive: Option<Proactive>,
    /// Public to MPTCP, whose sub-flows reuse CP's sender with their own ACK parsing.
    pub(crate) cp: Option<Cp>,
}

impl Extensions {
    /// The extensions `cfg` switches on. TLP needs SACK (it is off without).
    pub(crate) fn new(cfg: &TcpConfig) -> Self {
        let pfabric = cfg.pfabric_priority || cfg.pfabric_probe_after.is_some();
        Extensions {
            installed: false,
            spray: (cfg.spray_paths > 0).then(|| Spray::new(cfg.spray_paths)),
            pias: cfg.pias.clone().map(Pias::new),
            pfabric: pfabric.then(|| Pfabric::new(cfg.pfabric_priority, cfg.pfabric_probe_after)),
            tlp: cfg.tlp.filter(|_| cfg.sack).map(Tlp::new),
            ir: cfg.tcp_ir.map(TcpIr::new),
            proactive: cfg.proactive.then(Proactive::default),
            cp: cfg.cp.then(Cp::default),
        }
        .with_flag()
    }

    /// An MPTCP sub-flow's: CP only. The other extensions are single-path schemes the transport
    /// registry never combines with MPTCP (their `TcpConfig` fields are not parameters).
    pub(crate) fn subflow(cfg: &TcpConfig) -> Self {
        Extensions {
            cp: cfg.cp.then(Cp::default),
            ..Extensions::default()
        }
        .with_flag()
    }

    fn with_flag(mut self) -> Self {
        self.installed = self.spray.is_some()
            || self.pias.is_some()
            || self.pfabric.is_some()
            || self.tlp.is_some()
            || self.ir.is_some()
            || self.proactive.is_some()
            || self.cp.is_some();
        self
    }
}

/// The points' bodies, out of line: a connection with no extension installed (plain TCP, DCTCP) pays
/// one inlined test per point instead of a call (16 instructions per packet-hop on benchmark (a)).
impl Extensions {
    #[inline(never)]
    fn on_ack_installed<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time, acked_bytes: u64) {
        if let Some(e) = self.pfabric.as_mut() {
            e.on_ack(s, now, acked_bytes);
        }
        if let Some(e) = self.tlp.as_mut() {
            e.on_ack(s, now, acked_bytes);
        }
    }

    #[inline(never)]
    fn on_timer_installed<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> bool {
        self.tlp.as_mut().is_some_and(|e| e.on_timer(s, now))
    }

    #[inline(never)]
    fn deadline_installed<C: CongestionControl>(&self, s: &Sender<C>) -> Option<Time> {
        let tlp = self.tlp.as_ref().and_then(|e| e.deadline(s));
        let ir = self.ir.as_ref().and_then(|e| e.deadline(s));
        earliest(tlp, ir)
    }

    #[inline(never)]
    fn on_rto_installed(&mut self, consecutive: u32) -> bool {
        // Every extension hears of the timeout; any may hold the RTO.
        let mut hold = false;
        if let Some(e) = self.pfabric.as_mut() {
            hold |= e.on_rto(consecutive);
        }
        if let Some(e) = self.tlp.as_mut() {
            hold |= e.on_rto(consecutive);
        }
        if let Some(e) = self.cp.as_mut() {
            hold |= e.on_rto(consecutive);
        }
        if let Some(e) = self.ir.as_mut() {
            hold |= e.on_rto(consecutive);
        }
        hold
    }

    #[inline(never)]
    fn before_retransmissions_installed<C: CongestionControl>(
        &mut self,
        s: &mut Sender<C>,
        now: Time,
    ) -> Step {
        match self.pfabric.as_mut() {
            Some(e) => e.before_retransmissions(s, now),
            _ => Step::Pass,
        }
    }

    #[inline(never)]
    fn after_retransmissions_installed<C: CongestionControl>(
        &mut self,
        s: &mut Sender<C>,
        now: Time,
    ) -> Step {
        if let Some(e) = self.tlp.as_mut() {
            if let step @ (Step::Send(_) | Step::Hold) = e.after_retransmissions(s, now) {
                return step;
            }
        }
        if let Some(e) = self.cp.as_mut() {
            return e.after_retransmissions(s, now);
        }
        Step::Pass
    }

    #[inline(never)]
    fn on_new_data_installed<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) {
        if let Some(e) = self.tlp.as_mut() {
            e.on_new_data(s, now);
        }
    }

    #[inline(never)]
    fn tag_installed<C: CongestionControl>(&self, p: &mut Packet, offset: u64, s: &Sender<C>) {
        if let Some(e) = &self.pias {
            e.tag(p, offset, s);
        }
        if let Some(e) = &self.pfabric {
            e.tag(p, offset, s);
        }
    }

    #[inline(never)]
    fn on_data_packet_installed(&mut self, c: &mut Conn, now: Time, tx: &Transmission, p: &mut Packet) {
        // Spraying first: a Proactive copy takes the route of its original.
        if let Some(e) = self.spray.as_mut() {
            e.on_data_packet(c, now, tx, p);
        }
        if let Some(e) = self.ir.as_mut() {
            e.on_data_packet(c, now, tx, p);
        }
        if let Some(e) = self.proactive.as_mut() {
            e.on_data_packet(c, now, tx, p);
        }
    }

    #[inline(never)]
    fn poll_transmit_installed(&mut self, c: &mut Conn, now: Time) -> Option<(Packet, Option<u64>)> {
        let mut out = self.proactive.as_mut().and_then(|e| e.poll_transmit(c, now));
        if out.is_none() {
            out = self.ir.as_mut().and_then(|e| e.poll_transmit(c, now));
        }
        let (mut p, at) = out?;
        if let Some(at) = at {
            self.tag(&mut p, at, &c.sender);
        }
        Some((p, None))
    }

    #[inline(never)]
    fn on_ack_received_installed(&mut self, c: &mut Conn, now: Time, h: &TcpHeader) {
        if let Some(e) = self.cp.as_mut() {
            e.on_ack_received(c, now, h);
        }
    }

    #[inline(never)]
    fn on_segment_installed(
        &mut self,
        c: &mut Conn,
        now: Time,
        pkt: &Packet,
        h: &TcpHeader,
        payload: &[u8],
    ) -> bool {
        self.ir
            .as_mut()
            .is_some_and(|e| e.on_segment(c, now, pkt, h, payload))
    }

    #[inline(never)]
    fn on_cut_segment_installed(&mut self, c: &mut Conn, now: Time, h: &TcpHeader) {
        if let Some(e) = self.cp.as_mut() {
            e.on_cut_segment(c, now, h);
        }
    }
}

/// Dispatch, in a fixed order per point; see the trait for what each point means.
impl Extension for Extensions {
    #[inline(always)]
    fn on_ack<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time, acked_bytes: u64) {
        if self.installed {
            self.on_ack_installed::<C>(s, now, acked_bytes);
        }
    }

    #[inline(always)]
    fn on_timer<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> bool {
        if !self.installed {
            return false;
        }
        self.on_timer_installed::<C>(s, now)
    }

    #[inline(always)]
    fn deadline<C: CongestionControl>(&self, s: &Sender<C>) -> Option<Time> {
        if !self.installed {
            return None;
        }
        self.deadline_installed::<C>(s)
    }

    #[inline(always)]
    fn on_rto(&mut self, consecutive: u32) -> bool {
        if !self.installed {
            return false;
        }
        self.on_rto_installed(consecutive)
    }

    #[inline(always)]
    fn before_retransmissions<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Step {
        if !self.installed {
            return Step::Pass;
        }
        self.before_retransmissions_installed::<C>(s, now)
    }

    #[inline(always)]
    fn after_retransmissions<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Step {
        if !self.installed {
            return Step::Pass;
        }
        self.after_retransmissions_installed::<C>(s, now)
    }

    #[inline(always)]
    fn on_new_data<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) {
        if self.installed {
            self.on_new_data_installed::<C>(s, now);
        }
    }

    #[inline(always)]
    fn tag<C: CongestionControl>(&self, p: &mut Packet, offset: u64, s: &Sender<C>) {
        if self.installed {
            self.tag_installed::<C>(p, offset, s);
        }
    }

    #[inline(always)]
    fn on_data_packet(&mut self, c: &mut Conn, now: Time, tx: &Transmission, p: &mut Packet) {
        if self.installed {
            self.on_data_packet_installed(c, now, tx, p);
        }
    }

    #[inline(always)]
    fn poll_transmit(&mut self, c: &mut Conn, now: Time) -> Option<(Packet, Option<u64>)> {
        if !self.installed {
            return None;
        }
        self.poll_transmit_installed(c, now)
    }

    #[inline(always)]
    fn on_ack_received(&mut self, c: &mut Conn, now: Time, h: &TcpHeader) {
        if self.installed {
            self.on_ack_received_installed(c, now, h);
        }
    }

    #[inline(always)]
    fn on_segment(&mut self, c: &mut Conn, now: Time, pkt: &Packet, h: &TcpHeader, payload: &[u8]) -> bool {
        if !self.installed {
            return false;
        }
        self.on_segment_installed(c, now, pkt, h, payload)
    }

    fn hold_from(&self, snd_una: u64) -> Option<u64> {
        self.ir.as_ref().and_then(|e| e.hold_from(snd_una))
    }

    #[inline(always)]
    fn on_cut_segment(&mut self, c: &mut Conn, now: Time, h: &TcpHeader) {
        if self.installed {
            self.on_cut_segment_installed(c, now, h);
        }
    }
}
