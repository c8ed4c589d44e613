//! The TCP baseline of DCQUIC's migration experiment (Sec. 4.3, "Server #2"): an RPC client over TCP
//! that, when the network looks unavailable, reconnects at application level from its next local
//! address (another NIC) and re-sends its unanswered requests.
//!
//! Unavailability is what an RPC framework can see: an outstanding request with no progress (no
//! response and no acknowledgement) for `reconnect_after`. The new connection's SYN carries the
//! application's resume header (the connection number and the ids of the re-sent requests, in order),
//! so the server side knows which requests are repeats: it re-sends the responses it had already sent
//! instead of handing a request to its application twice, and sends the responses of the resumed
//! requests in their order.

use crate::engine::{AppEvent, Engine, MessageStats, MsgId};
use crate::packet::{Addr, FiveTuple, Packet};
use crate::seq::Seq;
use crate::tcp::{Role, TcpConfig, TcpEndpoint};
use crate::time::{Dur, Time};
use crate::TcpFlags;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Sequence space between the ISNs of successive connections.
const ISN_STRIDE: u32 = 0x1000_0000;

/// One end of a reconnecting TCP RPC channel.
pub struct Reconnect {
    cfg: TcpConfig,
    client: bool,
    /// This end's view: src = own address.
    tuple: FiveTuple,
    addrs: Vec<Addr>,
    idx: usize,
    isn: Seq,
    peer_isn: Seq,
    /// Connection number (0 = the original).
    k: u32,
    inner: TcpEndpoint,
    reconnect_after: Dur,
    connected_once: bool,
    events: VecDeque<AppEvent>,
    reconnects: u64,
    // Client side.
    /// Requests without a complete response and one-way messages not yet acknowledged, in sending
    /// order, with their lengths.
    outstanding: Vec<(MsgId, u64)>,
    /// The one-way messages among `outstanding` (sent with `send_message`, no response expected):
    /// done when acknowledged, as nothing else will come for them.
    one_way: BTreeSet<MsgId>,
    /// The response framed for each outstanding request, and its length.
    responses: BTreeMap<MsgId, (MsgId, u64)>,
    /// Requests whose response framing the current connection has.
    registered: BTreeSet<MsgId>,
    last_progress: Time,
    resume: Option<Vec<u8>>,
    // Server side.
    expected: Vec<(MsgId, u64)>,
    delivered: BTreeMap<MsgId, u64>,
    /// Responses not yet acknowledged, by the request they answer: re-sent if that request is.
    sent_responses: BTreeMap<MsgId, (MsgId, u64)>,
    duplicates: BTreeSet<MsgId>,
    resume_order: VecDeque<MsgId>,
    /// Messages waiting for their turn in the resume order, with the request each answers.
    held: Vec<(Option<MsgId>, MsgId, u64)>,
}

