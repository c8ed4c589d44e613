//! The one contract every protocol engine implements: TCP and its variants, MPTCP/FUSO, CP, CloudBurst
//! and DCQUIC alike.
//!
//! An engine is a sans-IO state machine for one end of one connection (or one messaging association).
//! It never reads a clock, owns a socket or touches global randomness: its driver (the simulator, or a
//! real runtime) hands it `now` on every call and a seeded RNG at construction.
//!
//! # Driving an engine
//! Inputs are application commands ([`Engine::send_message`], [`Engine::expect_message`] and their
//! request/response forms), received packets ([`Engine::handle_packet`]) and timer expiries ([`Engine::handle_timeout`]). After any input
//! the driver drains the outputs in this order:
//! 1. [`Engine::poll_transmit`] until `None`: packets to put on the wire, in order;
//! 2. [`Engine::poll_event`] until `None`: application events;
//! 3. [`Engine::poll_timeout`]: the next deadline; the driver calls `handle_timeout` once `now` reaches
//!    it (calling early or late is harmless: engines re-check their own timers).
//!
//! # Messages
//! Message ids are the application's and opaque to engines: an engine never reads a role from one.
//! The application says what a message is by how it hands it over: a one-way message
//! ([`Engine::send_message`] / [`Engine::expect_message`]), a request its peer will answer
//! ([`Engine::send_request`] / [`Engine::expect_request`]), or the response to a given request
//! ([`Engine::send_response`] / [`Engine::expect_response`]). Engines whose wire has no notion of
//! requests (a TCP byte stream) keep the defaults, which treat both as plain messages; engines that map
//! requests onto their own structure (DCQUIC's bidirectional streams, a reconnecting RPC client that
//! re-sends unanswered requests) override them.

use crate::packet::Packet;
use crate::time::{Dur, Time};

/// Application-level message identifier, unique within a run.
pub type MsgId = u64;

/// How the application hands a message with its bytes to [`Engine::send_bytes`]: as
/// [`Engine::send_message`], [`Engine::send_request`] or [`Engine::send_response`] would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outgoing {
    Message,
    Request,
    Response { request: MsgId },
}

/// What an engine tells its application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// The connection is established (after the handshake, if one is modelled).
    Connected,
    /// Receiver side: every byte of the message has been delivered in order to the application.
    MessageReceived { msg: MsgId },
    /// Sender side: every byte of the message has been acknowledged; its counters are final.
    MessageAcked { msg: MsgId, stats: MessageStats },
    /// Sender side: the engine gave up on the message (e.g. a transmission timeout).
    MessageFailed { msg: MsgId, stats: MessageStats },
}

/// Loss-recovery counters attributed to one message (the sender knows which message each byte belongs
/// to, so a retransmission is charged to the message whose bytes it carries; a timeout to the message
/// holding the oldest unacknowledged byte).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageStats {
    pub timeouts: u32,
    pub fast_retransmits: u32,
    /// Payload bytes sent again by loss recovery (timeouts, fast and SACK-based retransmissions).
    pub retransmitted_bytes: u64,
    /// Payload bytes sent in addition to the message and its retransmissions (proactive copies, coded
    /// packets, replicas).
    pub redundant_bytes: u64,
    /// All payload bytes sent for the message, including the above.
    pub sent_bytes: u64,
}

impl MessageStats {
    pub fn add(&mut self, o: &MessageStats) {
        self.timeouts += o.timeouts;
        self.fast_retransmits += o.fast_retransmits;
        self.retransmitted_bytes += o.retransmitted_bytes;
        self.redundant_bytes += o.redundant_bytes;
        self.sent_bytes += o.sent_bytes;
    }
}

/// What a tracer may read of an engine's sender state (`tailcut trace`): its window and timer, and
/// cumulative counters whose increments tell which output or timer was a retransmission or an RTO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineProbe {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    /// The retransmission timeout in force, back-off included.
    pub rto: Dur,
    pub srtt: Option<Dur>,
    /// Data segments sent again by loss recovery so far.
    pub retransmits: u64,
    /// Retransmission timeouts so far.
    pub timeouts: u64,
    /// Probe timeouts (tail loss probe timers) fired so far. Not the probes sent: a probe leaves at
    /// the next transmission opportunity, after the timer event a tracer classifies.
    pub probe_timeouts: u64,
    /// RACK reordering timer expiries so far.
    pub reorder_timeouts: u64,
}

