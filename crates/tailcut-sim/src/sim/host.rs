//! Hosts: packets up from the NIC through the shim to the engines, packets down from the engines
//! through the shim to the NIC queue (with the TCP-small-queues budget), draining engines and shims
//! after every input, and their timers.

use super::{EngineSlot, Sim};
use crate::arena::{PktId, NO_OWNER};
use crate::event::{EngineId, Event};
use crate::trace::{Cause, Kind};
use tailcut_proto::{Direction, Engine, Packet, Time, Verdict};

impl<const TRACED: bool> Sim<'_, TRACED> {
    pub(super) fn host_receive(&mut self, host: u32, mut pkt: Packet) {
        if self.shim_passes(host, &mut pkt, Direction::ToHost) {
            self.deliver_local(pkt);
        }
    }

    /// Offers a packet to the host's shim (if any) in the given direction; false if the shim drops it.
    fn shim_passes(&mut self, host: u32, pkt: &mut Packet, dir: Direction) -> bool {
        if !self.any_shim {
            return true;
        }
        let Some(shim) = self.shims[host as usize].as_mut() else {
            return true;
        };
        let v = match dir {
            Direction::ToHost => shim.on_ingress(self.now, pkt),
            Direction::ToNetwork => shim.on_egress(self.now, pkt),
        };
        self.drain_shim(host);
        if v == Verdict::Drop {
            self.cons.shim_dropped += 1;
            if TRACED {
                self.trace_lost(pkt, Cause::Shim);
            }
        }
        v == Verdict::Pass
    }

    fn deliver_local(&mut self, pkt: Packet) {
        match self.demux.get(pkt.tuple.dst.0, pkt.tuple.dst_port) {
            Some(e) => {
                let payload = std::mem::take(&mut self.rx_payload);
                self.engines[e as usize]
                    .engine
                    .handle_packet(self.now, &pkt, &payload);
                self.rx_payload = payload;
                if TRACED {
                    self.trace_engine(e, Kind::Receive, Some(&pkt));
                }
                self.drain(e);
            }
            None => self.cons.undeliverable += 1,
        }
    }

    pub(super) fn has_shim(&self, host: u32) -> bool {
        self.any_shim && self.shims[host as usize].is_some()
    }

    /// A packet for a host without a shim goes to its engine straight from the arena: no copy of the
    /// packet or its payload (11 instructions per packet-hop on benchmark (a)). It leaves the arena
    /// before the engine sends anything, as on the general path.
    pub(super) fn deliver_in_place(&mut self, id: PktId) {
        let pkt = self.arena.get(id);
        match self.demux.get(pkt.tuple.dst.0, pkt.tuple.dst_port) {
            Some(e) => {
                self.engines[e as usize]
                    .engine
                    .handle_packet(self.now, pkt, self.arena.payload(id));
                self.arena.remove(id);
                self.drain(e);
            }
            None => {
                self.arena.remove(id);
                self.cons.undeliverable += 1;
            }
        }
    }

    /// By reference: the engine's packet is copied once, into the arena (two more copies by value
    /// cost 6 instructions per packet-hop on benchmark (a)).
    fn host_send(&mut self, host: u32, pkt: &mut Packet, payload: &[u8], owner: EngineId) {
        if self.shim_passes(host, pkt, Direction::ToNetwork) {
            self.nic_send(host, pkt, payload, owner);
        }
    }

    /// Puts a packet into its host's NIC queue; `owner` is the engine whose host-queue budget it
    /// counts against ([`NO_OWNER`] for shim-made packets).
    fn nic_send(&mut self, host: u32, pkt: &Packet, payload: &[u8], owner: EngineId) {
        let (node, nic) = self.net.addrs[pkt.tuple.src.0 as usize];
        debug_assert_eq!(
            self.net.hosts[host as usize], node,
            "engines send from their own host's addresses"
        );
        let id = self.arena.insert(*pkt);
        if !payload.is_empty() {
            self.arena.set_payload(id, payload);
        }
        self.cons.injected += 1;
        if TRACED {
            self.trace_send(pkt, owner);
        }
        if self.tsq_on && owner != NO_OWNER {
            self.arena.set_owner(id, owner);
            self.engines[owner as usize].nic_bytes += u64::from(pkt.size_bytes);
        }
        self.enqueue(nic, id);
    }

    /// A packet leaves its host's NIC queue (sent or dropped): its engine's budget is freed, and an
    /// engine held back by it is woken (Linux's TSQ handler runs on transmit completion).
    #[inline(always)]
    pub(super) fn leave_host_queue(&mut self, id: PktId) {
        let e = self.arena.take_owner(id);
        if e == NO_OWNER {
            return;
        }
        let size = u64::from(self.arena.get(id).size_bytes);
        let slot = &mut self.engines[e as usize];
        slot.nic_bytes -= size;
        if slot.held && slot.nic_bytes <= slot.tsq_limit {
            slot.held = false;
            self.events.push(self.now, Event::HostQueueWake(e));
        }
    }

    fn drain_shim(&mut self, host: u32) {
        loop {
            let Some(shim) = self.shims[host as usize].as_mut() else {
                return;
            };
            let Some((dir, pkt)) = shim.poll_inject(self.now) else {
                break;
            };
            self.cons.shim_injected += 1;
            match dir {
                Direction::ToNetwork => self.nic_send(host, &pkt, &[], NO_OWNER),
                Direction::ToHost => {
                    self.rx_payload.clear();
                    self.deliver_local(pkt)
                }
            }
        }
        self.rearm_shim(host);
    }

    pub(super) fn rearm_shim(&mut self, host: u32) {
        let Some(shim) = self.shims[host as usize].as_ref() else {
            return;
        };
        if let Some(t) = shim.poll_timeout() {
            let t = t.max(self.now);
            if t < self.shim_scheduled[host as usize] {
                self.shim_scheduled[host as usize] = t;
                self.events.push(t, Event::ShimTimer(host));
            }
        }
    }

    pub(super) fn shim_timer(&mut self, host: u32, t: Time) {
        if self.shim_scheduled[host as usize] != t {
            return;
        }
        self.shim_scheduled[host as usize] = Time::MAX;
        if let Some(shim) = self.shims[host as usize].as_mut() {
            if shim.poll_timeout().is_some_and(|d| d <= self.now) {
                shim.handle_timeout(self.now);
            }
        }
        self.drain_shim(host);
    }

    pub(super) fn drain(&mut self, e: EngineId) {
        self.drain_one(e);
        // Most inputs raise no application event and leave no engine to drain after them.
        if !self.app_events.is_empty() || !self.drain_stack.is_empty() {
            self.drain_rest();
        }
    }

    /// The application events raised so far, then the engines they left to drain, each followed by the
    /// events it raises.
    #[inline(never)]
    fn drain_rest(&mut self) {
        loop {
            if !self.app_events.is_empty() {
                let events = std::mem::take(&mut self.app_events);
                for &(src, ev) in &events {
                    self.on_app_event(src, ev);
                }
                self.app_events = events;
                self.app_events.clear();
            }
            let Some(e) = self.drain_stack.pop() else {
                return;
            };
            self.drain_one(e);
        }
    }

    fn drain_one(&mut self, e: EngineId) {
        let host = self.engines[e as usize].host;
        let mut buf = std::mem::take(&mut self.payload_buf);
        loop {
            // TCP small queues: Linux stops handing a socket's segments to the qdisc while more than
            // the limit of its bytes wait there, and resumes when they drain (`leave_host_queue`).
            let slot = &mut self.engines[e as usize];
            if self.tsq_on && slot.nic_bytes > slot.tsq_limit {
                if !slot.held {
                    slot.held = true;
                    self.tsq_holds += 1;
                }
                break;
            }
            buf.clear();
            let mut sent = slot.engine.poll_transmit(self.now, &mut buf);
            let Some(pkt) = sent.as_mut() else {
                break;
            };
            self.host_send(host, pkt, &buf, e);
        }
        self.payload_buf = buf;
        while let Some(ev) = self.engines[e as usize].engine.poll_event() {
            self.app_events.push((e, ev));
        }
        let slot = &mut self.engines[e as usize];
        if let Some(t) = slot.engine.poll_timeout() {
            // A held engine whose deadline has come wants to send (a retransmission, a paced packet),
            // which it may not: its wake-up serves the deadline, else the timer would spin.
            if slot.held && t <= self.now {
                return;
            }
            let t = t.max(self.now);
            if t < slot.scheduled {
                slot.scheduled = t;
                self.events.push(t, Event::EngineTimer(e));
            }
        }
        if TRACED {
            self.trace_deadline(e);
        }
    }

    /// An engine's bytes in its NIC queue fell to the budget: serve a deadline that passed while it was
    /// held, and let it send.
    pub(super) fn host_queue_wake(&mut self, e: EngineId) {
        let slot = &mut self.engines[e as usize];
        if slot.engine.poll_timeout().is_some_and(|d| d <= self.now) {
            slot.engine.handle_timeout(self.now);
            if TRACED {
                self.trace_engine(e, Kind::Timer, None);
            }
        }
        self.drain(e);
    }

    pub(super) fn engine_timer(&mut self, e: EngineId, t: Time) {
        let slot = &mut self.engines[e as usize];
        if slot.scheduled != t {
            return;
        }
        slot.scheduled = Time::MAX;
        if slot.engine.poll_timeout().is_some_and(|d| d <= self.now) {
            slot.engine.handle_timeout(self.now);
            if TRACED {
                self.trace_engine(e, Kind::Timer, None);
            }
        }
        self.drain(e);
    }

    /// Registers an engine that owns `ports` consecutive ports from `first` (an MPTCP end owns one per
    /// sub-flow); `tcp` says whether it is a TCP end (its NIC-queue budget is TSQ's rather than a UDP
    /// socket's send buffer).
    pub(super) fn add_engine(
        &mut self,
        engine: Box<dyn Engine>,
        host: u32,
        (first, ports): (u16, u16),
        conn: u32,
        tcp: bool,
    ) -> EngineId {
        let id = self.engines.len() as EngineId;
        let tsq_limit = self
            .net
            .host_tsq
            .budget(self.net.host_nic_rate_bps[host as usize], tcp);
        self.engines.push(EngineSlot {
            engine,
            host,
            conn,
            scheduled: Time::MAX,
            nic_bytes: 0,
            held: false,
            connected: false,
            tsq_limit,
        });
        // Ports are allocated per host, so the engine owns its port on every address of the host: a
        // connection that migrates to another NIC (DCQUIC) keeps receiving.
        for a in &self.net.host_addrs[host as usize] {
            for port in first..first + ports {
                self.demux.insert(a.0, port, id);
            }
        }
        id
    }
}
