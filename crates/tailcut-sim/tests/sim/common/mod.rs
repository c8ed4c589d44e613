//! A minimal paced engine for testing the network without a transport: the sender emits a message as
//! fixed-size datagrams at a fixed gap; the receiver reports the message once every byte arrived.
#![allow(dead_code)]

pub mod fixtures;

use std::collections::VecDeque;
use tailcut_proto::rng::Rng;
use tailcut_proto::{AppEvent, Dur, Engine, FiveTuple, Header, MessageStats, MsgId, Packet, Route, Time};
use tailcut_sim::transport::{ConnSetup, EngineFactory, Transport};

pub struct Paced {
    tuple: FiveTuple,
    gap: Dur,
    route: Route,
    pkt_payload: u32,
    queue: VecDeque<(MsgId, u64)>,
    next_send: Time,
    expect: VecDeque<(MsgId, u64)>,
    received: u64,
    events: VecDeque<AppEvent>,
}

impl Engine for Paced {
    fn send_message(&mut self, now: Time, msg: MsgId, len: u64) {
        self.queue.push_back((msg, len));
        self.next_send = self.next_send.max(now);
    }
    fn expect_message(&mut self, msg: MsgId, len: u64) {
        self.expect.push_back((msg, len));
    }
    fn handle_packet(&mut self, _now: Time, pkt: &Packet, _payload: &[u8]) {
        self.received += pkt.payload_len() as u64;
        while let Some(&(m, len)) = self.expect.front() {
            if self.received < len {
                break;
            }
            self.received -= len;
            self.expect.pop_front();
            self.events.push_back(AppEvent::MessageReceived { msg: m });
        }
    }
    fn handle_timeout(&mut self, _now: Time) {}
    fn poll_transmit(&mut self, now: Time, _payload: &mut Vec<u8>) -> Option<Packet> {
        if now < self.next_send {
            return None;
        }
        let (msg, left) = self.queue.front_mut()?;
        let n = (*left).min(self.pkt_payload as u64) as u32;
        *left -= n as u64;
        let (msg, done) = (*msg, *left == 0);
        if done {
            self.queue.pop_front();
            let stats = MessageStats {
                sent_bytes: 0,
                ..Default::default()
            };
            self.events.push_back(AppEvent::MessageAcked { msg, stats });
        }
        self.next_send = now + self.gap;
        Some(Packet {
            tuple: self.tuple,
            size_bytes: n + 40,
            route: self.route,
            header: Header::Datagram { payload_len: n },
            ..Packet::default()
        })
    }
    fn poll_timeout(&self) -> Option<Time> {
        (!self.queue.is_empty()).then_some(self.next_send)
    }
    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }
    fn message_stats(&self, _msg: MsgId) -> Option<MessageStats> {
        None
    }
}

/// Factory: `gap` between packets; `path` = Some(label base) gives each connection its own explicit
/// path label (base + connection source port), None uses ECMP.
pub struct PacedFactory {
    pub gap: Dur,
    pub path: bool,
}

impl EngineFactory for PacedFactory {
    fn connect(&self, s: &ConnSetup, _a: Rng, _b: Rng) -> (Box<dyn Engine>, Box<dyn Engine>) {
        let route = if self.path {
            Route::Path(s.tuple.src_port as u32)
        } else {
            Route::Ecmp
        };
        let mk = |tuple| Paced {
            tuple,
            gap: self.gap,
            route,
            pkt_payload: 1460,
            queue: VecDeque::new(),
            next_send: s.now,
            expect: VecDeque::new(),
            received: 0,
            events: VecDeque::new(),
        };
        (Box::new(mk(s.tuple)), Box::new(mk(s.tuple.reversed())))
    }
    fn framing(&self) -> (u64, u64) {
        (1460, 40)
    }
}

pub fn paced(gap_ns: u64, path: bool) -> Transport {
    Transport::new(PacedFactory {
        gap: Dur(gap_ns),
        path,
    })
}
