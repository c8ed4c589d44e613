//! One two-endpoint test harness for any [`Engine`]: engines 0 and 1 joined by a scripted link.
//!
//! Each packet an engine sends passes the fault scripts, which decide its fate (deliver, drop, delay,
//! duplicate, reorder) and may rewrite it (e.g. mark CE); it then takes the one-way delay, after its
//! serialisation when the link has a rate. The harness drains the engines in the contract's order after
//! every input, lets engine 1 answer requests (`responses`), logs every packet and event, fails a test
//! that would run forever at its step limit, and asserts that nothing more is sent
//! ([`Harness::assert_silent_until`]). With [`Harness::carry`] set, messages travel with real bytes
//! ([`pattern`]) and every received message's bytes are checked.
//!
//! What only one engine family knows about its packets comes in through a [`Probe`]: what the fault
//! scripts see of a packet beyond its header (TCP's stream offset and copy count, MPTCP's sub-flow and
//! data sequence number), the one-way delay of the packet's path (MPTCP's sub-flows), and checks
//! around each delivery (TCP's congestion-window log). A host [`Shim`] may sit in front of engine 0.
//! The TCP and MPTCP tests build their harnesses on this one (`tcp/tests/harness.rs`,
//! `mptcp/tests.rs`); with no probe ([`NoProbe`]) it serves any engine as it is.

use crate::engine::{AppEvent, Direction, Engine, MsgId, Outgoing, Shim, Verdict};
use crate::packet::{Ecn, Packet};
use crate::time::{serialization_time, Dur, Time};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// What the link does with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Deliver,
    Drop,
    /// Arrives this much later than the one-way delay; later packets may overtake it.
    Delay(Dur),
    /// Arrives twice, the copy right behind the original.
    Duplicate,
    /// Held back until the next packet of its direction is on the link, then arrives right behind it
    /// (or when the link would otherwise go idle).
    Reorder,
    /// Arrives CE-marked if it is ECN-capable (an AQM's mark), else unchanged.
    Ce,
    /// A data packet's payload is cut as a CP switch does: its header (66 bytes) arrives with
    /// `trimmed` set. A packet without payload arrives unchanged.
    Cut,
}

/// What an engine family adds to the harness; see the module doc. Every method but [`Probe::on_link`]
/// does nothing by default.
pub trait Probe<E: Engine> {
    /// What the harness keeps about a packet entering the link, beside its header: the scripts see it
    /// ([`Wire::info`]) and the log keeps it ([`Sent::info`]).
    type Info: Clone + Debug + PartialEq;
    /// A packet engine `from` puts on the link (past the shim), before the fault scripts see it.
    fn on_link(&mut self, from: usize, pkt: &Packet) -> Self::Info;
    /// The one-way delay of the packet's path; `one_way` is the harness's.
    fn one_way(&self, _info: &Self::Info, one_way: Dur) -> Dur {
        one_way
    }
    /// Just before engine `to` handles `pkt` (past the shim).
    fn before_delivery(&mut self, _eps: &[E; 2], _now: Time, _to: usize, _pkt: &Packet) {}
    /// Just after engine `to` handled `pkt`, before the harness drains it.
    fn after_delivery(&mut self, _eps: &[E; 2], _now: Time, _to: usize, _pkt: &Packet) {}
}

/// No engine-specific knowledge: packets carry no [`Probe::Info`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProbe;

impl<E: Engine> Probe<E> for NoProbe {
    type Info = ();
    fn on_link(&mut self, _: usize, _: &Packet) {}
}

/// A packet entering the link, as a fault script sees it; the script may rewrite `pkt`.
pub struct Wire<'a, I = ()> {
    pub from: usize,
    /// Index among the packets its direction has carried, from 0.
    pub index: u64,
    pub pkt: &'a mut Packet,
    pub payload: &'a [u8],
    /// What the harness's [`Probe`] says about the packet.
    pub info: &'a I,
}