/// A sans-IO protocol engine. See the module documentation for the drain order.
pub trait Engine {
    /// Queue a one-way message of `len_bytes` bytes for transmission to the peer.
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64);

    /// Tell the receiving side that the next `len_bytes` bytes of the stream form the one-way message
    /// `msg`. This is the application's framing (a length prefix in a real RPC protocol);
    /// message-native engines may ignore it.
    fn expect_message(&mut self, msg: MsgId, len_bytes: u64);

    /// Queue request `msg`, which the peer's application will answer with a response.
    fn send_request(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        self.send_message(now, msg, len_bytes);
    }

    /// Frame the peer's next `len_bytes` bytes as its request `msg`.
    fn expect_request(&mut self, msg: MsgId, len_bytes: u64) {
        self.expect_message(msg, len_bytes);
    }

    /// Queue `msg` as the response to the peer's request `request`.
    fn send_response(&mut self, now: Time, _request: MsgId, msg: MsgId, len_bytes: u64) {
        self.send_message(now, msg, len_bytes);
    }

    /// Frame `len_bytes` bytes from the peer as `msg`, the response to this end's request `request`.
    fn expect_response(&mut self, _request: MsgId, msg: MsgId, len_bytes: u64) {
        self.expect_message(msg, len_bytes);
    }

    /// Queue message `msg` with its bytes. An engine that carries bytes (real sockets, byte-exact
    /// tests) delivers them to the peer, whose application reads them with [`Engine::take_bytes`]
    /// after `MessageReceived`; one that does not (the simulator's default) counts their length only,
    /// as the matching `send_*` method does.
    fn send_bytes(&mut self, now: Time, how: Outgoing, msg: MsgId, data: &[u8]) {
        let len = data.len() as u64;
        match how {
            Outgoing::Message => self.send_message(now, msg, len),
            Outgoing::Request => self.send_request(now, msg, len),
            Outgoing::Response { request } => self.send_response(now, request, msg, len),
        }
    }

    /// The bytes of message `msg` received from the peer, once, after its `MessageReceived`; `None`
    /// when the engine carries no bytes or has no such message.
    fn take_bytes(&mut self, _msg: MsgId) -> Option<Vec<u8>> {
        None
    }

    /// A packet addressed to this engine arrived. `payload` holds its bytes when the driver carries
    /// real bytes (QUIC, real sockets) and is empty in byte-less simulation.
    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]);

    /// A deadline previously returned by [`Engine::poll_timeout`] has been reached.
    fn handle_timeout(&mut self, now: Time);

    /// The next packet to send, if any. Engines that produce real bytes append them to `payload`,
    /// leaving what it holds: the socket runtime hands the TCP family a buffer that starts with room
    /// for the datagram's headers, so the payload is written once, in place (others get it empty).
    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet>;

    /// The earliest time at which the engine wants [`Engine::handle_timeout`] called.
    fn poll_timeout(&self) -> Option<Time>;

    /// The next application event, if any.
    fn poll_event(&mut self) -> Option<AppEvent>;

    /// Counters so far for a message this engine is sending and has not reported final (used for
    /// messages still unfinished when a run ends).
    fn message_stats(&self, msg: MsgId) -> Option<MessageStats>;

    /// One of this engine's messages just completed (acknowledged or failed): an engine may give back
    /// the buffer capacity it grew while the message was in flight. A hint that changes no behaviour:
    /// a finished connection otherwise keeps its largest window's worth of records to the end of a
    /// simulation (~5.8 KB per TCP flow on the web-search benchmark).
    fn release_memory(&mut self) {}

    /// Named counters the engine keeps (summed over engines into the run info); none by default.
    /// Read once at the end of a run.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The sender state a tracer samples; `None` for engines that do not expose one. Read only when a
    /// run is traced, never by the simulation itself.
    fn probe(&self) -> Option<EngineProbe> {
        None
    }
}

/// Whether a shim lets a packet through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Drop,
}

/// Where a shim injects a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Out through the host's NIC.
    ToNetwork,
    /// Up to the host's own engines, as if it had arrived from the network.
    ToHost,
}

/// A host shim between the engines and the NIC (e.g. T-RACKs in a hypervisor). It sees every packet in
/// both directions, may rewrite or drop it, and may inject packets of its own. Same drain contract as
/// [`Engine`]: after any input, drain [`Shim::poll_inject`], then read [`Shim::poll_timeout`].
pub trait Shim {
    /// A packet leaving an engine for the NIC.
    fn on_egress(&mut self, now: Time, pkt: &mut Packet) -> Verdict;
    /// A packet arriving from the NIC, before any engine sees it.
    fn on_ingress(&mut self, now: Time, pkt: &mut Packet) -> Verdict;
    fn handle_timeout(&mut self, now: Time);
    fn poll_inject(&mut self, now: Time) -> Option<(Direction, Packet)>;
    fn poll_timeout(&self) -> Option<Time>;
    /// Named counters the shim keeps (summed over hosts into the run info); none by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
