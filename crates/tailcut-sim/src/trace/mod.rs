//! The record of a traced run (`tailcut trace`): every event of the chosen flows' packets, engines and
//! timers, kept in memory up to a cap. The simulator calls in only when a run is traced (`Sim::trace`
//! is `None` otherwise), so this module costs an untraced run nothing but the test of that option.

mod table;

pub use table::columns;

use crate::event::{EngineId, PortId};
use crate::hash::FxMap;
use tailcut_proto::{EngineProbe, Packet, Time};

/// The default bound on recorded events: about 200 bytes each, so ~100 MB.
pub const DEFAULT_MAX_EVENTS: usize = 500_000;

/// What happened to a packet, or at an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The packet entered its host's NIC queue: the capture point of the pcap (after the host shim,
    /// so a shim's own packets are seen and an egress packet it dropped is not).
    Send,
    /// Admitted to a port's queue (or straight onto its idle line).
    Queued,
    /// Admitted and ECN-marked (CE) by this port.
    Marked,
    /// Admitted with its payload cut (CP's trimming switches).
    Trimmed,
    /// Lost at a port, a switch or a shim; [`Cause`] says why.
    Dropped,
    /// Started serialising onto the port's link.
    Transmit,
    /// Handed to the destination engine.
    Receive,
    /// The engine's timer fired and was none of the below (delayed ACK, pacing, handshake, an
    /// extension's own timer).
    Timer,
    /// A retransmission timeout fired.
    Rto,
    /// A tail loss probe timer fired (RACK-TLP's or the `tlp` scheme's); the probe is the `Send`
    /// that follows at the same instant.
    Tlp,
    /// RACK's reordering timer fired (RFC 8985 Sec. 6.3): loss detection re-ran, and what it found
    /// lost is retransmitted at the same instant.
    Rack,
    /// The engine's next deadline changed (`timer_ns` holds it; `None`: no timer armed).
    TimerSet,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Send => "send",
            Kind::Queued => "queued",
            Kind::Marked => "marked",
            Kind::Trimmed => "trimmed",
            Kind::Dropped => "dropped",
            Kind::Transmit => "transmit",
            Kind::Receive => "receive",
            Kind::Timer => "timer",
            Kind::Rto => "rto",
            Kind::Tlp => "tlp",
            Kind::Rack => "rack",
            Kind::TimerSet => "timer_set",
        }
    }
}

/// Why a packet was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The queue's buffer was full.
    Overflow,
    /// The queue's active management (RED, random drop) chose it.
    Aqm,
    /// Pushed out of a full priority queue by a more urgent arrival (pFabric).
    Evicted,
    /// Lost on the link by its random-loss model.
    LinkLoss,
    /// The link was down.
    LinkDown,
    /// The switch had no route to the destination.
    NoRoute,
    /// The host shim dropped it.
    Shim,
}

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Overflow => "buffer_full",
            Cause::Aqm => "aqm",
            Cause::Evicted => "evicted",
            Cause::LinkLoss => "random_loss",
            Cause::LinkDown => "link_down",
            Cause::NoRoute => "no_route",
            Cause::Shim => "shim",
        }
    }
}

/// One event of a traced flow.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub time: Time,
    pub kind: Kind,
    /// The traced flow whose connection this belongs to.
    pub flow: u64,
    /// Whether the packet goes from the flow's data sender to its receiver (for timer events: the
    /// engine is the data sender's).
    pub forward: bool,
    /// The packet's headers (engine-only events carry none).
    pub packet: Option<Packet>,
    /// The port, for port events.
    pub port: Option<PortId>,
    pub cause: Option<Cause>,
    /// For `Send` by an engine that reports its retransmissions: whether this packet was one.
    pub retransmission: Option<bool>,
    /// The engine's state after the event, where it exposes one (sends, receives, timers).
    pub probe: Option<EngineProbe>,
    /// For `TimerSet`: the new deadline.
    pub timer: Option<Time>,
}

/// An engine of a traced flow.
#[derive(Clone, Copy)]
struct Traced {
    flow: u64,
    /// Whether it is the flow's data sender.
    sender: bool,
    /// Its probe at the last event, to tell what an output or a timer did.
    last: Option<EngineProbe>,
    /// The deadline last reported by `TimerSet`.
    deadline: Option<Time>,
}

/// The chosen flows, their engines once connected, and the events so far.
pub struct Tracer {
    flows: Vec<u64>,
    engines: FxMap<EngineId, Traced>,
    events: Vec<Event>,
    max_events: usize,
    /// When the cap was reached (events after it are not recorded).
    full_at: Option<Time>,
}

