//! Driving the ports: a packet offered to an egress port, what the port asks of its driver (free
//! what it dropped, put what it sent on its link, wake it when its line frees), arrivals at the far
//! end of a link and forwarding at switches.

use super::Sim;
use crate::arena::PktId;
use crate::event::{Event, NodeId, PortId};
use crate::net::port::Service;
use crate::trace::Cause;

impl<const TRACED: bool> Sim<'_, TRACED> {
    /// A packet leaves its host for the NIC's port.
    pub(super) fn enqueue(&mut self, port: PortId, id: PktId) {
        self.enqueue_inline(port, id, true);
    }

    /// A packet offered to a port. Inlined into switch forwarding, the most frequent caller, which
    /// saves a call's register saves and restores on most hops. `host_nic`: the port may be a host's
    /// NIC (see `serve`).
    #[inline(always)]
    fn enqueue_inline(&mut self, port: PortId, id: PktId, host_nic: bool) {
        if TRACED {
            return self.enqueue_traced(port, id);
        }
        let s = self.net.ports[port as usize].offer(self.now, id, &mut self.arena);
        self.serve(port, s, host_nic);
    }

    /// Carries out what a port asks of its driver: free the packets it dropped, put the one it sent
    /// on its wire, and wake it when its line frees. Only a host's NIC holds packets charged to an
    /// engine's TCP small-queues budget (the charge ends as they leave it), so a switch port
    /// (`host_nic` false) skips that book-keeping: 5 instructions per packet-hop on benchmark (a).
    #[inline(always)]
    pub(super) fn serve(&mut self, port: PortId, s: Service, host_nic: bool) {
        // Drops are rare: one test skips the loop (a flattening iterator costs ~15 instructions a hop).
        if s.dropped[0].is_some() {
            for victim in s.dropped.into_iter().flatten() {
                if host_nic && self.tsq_on {
                    self.leave_host_queue(victim);
                }
                self.arena.remove(victim);
                self.cons.dropped += 1;
            }
        }
        if let Some(d) = s.sent {
            if host_nic && self.tsq_on {
                self.leave_host_queue(d.id);
            }
            self.cons.packet_hops += 1;
            match d.arrives {
                Some(at) => {
                    self.arena.set_link(d.id, port);
                    self.events.push(at, Event::Arrive(d.id));
                }
                None => {
                    self.arena.remove(d.id);
                    self.cons.dropped += 1;
                }
            }
        }
        if let Some(at) = s.wake_at {
            self.events.push(at, Event::TxDone(port));
        }
    }

    pub(super) fn tx_done(&mut self, port: PortId) {
        if TRACED {
            return self.tx_done_traced(port);
        }
        let s = self.net.ports[port as usize].wake(self.now, &self.arena);
        self.serve(port, s, true);
    }

    /// A packet reaches the far end of its link; true if that is a host.
    pub(super) fn arrive(&mut self, id: PktId) -> bool {
        let link = &self.net.ports[self.arena.link(id) as usize];
        let (node, host) = (link.peer, link.peer_host);
        if host != u32::MAX {
            self.cons.delivered += 1;
            if !TRACED && !self.has_shim(host) {
                self.deliver_in_place(id);
                return true;
            }
            self.rx_payload.clear();
            self.rx_payload.extend_from_slice(self.arena.payload(id));
            let pkt = self.arena.remove(id);
            self.host_receive(host, pkt);
            true
        } else {
            self.forward(node, id);
            false
        }
    }

    fn forward(&mut self, node: NodeId, id: PktId) {
        let pkt = self.arena.get_mut(id);
        match self.net.routes.egress(node, &pkt.tuple, &mut pkt.route) {
            Some(egress) => self.enqueue_inline(egress, id, false),
            None => {
                if TRACED {
                    let pkt = *self.arena.get(id);
                    self.trace_lost(&pkt, Cause::NoRoute);
                }
                self.arena.remove(id);
                self.cons.dropped += 1;
                self.cons.dropped_no_route += 1;
            }
        }
    }
}
