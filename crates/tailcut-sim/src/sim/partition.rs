//! The per-event hook of issue #41's partition count (`tailcut-partition`): which node owns each
//! event. Only the counted event loop ([`Sim::run_counted`]) calls it, once per event before the
//! event is processed, and it reads nothing it could change. Everything here is generic, so a
//! binary that never counts (the benchmark, the Python extension) compiles none of it.

use super::Sim;
use crate::event::{Event, NodeId};
use tailcut_proto::Time;

/// What the counted event loop tells about every event.
pub trait EventCount {
    /// An event at `t`, processed at node `owner` (`None`: a fault, which changes the whole network);
    /// for a packet's arrival at `owner`, `from` is the node at the link's other end.
    fn event(&mut self, t: Time, owner: Option<NodeId>, from: Option<NodeId>);
}

/// The ordinary loop's counter: it never hears of an event.
pub(crate) struct NoCount;

impl EventCount for NoCount {
    fn event(&mut self, _: Time, _: Option<NodeId>, _: Option<NodeId>) {}
}

impl<const TRACED: bool> Sim<'_, TRACED> {
    /// The node that processes `ev` (`None`: a fault), and for a packet's arrival the node that sent
    /// it.
    fn owner(&self, ev: Event) -> (Option<NodeId>, Option<NodeId>) {
        let host_node = |h: u32| Some(self.net.hosts[h as usize]);
        let engine_node = |e: u32| host_node(self.engines[e as usize].host);
        match ev {
            Event::TxDone(p) => (Some(self.net.ports[p as usize].node), None),
            Event::Arrive(id) => {
                let link = &self.net.ports[self.arena.link(id) as usize];
                (Some(link.peer), Some(link.node))
            }
            Event::EngineTimer(e) | Event::HostQueueWake(e) => (engine_node(e), None),
            Event::ShimTimer(h) => (host_node(h), None),
            // The host whose application acts first: the data receiver's request, or the sender's
            // message (the other end's engine is made at the same time; a parallel engine would make
            // it in its own partition).
            Event::FlowStart(f) => {
                let spec = &self.flows[f as usize];
                (
                    host_node(if spec.request_bytes > 0 {
                        spec.dst
                    } else {
                        spec.src
                    }),
                    None,
                )
            }
            Event::AppWake(i) => (engine_node(self.app_delay.wake_engine(i)), None),
            Event::Fault(_) => (None, None),
        }
    }

    /// Tells `counter` of one event (before it is processed).
    pub(super) fn count_event<C: EventCount>(&self, counter: &mut C, t: Time, ev: Event) {
        let (owner, from) = self.owner(ev);
        counter.event(t, owner, from);
    }
}