impl Reconnect {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: TcpConfig,
        tuple: FiveTuple,
        client: bool,
        addrs: Vec<Addr>,
        isn: Seq,
        peer_isn: Seq,
        reconnect_after: Dur,
        now: Time,
    ) -> Reconnect {
        let role = if client { Role::Client } else { Role::Server };
        let inner = TcpEndpoint::new(cfg.clone(), tuple, role, isn, peer_isn);
        let addrs = if addrs.is_empty() { vec![tuple.src] } else { addrs };
        let idx = addrs.iter().position(|&a| a == tuple.src).unwrap_or(0);
        Reconnect {
            cfg,
            client,
            tuple,
            addrs,
            idx,
            isn,
            peer_isn,
            k: 0,
            inner,
            reconnect_after,
            connected_once: false,
            events: VecDeque::new(),
            reconnects: 0,
            outstanding: Vec::new(),
            one_way: BTreeSet::new(),
            responses: BTreeMap::new(),
            registered: BTreeSet::new(),
            last_progress: now,
            resume: None,
            expected: Vec::new(),
            delivered: BTreeMap::new(),
            sent_responses: BTreeMap::new(),
            duplicates: BTreeSet::new(),
            resume_order: VecDeque::new(),
            held: Vec::new(),
        }
    }

    fn fresh_inner(&mut self, role: Role) {
        let off = ISN_STRIDE.wrapping_mul(self.k);
        self.inner = TcpEndpoint::new(
            self.cfg.clone(),
            self.tuple,
            role,
            Seq(self.isn.0.wrapping_add(off)),
            Seq(self.peer_isn.0.wrapping_add(off)),
        );
    }

    /// Client: registers response framings on the current connection, in request order.
    fn flush_expect(&mut self) {
        for &(req, _) in &self.outstanding {
            if self.registered.contains(&req) {
                continue;
            }
            let Some(&(resp, len)) = self.responses.get(&req) else {
                break;
            };
            self.inner.expect_message(resp, len);
            self.registered.insert(req);
        }
    }

    /// Client: the application gives up on the connection and opens a new one from its next NIC.
    fn reconnect(&mut self, now: Time) {
        self.k += 1;
        self.idx = (self.idx + 1) % self.addrs.len();
        self.tuple.src = self.addrs[self.idx];
        self.fresh_inner(Role::Client);
        self.registered.clear();
        let mut hdr = Vec::with_capacity(8 * (1 + self.outstanding.len()));
        hdr.extend_from_slice(&(self.k as u64).to_le_bytes());
        for &(req, len) in &self.outstanding {
            hdr.extend_from_slice(&req.to_le_bytes());
            self.inner.send_message(now, req, len);
        }
        self.flush_expect();
        self.resume = Some(hdr);
        self.reconnects += 1;
        self.last_progress = now;
    }

    /// Server: a SYN from a new address with a resume header.
    fn accept_resumed(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        let k = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes")) as u32;
        let list: Vec<MsgId> = payload[8..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        self.k = k;
        self.tuple.dst = pkt.tuple.src;
        self.tuple.dst_port = pkt.tuple.src_port;
        self.fresh_inner(Role::Server);
        self.duplicates.clear();
        self.held.clear();
        let in_list: BTreeSet<MsgId> = list.iter().copied().collect();
        for &req in &list {
            if let Some(&len) = self.delivered.get(&req) {
                self.inner.expect_message(req, len);
                self.duplicates.insert(req);
                if let Some(&(resp, rlen)) = self.sent_responses.get(&req) {
                    self.held.push((Some(req), resp, rlen));
                }
            } else if let Some(&(_, len)) = self.expected.iter().find(|e| e.0 == req) {
                self.inner.expect_message(req, len);
            }
        }
        for &(req, len) in &self.expected {
            if !in_list.contains(&req) {
                self.inner.expect_message(req, len);
            }
        }
        self.resume_order = list.into();
        self.release(now);
    }

    /// Server: sends held responses as the resume order allows.
    fn release(&mut self, now: Time) {
        loop {
            let Some(&req) = self.resume_order.front() else {
                for (_, m, l) in std::mem::take(&mut self.held) {
                    self.inner.send_message(now, m, l);
                }
                return;
            };
            let Some(pos) = self.held.iter().position(|h| h.0 == Some(req)) else {
                return;
            };
            let (_, m, l) = self.held.remove(pos);
            self.inner.send_message(now, m, l);
            self.resume_order.pop_front();
        }
    }

    fn pump(&mut self, now: Time) {
        while let Some(ev) = self.inner.poll_event() {
            match ev {
                AppEvent::Connected => {
                    self.resume = None;
                    if !self.connected_once {
                        self.connected_once = true;
                        self.events.push_back(ev);
                    }
                }
                AppEvent::MessageFailed { .. } => {}
                AppEvent::MessageReceived { msg } => {
                    if self.client {
                        let answered = self.responses.iter().find(|r| r.1 .0 == msg).map(|r| *r.0);
                        if let Some(req) = answered {
                            self.outstanding.retain(|o| o.0 != req);
                            self.registered.remove(&req);
                            self.responses.remove(&req);
                        }
                        self.last_progress = now;
                        self.events.push_back(ev);
                    } else if self.duplicates.remove(&msg) {
                        // A repeat of a request already handed up; its response was re-sent.
                    } else {
                        if let Some(pos) = self.expected.iter().position(|e| e.0 == msg) {
                            let (_, len) = self.expected.remove(pos);
                            self.delivered.insert(msg, len);
                        }
                        self.events.push_back(ev);
                    }
                }
                AppEvent::MessageAcked { msg, .. } => {
                    self.last_progress = now;
                    if self.client && self.one_way.remove(&msg) {
                        self.outstanding.retain(|o| o.0 != msg);
                    }
                    if !self.client {
                        self.sent_responses.retain(|_, r| r.0 != msg);
                    }
                    self.events.push_back(ev);
                }
            }
        }
    }
}