type Script<I> = Box<dyn FnMut(&mut Wire<'_, I>) -> Fate>;

/// One packet an engine put on the link, with its fate (as sent, before any rewrite).
#[derive(Clone, Debug, PartialEq)]
pub struct Sent<I = ()> {
    pub time: Time,
    pub from: usize,
    pub index: u64,
    pub pkt: Packet,
    pub payload: Vec<u8>,
    pub fate: Fate,
    /// What the harness's [`Probe`] said about the packet.
    pub info: I,
}

struct Flight {
    to: usize,
    pkt: Packet,
    payload: Vec<u8>,
}

pub struct Harness<E: Engine, P: Probe<E> = NoProbe> {
    pub eps: [E; 2],
    pub probe: P,
    /// A host shim in front of engine 0 (between it and the link), as the simulator installs one.
    pub shim: Option<Box<dyn Shim>>,
    pub now: Time,
    pub one_way: Dur,
    /// Serialisation rate of each direction in bits/s; 0 puts packets on the link at once.
    pub rate_bps: u64,
    /// Calls `handle_timeout` on both engines after every delivery, due or not: engines must ignore
    /// early calls.
    pub early_timer_calls: bool,
    pub steps: u64,
    pub step_limit: u64,
    pub sent: Vec<Sent<P::Info>>,
    pub events: Vec<(Time, usize, AppEvent)>,
    /// Requests engine 1 answers as soon as it has them: request -> (response, length).
    pub responses: BTreeMap<MsgId, (MsgId, u64)>,
    /// Send every message with its [`pattern`] bytes and check them on arrival.
    pub carry: bool,
    /// With `carry`: messages received with the wrong bytes (or none), by receiving side.
    pub corrupt: Vec<(usize, MsgId)>,
    /// With `carry`: bytes of messages received intact.
    pub bytes_checked: u64,
    lengths: BTreeMap<MsgId, u64>,
    faults: Vec<Script<P::Info>>,
    wire: BTreeMap<(Time, u64), Flight>,
    wire_seq: u64,
    carried: [u64; 2],
    busy_until: [Time; 2],
    held: [Option<(Time, Flight)>; 2],
    started: bool,
}

/// The bytes of message `msg` when the harness carries bytes ([`crate::pattern`]).
pub fn pattern(msg: MsgId, len: u64) -> Vec<u8> {
    let mut v = Vec::new();
    crate::pattern::message_pattern(msg, len, &mut v);
    v
}

/// Drops the `n`th packet (from 0) of the direction the script is installed on.
pub fn drop_nth<I>(n: u64) -> impl FnMut(&mut Wire<'_, I>) -> Fate {
    move |w| if w.index == n { Fate::Drop } else { Fate::Deliver }
}

/// Drops every packet `pred` selects.
pub fn drop_where<I>(mut pred: impl FnMut(&Wire<'_, I>) -> bool) -> impl FnMut(&mut Wire<'_, I>) -> Fate {
    move |w| if pred(w) { Fate::Drop } else { Fate::Deliver }
}

/// Gives the `n`th packet (from 0) `fate`.
pub fn nth<I>(n: u64, fate: Fate) -> impl FnMut(&mut Wire<'_, I>) -> Fate {
    move |w| if w.index == n { fate } else { Fate::Deliver }
}

impl<E: Engine> Harness<E> {
    /// Engines 0 and 1 on a 10 us link without a rate, faults or responses; 1 000 000 steps at most.
    pub fn new(a: E, b: E) -> Harness<E> {
        Harness::with_probe(a, b, NoProbe)
    }
}

impl<E: Engine, P: Probe<E>> Harness<E, P> {
    /// [`Harness::new`]'s link, with `probe`.
    pub fn with_probe(a: E, b: E, probe: P) -> Harness<E, P> {
        Harness {
            eps: [a, b],
            probe,
            shim: None,
            now: Time::ZERO,
            one_way: Dur::from_micros(10),
            rate_bps: 0,
            early_timer_calls: false,
            steps: 0,
            step_limit: 1_000_000,
            sent: Vec::new(),
            events: Vec::new(),
            responses: BTreeMap::new(),
            carry: false,
            corrupt: Vec::new(),
            bytes_checked: 0,
            lengths: BTreeMap::new(),
            faults: Vec::new(),
            wire: BTreeMap::new(),
            wire_seq: 0,
            carried: [0; 2],
            busy_until: [Time::ZERO; 2],
            held: [None, None],
            started: false,
        }
    }

    /// Adds a fault script that sees every packet of both directions. Scripts run in the order added,
    /// all of them on every packet; the first fate other than `Deliver` applies.
    pub fn fault(&mut self, script: impl FnMut(&mut Wire<'_, P::Info>) -> Fate + 'static) {
        self.faults.push(Box::new(script));
    }

    /// Replaces every fault script with `script`.
    pub fn set_fault(&mut self, script: impl FnMut(&mut Wire<'_, P::Info>) -> Fate + 'static) {
        self.faults.clear();
        self.fault(script);
    }

    /// Adds a fault script for the packets engine `from` sends.
    pub fn fault_from(
        &mut self,
        from: usize,
        mut script: impl FnMut(&mut Wire<'_, P::Info>) -> Fate + 'static,
    ) {
        self.fault(move |w| if w.from == from { script(w) } else { Fate::Deliver });
    }

    /// Engine `from` sends message `msg` of `len` bytes; the other one expects it.
    pub fn send(&mut self, from: usize, msg: MsgId, len: u64) {
        self.start();
        self.eps[1 - from].expect_message(msg, len);
        self.give(from, Outgoing::Message, msg, len);
        // Expecting is an input too: the receiver may have something to report.
        self.drain(1 - from);
        self.drain(from);
    }

    /// Engine `from` sends `msg` as `how`, with its bytes when the harness carries them.
    fn give(&mut self, from: usize, how: Outgoing, msg: MsgId, len: u64) {
        if self.carry {
            self.lengths.insert(msg, len);
            self.eps[from].send_bytes(self.now, how, msg, &pattern(msg, len));
            return;
        }
        match how {
            Outgoing::Message => self.eps[from].send_message(self.now, msg, len),
            Outgoing::Request => self.eps[from].send_request(self.now, msg, len),
            Outgoing::Response { request } => self.eps[from].send_response(self.now, request, msg, len),
        }
    }

    /// With `carry`, checks the bytes of message `msg` that engine `side` received.
    fn check_bytes(&mut self, side: usize, msg: MsgId) {
        if !self.carry {
            return;
        }
        let want = self.lengths.get(&msg).map(|&len| pattern(msg, len));
        match (self.eps[side].take_bytes(msg), want) {
            (Some(got), Some(want)) if got == want => self.bytes_checked += got.len() as u64,
            _ => self.corrupt.push((side, msg)),
        }
    }

    /// Engine 0 sends request `msg`; engine 1 answers it with `response` of `response_len` bytes.
    pub fn rpc(&mut self, msg: MsgId, len: u64, response: MsgId, response_len: u64) {
        self.responses.insert(msg, (response, response_len));
        self.start();
        self.eps[1].expect_request(msg, len);
        self.give(0, Outgoing::Request, msg, len);
        self.drain(0);
    }

    /// Drains the engines' output from before the harness existed (e.g. a handshake's first packet),
    /// once the test had its chance to install faults.
    fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.drain(0);
            self.drain(1);
        }
    }

    /// Takes engine `side`'s packets onto the link and its events into the log, answering requests.
    pub fn drain(&mut self, side: usize) {
        let mut payload = Vec::new();
        while let Some(pkt) = self.eps[side].poll_transmit(self.now, &mut payload) {
            self.put_on_link(side, pkt, std::mem::take(&mut payload));
        }
        let mut answers = Vec::new();
        while let Some(ev) = self.eps[side].poll_event() {
            self.events.push((self.now, side, ev));
            if let AppEvent::MessageReceived { msg } = ev {
                self.check_bytes(side, msg);
                if side == 1 {
                    answers.extend(self.responses.get(&msg).map(|&(resp, len)| (msg, resp, len)));
                }
            }
        }
        for (request, msg, len) in answers {
            self.eps[1 - side].expect_response(request, msg, len);
            self.give(side, Outgoing::Response { request }, msg, len);
            self.drain(side);
        }
    }

    fn put_on_link(&mut self, from: usize, mut pkt: Packet, payload: Vec<u8>) {
        if from == 0 {
            if let Some(shim) = self.shim.as_mut() {
                if shim.on_egress(self.now, &mut pkt) == Verdict::Drop {
                    return;
                }
            }
        }
        self.put_on_link_past_shim(from, pkt, payload);
    }

    fn put_on_link_past_shim(&mut self, from: usize, pkt: Packet, payload: Vec<u8>) {
        let index = self.carried[from];
        self.carried[from] += 1;
        let info = self.probe.on_link(from, &pkt);
        let mut rewritten = pkt;
        let mut fate = Fate::Deliver;
        for script in &mut self.faults {
            let f = script(&mut Wire {
                from,
                index,
                pkt: &mut rewritten,
                payload: &payload,
                info: &info,
            });
            if fate == Fate::Deliver {
                fate = f;
            }
        }
        let mut depart = self.now.max(self.busy_until[from]);
        if self.rate_bps > 0 {
            depart += serialization_time(u64::from(pkt.size_bytes), self.rate_bps);
        }
        self.busy_until[from] = depart;
        let arrive = depart + self.probe.one_way(&info, self.one_way);
        self.sent.push(Sent {
            time: self.now,
            from,
            index,
            pkt,
            payload: payload.clone(),
            fate,
            info,
        });
        match fate {
            Fate::Ce if rewritten.ecn != Ecn::NotEct => rewritten.ecn = Ecn::Ce,
            Fate::Cut if rewritten.payload_len() > 0 => {
                rewritten.trimmed = true;
                rewritten.size_bytes = 66;
            }
            _ => {}
        }
        // A trimming element cuts the bytes with the payload.
        let flight = Flight {
            to: 1 - from,
            payload: if rewritten.trimmed { Vec::new() } else { payload },
            pkt: rewritten,
        };
        match fate {
            Fate::Drop => {}
            Fate::Deliver | Fate::Ce | Fate::Cut => self.schedule(arrive, flight),
            Fate::Delay(d) => self.schedule(arrive + d, flight),
            Fate::Duplicate => {
                let copy = Flight {
                    to: flight.to,
                    pkt: flight.pkt,
                    payload: flight.payload.clone(),
                };
                self.schedule(arrive, flight);
                self.schedule(arrive, copy);
            }
            Fate::Reorder => {
                self.release_held(from, arrive);
                self.held[from] = Some((arrive, flight));
                return;
            }
        }
        self.release_held(from, arrive);
    }

    /// Puts a packet held for reordering on the link, behind one arriving at `behind`.
    fn release_held(&mut self, from: usize, behind: Time) {
        if let Some((arrive, flight)) = self.held[from].take() {
            self.schedule(arrive.max(behind), flight);
        }
    }

    fn schedule(&mut self, at: Time, flight: Flight) {
        self.wire.insert((at, self.wire_seq), flight);
        self.wire_seq += 1;
    }

    /// The next instant something happens; held packets go when nothing else would.
    fn next_time(&mut self) -> Option<Time> {
        let next = |h: &Self| {
            let w = h.wire.keys().next().map(|k| k.0);
            let shim = h.shim.as_ref().and_then(|s| s.poll_timeout());
            [w, h.eps[0].poll_timeout(), h.eps[1].poll_timeout(), shim]
                .into_iter()
                .flatten()
                .min()
        };
        if next(self).is_none() {
            for from in 0..2 {
                self.release_held(from, self.now);
            }
        }
        next(self)
    }

    /// Advances to the next event and handles it: one arrival, or the timers due. False when nothing
    /// is pending. Panics past the step limit: an engine that never goes quiet is a failure, not a hang.
    pub fn step(&mut self) -> bool {
        self.start();
        self.steps += 1;
        assert!(
            self.steps <= self.step_limit,
            "step limit {} reached at {}: the engines never go quiet",
            self.step_limit,
            self.now
        );
        let Some(t) = self.next_time() else {
            return false;
        };
        self.now = self.now.max(t);
        if let Some(entry) = self.wire.first_entry().filter(|e| e.key().0 <= self.now) {
            let f = entry.remove();
            self.deliver(f.to, f.pkt, &f.payload);
            if self.early_timer_calls {
                for side in 0..2 {
                    self.eps[side].handle_timeout(self.now);
                    self.drain(side);
                }
            }
            return true;
        }
        if let Some(mut shim) = self.shim.take() {
            if shim.poll_timeout().is_some_and(|d| d <= self.now) {
                shim.handle_timeout(self.now);
            }
            let mut injected = Vec::new();
            while let Some(x) = shim.poll_inject(self.now) {
                injected.push(x);
            }
            self.shim = Some(shim);
            for (dir, pkt) in injected {
                match dir {
                    Direction::ToHost => self.deliver_past_shim(0, pkt, &[]),
                    Direction::ToNetwork => self.put_on_link_past_shim(0, pkt, Vec::new()),
                }
            }
        }
        for side in 0..2 {
            let due = self.eps[side].poll_timeout().is_some_and(|d| d <= self.now);
            if due || self.early_timer_calls {
                self.eps[side].handle_timeout(self.now);
                self.drain(side);
            }
        }
        true
    }

    /// Hands a packet off the link to engine `to`, through the shim in front of engine 0.
    fn deliver(&mut self, to: usize, mut pkt: Packet, payload: &[u8]) {
        if to == 0 {
            if let Some(shim) = self.shim.as_mut() {
                if shim.on_ingress(self.now, &mut pkt) == Verdict::Drop {
                    return;
                }
            }
        }
        self.deliver_past_shim(to, pkt, payload);
    }

    fn deliver_past_shim(&mut self, to: usize, pkt: Packet, payload: &[u8]) {
        self.probe.before_delivery(&self.eps, self.now, to, &pkt);
        self.eps[to].handle_packet(self.now, &pkt, payload);
        self.probe.after_delivery(&self.eps, self.now, to, &pkt);
        self.drain(to);
    }

    /// Runs until nothing is pending.
    pub fn run(&mut self) {
        while self.step() {}
    }

    /// Handles everything due at or before `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: Time) {
        self.start();
        while self.next_time().is_some_and(|n| n <= t) {
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// Runs until `t` and fails if either engine sends anything meanwhile.
    pub fn assert_silent_until(&mut self, t: Time) {
        let before = self.sent.len();
        self.run_until(t);
        let more: Vec<(Time, usize)> = self.sent[before..].iter().map(|s| (s.time, s.from)).collect();
        assert!(more.is_empty(), "sent after {}: (time, from) {more:?}", self.now);
    }

    /// Events of engine `side`, in order.
    pub fn events_of(&self, side: usize) -> Vec<AppEvent> {
        self.events.iter().filter(|e| e.1 == side).map(|e| e.2).collect()
    }

    /// When engine `side` received message `msg`, if it did.
    pub fn received(&self, side: usize, msg: MsgId) -> Option<Time> {
        self.events
            .iter()
            .find_map(|&(t, s, ev)| (s == side && ev == AppEvent::MessageReceived { msg }).then_some(t))
    }

    /// Packets engine `from` put on the link.
    pub fn sent_by(&self, from: usize) -> impl Iterator<Item = &Sent<P::Info>> + '_ {
        self.sent.iter().filter(move |s| s.from == from)
    }
}

#[cfg(test)]
mod tests;
