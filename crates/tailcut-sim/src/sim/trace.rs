//! Where a traced run looks: the traced twins of the per-hop entry points (`enqueue`, `tx_done`) and
//! the hooks at the engines' inputs and outputs. The hot paths jump here, out of line, only in a
//! `Sim<_, true>`; in an untraced `Sim` the tests are constants and compile away. Nothing here changes
//! what the simulation does.

use super::Sim;
use crate::arena::PktId;
use crate::event::{EngineId, PortId};
use crate::net::port::{PortCounters, Service};
use crate::trace::{Cause, Event, Kind, Trace, Tracer};
use tailcut_proto::{Ecn, Packet};

impl<const TRACED: bool> Sim<'_, TRACED> {
    /// Records every event of the flows with these ids (`FlowSpec::id`), up to `max_events` events;
    /// call before [`Sim::run`]. Only a `Sim<_, true>` calls the hooks that record them.
    pub(crate) fn start_trace(&mut self, flows: &[u64], max_events: usize) {
        self.trace = Some(Box::new(Tracer::new(flows, max_events)));
    }

    /// The record of a traced run (after [`Sim::run`]).
    pub fn take_trace(&mut self) -> Option<Trace> {
        self.trace.take().map(|t| t.finish())
    }

    /// Follows a connection of flow `f` from its opening (before its first packet).
    pub(super) fn trace_follow(&mut self, f: usize, conn: u32) {
        let Some(tr) = self.trace.as_deref_mut() else {
            return;
        };
        let flow = self.flows[f].id;
        if !tr.wants_flow(flow) {
            return;
        }
        let c = &self.conns[conn as usize];
        let probe = [c.a, c.b].map(|e| self.engines[e as usize].engine.probe());
        tr.follow(flow, c.a, c.b, probe);
    }

    /// The traced flow and direction of a packet: the engine that sent it is known by its source
    /// address and port (shim-made packets carry their connection's tuple).
    fn traced(&self, pkt: &Packet) -> Option<(u64, bool)> {
        let tr = self.trace.as_deref()?;
        let e = self.demux.get(pkt.tuple.src.0, pkt.tuple.src_port)?;
        tr.engine(e)
    }

    fn record(&mut self, ev: Event) {
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.record(ev);
        }
    }

    /// [`Sim::enqueue`] of a traced run: what the port did to the packet, and to any it pushed out.
    #[cold]
    #[inline(never)]
    pub(super) fn enqueue_traced(&mut self, port: PortId, id: PktId) {
        let before = *self.arena.get(id);
        let counters = *self.net.ports[port as usize].counters();
        let s = self.net.ports[port as usize].offer(self.now, id, &mut self.arena);
        let after = *self.net.ports[port as usize].counters();
        if let Some((flow, forward)) = self.traced(&before) {
            let ev = Event::at(self.now, Kind::Queued, flow, forward);
            let ev = if s.dropped.contains(&Some(id)) {
                let cause = if after.dropped_aqm > counters.dropped_aqm {
                    Cause::Aqm
                } else {
                    Cause::Overflow
                };
                Event {
                    kind: Kind::Dropped,
                    cause: Some(cause),
                    ..ev.with_packet(before)
                }
            } else {
                let now = *self.arena.get(id);
                let kind = if now.trimmed && !before.trimmed {
                    Kind::Trimmed
                } else if now.ecn == Ecn::Ce && before.ecn != Ecn::Ce {
                    Kind::Marked
                } else {
                    Kind::Queued
                };
                Event {
                    kind,
                    ..ev.with_packet(now)
                }
            };
            self.record(Event {
                port: Some(port),
                ..ev
            });
        }
        for victim in s.dropped.into_iter().flatten().filter(|&v| v != id) {
            let pkt = *self.arena.get(victim);
            if let Some((flow, forward)) = self.traced(&pkt) {
                self.record(Event {
                    port: Some(port),
                    cause: Some(Cause::Evicted),
                    ..Event::at(self.now, Kind::Dropped, flow, forward).with_packet(pkt)
                });
            }
        }
        self.trace_departure(port, &s, &counters, &after);
        self.serve(port, s, true);
    }

    /// [`Sim::tx_done`] of a traced run.
    #[cold]
    #[inline(never)]
    pub(super) fn tx_done_traced(&mut self, port: PortId) {
        let counters = *self.net.ports[port as usize].counters();
        let s = self.net.ports[port as usize].wake(self.now, &self.arena);
        let after = *self.net.ports[port as usize].counters();
        self.trace_departure(port, &s, &counters, &after);
        self.serve(port, s, true);
    }

    /// The packet a port started serialising, and its loss on the link if the link lost it.
    fn trace_departure(&mut self, port: PortId, s: &Service, before: &PortCounters, after: &PortCounters) {
        let Some(d) = s.sent else { return };
        let pkt = *self.arena.get(d.id);
        let Some((flow, forward)) = self.traced(&pkt) else {
            return;
        };
        let ev = Event {
            port: Some(port),
            ..Event::at(self.now, Kind::Transmit, flow, forward).with_packet(pkt)
        };
        self.record(ev);
        if d.arrives.is_none() {
            let cause = if after.dropped_link_down > before.dropped_link_down {
                Cause::LinkDown
            } else {
                Cause::LinkLoss
            };
            self.record(Event {
                kind: Kind::Dropped,
                cause: Some(cause),
                ..ev
            });
        }
    }

    /// A packet lost away from a port's queue (no route at a switch, a shim's verdict).
    #[cold]
    pub(super) fn trace_lost(&mut self, pkt: &Packet, cause: Cause) {
        if let Some((flow, forward)) = self.traced(pkt) {
            self.record(Event {
                cause: Some(cause),
                ..Event::at(self.now, Kind::Dropped, flow, forward).with_packet(*pkt)
            });
        }
    }

    /// A packet enters its host's NIC queue. `owner` is the engine that made it, or a shim's
    /// `NO_OWNER` (then it is recorded without a retransmission flag).
    #[cold]
    pub(super) fn trace_send(&mut self, pkt: &Packet, owner: EngineId) {
        let probe = self.engines.get(owner as usize).and_then(|s| s.engine.probe());
        if let Some(tr) = self.trace.as_deref_mut() {
            if tr.engine(owner).is_some() {
                tr.sent(self.now, owner, pkt, probe);
                return;
            }
        }
        if let Some((flow, forward)) = self.traced(pkt) {
            self.record(Event::at(self.now, Kind::Send, flow, forward).with_packet(*pkt));
        }
    }

    /// An engine took an input (`Receive` with its packet, or `Timer`).
    #[cold]
    pub(super) fn trace_engine(&mut self, e: EngineId, kind: Kind, pkt: Option<&Packet>) {
        let probe = self.engines[e as usize].engine.probe();
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.engine_event(self.now, e, kind, pkt, probe);
        }
    }

    /// An engine was drained: its deadline may have moved.
    #[cold]
    pub(super) fn trace_deadline(&mut self, e: EngineId) {
        let deadline = self.engines[e as usize].engine.poll_timeout();
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.deadline(self.now, e, deadline);
        }
    }
}