impl Reconnect {
    /// Client: sends `msg` and watches it (the no-progress clock starts if nothing else was).
    fn watch(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        if self.outstanding.is_empty() {
            self.last_progress = now;
        }
        self.outstanding.push((msg, len_bytes));
        self.inner.send_message(now, msg, len_bytes);
    }

    /// Server: sends a message now, or holds it while resumed requests are answered in their order.
    fn send_or_hold(&mut self, now: Time, request: Option<MsgId>, msg: MsgId, len_bytes: u64) {
        if self.resume_order.is_empty() {
            self.inner.send_message(now, msg, len_bytes);
        } else {
            self.held.push((request, msg, len_bytes));
            self.release(now);
        }
    }
}

impl Engine for Reconnect {
    /// A client's one-way message: re-sent on a new connection until acknowledged (nothing answers
    /// it, so a response cannot end it; watched until answered, it would make the client reconnect
    /// and send it again after every quiet `reconnect_after`).
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        if self.client {
            self.one_way.insert(msg);
            self.watch(now, msg, len_bytes);
            return;
        }
        self.send_or_hold(now, None, msg, len_bytes);
    }

    /// A client's request: re-sent on a new connection until answered.
    fn send_request(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        if self.client {
            self.watch(now, msg, len_bytes);
            return;
        }
        self.send_or_hold(now, None, msg, len_bytes);
    }

    fn send_response(&mut self, now: Time, request: MsgId, msg: MsgId, len_bytes: u64) {
        if self.client {
            self.send_message(now, msg, len_bytes);
            return;
        }
        self.sent_responses.insert(request, (msg, len_bytes));
        self.send_or_hold(now, Some(request), msg, len_bytes);
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        if !self.client {
            self.expected.push((msg, len_bytes));
        }
        self.inner.expect_message(msg, len_bytes);
    }

    fn expect_response(&mut self, request: MsgId, msg: MsgId, len_bytes: u64) {
        if !self.client {
            self.expect_message(msg, len_bytes);
            return;
        }
        self.responses.insert(request, (msg, len_bytes));
        self.flush_expect();
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        if self.client {
            if pkt.tuple.dst != self.tuple.src {
                return; // for a connection the application abandoned
            }
        } else if pkt.tuple.src != self.tuple.dst || pkt.tuple.src_port != self.tuple.dst_port {
            let syn = pkt.tcp().is_some_and(|h| h.flags.contains(TcpFlags::SYN));
            if !(syn && payload.len() >= 8) {
                return;
            }
            self.accept_resumed(now, pkt, payload);
        }
        self.inner.handle_packet(now, pkt, &[]);
        self.pump(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.inner.handle_timeout(now);
        self.pump(now);
        if self.client
            && !self.outstanding.is_empty()
            && self.addrs.len() > 1
            && now >= self.last_progress + self.reconnect_after
        {
            self.reconnect(now);
        }
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        let mut pkt = self.inner.poll_transmit(now, payload)?;
        if let Some(hdr) = &self.resume {
            if pkt.tcp().is_some_and(|h| h.flags.contains(TcpFlags::SYN)) {
                payload.extend_from_slice(hdr);
                pkt.size_bytes += hdr.len() as u32;
            }
        }
        Some(pkt)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let own = (self.client && !self.outstanding.is_empty() && self.addrs.len() > 1)
            .then(|| self.last_progress + self.reconnect_after);
        match (self.inner.poll_timeout(), own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.inner.message_stats(msg).or(Some(MessageStats::default()))
    }

    fn release_memory(&mut self) {
        self.inner.release_memory();
    }

    fn probe(&self) -> Option<crate::engine::EngineProbe> {
        self.inner.probe()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("tcp_reconnects", self.reconnects)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Proto;

    /// A client (two addresses) and a server joined by a lossless 10 us path; the server answers
    /// request `req` with `resp` as soon as it arrives. Returns both ends and every event, in order.
    fn rpc(req: MsgId, resp: MsgId) -> ([Reconnect; 2], Vec<(usize, AppEvent)>) {
        exchange(req, Some(resp))
    }

    /// [`rpc`], or with `resp` `None` a one-way message `req` that nothing answers; run for 100 ms
    /// (100 x `reconnect_after`).
    fn exchange(req: MsgId, resp: Option<MsgId>) -> ([Reconnect; 2], Vec<(usize, AppEvent)>) {
        let client = FiveTuple {
            src: Addr(1),
            dst: Addr(10),
            src_port: 1000,
            dst_port: 2000,
            proto: Proto::Tcp,
        };
        let server = FiveTuple {
            src: client.dst,
            dst: client.src,
            src_port: client.dst_port,
            dst_port: client.src_port,
            proto: Proto::Tcp,
        };
        let after = Dur::from_millis(1);
        let (ic, is) = (Seq(100), Seq(9000));
        let mut e = [
            Reconnect::new(
                TcpConfig::default(),
                client,
                true,
                vec![Addr(1), Addr(2)],
                ic,
                is,
                after,
                Time::ZERO,
            ),
            Reconnect::new(
                TcpConfig::default(),
                server,
                false,
                vec![Addr(10)],
                is,
                ic,
                after,
                Time::ZERO,
            ),
        ];
        match resp {
            Some(_) => {
                e[1].expect_request(req, 1000);
                e[0].send_request(Time::ZERO, req, 1000);
            }
            None => {
                e[1].expect_message(req, 1000);
                e[0].send_message(Time::ZERO, req, 1000);
            }
        }
        let mut now = Time::ZERO;
        let mut wire: Vec<(Time, usize, Packet, Vec<u8>)> = Vec::new();
        let mut log = Vec::new();
        while now < Time(100_000_000) {
            for i in 0..2 {
                let mut buf = Vec::new();
                while let Some(p) = e[i].poll_transmit(now, &mut buf) {
                    wire.push((now + Dur(10_000), 1 - i, p, std::mem::take(&mut buf)));
                }
                while let Some(ev) = e[i].poll_event() {
                    log.push((i, ev));
                    if let (1, Some(resp)) = (i, resp) {
                        if ev == (AppEvent::MessageReceived { msg: req }) {
                            e[0].expect_response(req, resp, 3000);
                            e[1].send_response(now, req, resp, 3000);
                        }
                    }
                }
            }
            let next = wire
                .iter()
                .map(|w| w.0)
                .chain(e.iter().filter_map(|x| x.poll_timeout()))
                .min();
            let Some(t) = next else { break };
            now = now.max(t);
            for (_, to, p, payload) in wire.extract_if(.., |w| w.0 <= now) {
                e[to].handle_packet(now, &p, &payload);
            }
            for x in &mut e {
                if x.poll_timeout().is_some_and(|d| d <= now) {
                    x.handle_timeout(now);
                }
            }
        }
        (e, log)
    }

    /// The response is paired with its request by the call that framed it, whatever the ids: an odd
    /// request answered by an even response completes, and the client stops watching it.
    #[test]
    fn responses_pair_with_requests_by_the_call_not_the_id() {
        let (e, log) = rpc(5, 2);
        assert!(
            log.contains(&(0, AppEvent::MessageReceived { msg: 2 })),
            "{log:?}"
        );
        assert!(e[0].outstanding.is_empty() && e[0].responses.is_empty());
        assert_eq!(e[0].reconnects, 0);
        assert!(e[1].sent_responses.is_empty(), "the response was acknowledged");
    }

    /// A one-way message is done when acknowledged: the client stops watching it and never
    /// reconnects to send it again (it did after every quiet `reconnect_after`, watching for a
    /// response that nothing sends).
    #[test]
    fn a_one_way_message_ends_at_its_ack_without_a_reconnection() {
        let (e, log) = exchange(7, None);
        assert_eq!(
            log.iter()
                .filter(|l| **l == (1, AppEvent::MessageReceived { msg: 7 }))
                .count(),
            1,
            "{log:?}"
        );
        assert!(log
            .iter()
            .any(|l| matches!(l, (0, AppEvent::MessageAcked { msg: 7, .. }))));
        assert!(e[0].outstanding.is_empty() && e[0].one_way.is_empty());
        assert_eq!(e[0].reconnects, 0);
    }
}
