//! The partition count of issue #41 (`crate::partition`): which node owns each event. Only the
//! counted event loop ([`Sim::run_counted`]) calls it, once per event before the event is
//! processed, and it reads nothing it could change.

use super::Sim;
use crate::event::{Event, NodeId};
use crate::partition::Counter;
use tailcut_proto::Time;

impl<const TRACED: bool> Sim<'_, TRACED> {
    /// The node that processes `ev` (`None`: a fault, which every partition applies), and for a
    /// packet's arrival the node that sent it.
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
            // message (the other end's engine is made at the same time, a parallel engine would make
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

    /// Counts one event (before it is processed).
    pub(super) fn count_event(&self, counter: &mut Counter, t: Time, ev: Event) {
        let (owner, from) = self.owner(ev);
        counter.count(t, owner, from);
    }
}