/// What a traced run hands back.
pub struct Trace {
    pub events: Vec<Event>,
    pub max_events: usize,
    /// The time the cap was reached, if it was: the record stops there.
    pub truncated_at: Option<Time>,
}

impl Tracer {
    pub fn new(flows: &[u64], max_events: usize) -> Tracer {
        let mut flows = flows.to_vec();
        flows.sort_unstable();
        flows.dedup();
        Tracer {
            flows,
            engines: FxMap::default(),
            events: Vec::new(),
            max_events,
            full_at: None,
        }
    }

    pub fn wants_flow(&self, flow: u64) -> bool {
        self.flows.binary_search(&flow).is_ok()
    }

    /// Follows the engines of a connection carrying `flow` (`a` sends its data). A persistent
    /// connection shared by several flows is followed whole, under the first traced flow it carried.
    pub fn follow(&mut self, flow: u64, a: EngineId, b: EngineId, probe: [Option<EngineProbe>; 2]) {
        for (e, sender, p) in [(a, true, probe[0]), (b, false, probe[1])] {
            self.engines.entry(e).or_insert(Traced {
                flow,
                sender,
                last: p,
                deadline: None,
            });
        }
    }

    /// The flow and direction of an engine's packets, if it is followed.
    pub fn engine(&self, e: EngineId) -> Option<(u64, bool)> {
        self.engines.get(&e).map(|t| (t.flow, t.sender))
    }

    pub fn record(&mut self, ev: Event) {
        if self.events.len() >= self.max_events {
            self.full_at.get_or_insert(ev.time);
            return;
        }
        self.events.push(ev);
    }

    /// An engine's output: records its `Send` with whether the engine counted it as a retransmission.
    pub fn sent(&mut self, time: Time, e: EngineId, packet: &Packet, probe: Option<EngineProbe>) {
        let Some(t) = self.engines.get_mut(&e) else {
            return;
        };
        let retransmission = match (t.last, probe) {
            (Some(a), Some(b)) => Some(b.retransmits > a.retransmits),
            _ => None,
        };
        t.last = probe.or(t.last);
        let (flow, forward) = (t.flow, t.sender);
        self.record(Event {
            retransmission,
            probe,
            ..Event::at(time, Kind::Send, flow, forward).with_packet(*packet)
        });
    }

    /// An engine event (receive, timer): the kind a timer turned out to be is read from the probe's
    /// counters.
    pub fn engine_event(
        &mut self,
        time: Time,
        e: EngineId,
        kind: Kind,
        packet: Option<&Packet>,
        probe: Option<EngineProbe>,
    ) {
        let Some(t) = self.engines.get_mut(&e) else {
            return;
        };
        let kind = match (kind, t.last, probe) {
            (Kind::Timer, Some(a), Some(b)) if b.timeouts > a.timeouts => Kind::Rto,
            (Kind::Timer, Some(a), Some(b)) if b.probe_timeouts > a.probe_timeouts => Kind::Tlp,
            (Kind::Timer, Some(a), Some(b)) if b.reorder_timeouts > a.reorder_timeouts => Kind::Rack,
            _ => kind,
        };
        t.last = probe.or(t.last);
        // A received packet goes the other way from the engine's own sends.
        let forward = t.sender != packet.is_some();
        let flow = t.flow;
        self.record(Event {
            packet: packet.copied(),
            probe,
            ..Event::at(time, kind, flow, forward)
        });
    }

    /// The engine's next deadline after it was drained; recorded when it changed.
    pub fn deadline(&mut self, time: Time, e: EngineId, deadline: Option<Time>) {
        let Some(t) = self.engines.get_mut(&e) else {
            return;
        };
        if t.deadline == deadline {
            return;
        }
        t.deadline = deadline;
        let (flow, forward) = (t.flow, t.sender);
        self.record(Event {
            timer: deadline,
            ..Event::at(time, Kind::TimerSet, flow, forward)
        });
    }

    pub fn finish(self) -> Trace {
        Trace {
            events: self.events,
            max_events: self.max_events,
            truncated_at: self.full_at,
        }
    }
}

impl Event {
    pub fn at(time: Time, kind: Kind, flow: u64, forward: bool) -> Event {
        Event {
            time,
            kind,
            flow,
            forward,
            packet: None,
            port: None,
            cause: None,
            retransmission: None,
            probe: None,
            timer: None,
        }
    }

    pub fn with_packet(self, packet: Packet) -> Event {
        Event {
            packet: Some(packet),
            ..self
        }
    }
}
