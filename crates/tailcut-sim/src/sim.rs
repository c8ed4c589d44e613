//! The simulation of one scheme: the event loop that moves packets through hosts, shims, NIC and
//! switch queues and links, drives the engines, and keeps the per-flow and per-port records.
//!
//! Every packet costs O(1) work per hop (one enqueue, one transmission, one arrival), independent of
//! the number of flows: no per-packet scans over flows, and forwarding is a table lookup.

use crate::arena::{PacketArena, PktId, NO_OWNER};
use crate::event::{EngineId, Event, EventQueue, NodeId, PortId};
use crate::fault::{self, FaultAction};
use crate::hash::FxMap;
use crate::metrics::{Conservation, FlowRecord, PathInfo, PortRecord, RunInfo};
use crate::net::port::Service;
use crate::net::{routing, Network};
use crate::transport::{ConnSetup, Transport, MAX_COPIES};
use crate::workload::FlowSpec;
use rand::Rng as _;
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::time::serialization_time;
use tailcut_proto::{
    AppEvent, Direction, Dur, Engine, FiveTuple, MessageStats, Packet, Proto, Seq, Shim, Time, Verdict,
};

/// How a workload component maps flows onto connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnMode {
    /// A fresh connection per flow.
    PerFlow,
    /// `n` long-lived connections per (client, server) pair, used round robin.
    Persistent(u32),
}

/// Per-component settings of one run.
pub struct ComponentRun {
    pub transport: Transport,
    pub conn_mode: ConnMode,
}

struct EngineSlot {
    engine: Box<dyn Engine>,
    host: u32,
    /// The connection this engine is one end of.
    conn: u32,
    /// Time of the pending timer event for this engine, `Time::MAX` if none.
    scheduled: Time,
    /// Bytes of this engine's packets waiting in its host's NIC queue (counted only with a host-queue
    /// budget, `host_tsq`).
    nic_bytes: u64,
    /// The engine was not polled because `nic_bytes` exceeded the budget; it is woken when they drain.
    held: bool,
}

/// One connection: engine of the data sender (`a`, at the flow's `src`) and of the receiver (`b`).
struct Conn {
    a: EngineId,
    b: EngineId,
}

struct FlowState {
    /// The connections carrying the flow: the first is its own, the others replicas (RepFlow,
    /// replicated DCTCP), each with the flow's messages; the flow finishes with the first copy.
    conns: [u32; MAX_COPIES as usize],
    copies: u8,
    /// The copy whose data arrived first (0 until the flow finishes).
    winner: u8,
    finish: Option<Time>,
    /// Final counters per copy.
    stats: [MessageStats; MAX_COPIES as usize],
    /// Messages of this flow whose counters are final: bit `2 copy` the request, `2 copy + 1` the
    /// response.
    final_mask: u16,
}

impl FlowState {
    fn copy_of(&self, conn: u32) -> u32 {
        self.conns[..self.copies as usize]
            .iter()
            .position(|&c| c == conn)
            .unwrap_or(0) as u32
    }
}

pub struct Sim<'a> {
    now: Time,
    max_time: Time,
    seed: u64,
    events: EventQueue,
    arena: PacketArena,
    pub net: Network,
    host_of_node: Vec<u32>,
    engines: Vec<EngineSlot>,
    demux: FxMap<(u32, u16), EngineId>,
    shims: Vec<Option<Box<dyn Shim>>>,
    shim_scheduled: Vec<Time>,
    flows: &'a [FlowSpec],
    flow_state: Vec<FlowState>,
    components: &'a [ComponentRun],
    conns: Vec<Conn>,
    pool: FxMap<(u32, u32, u32, u32), u32>,
    round_robin: FxMap<(u32, u32, u32), u32>,
    next_port: Vec<u16>,
    conn_rng: rng::Rng,
    faults: Vec<(Dur, FaultAction)>,
    drain_stack: Vec<EngineId>,
    app_events: Vec<(EngineId, AppEvent)>,
    payload_buf: Vec<u8>,
    rx_payload: Vec<u8>,
    flows_started: usize,
    flows_finished: usize,
    paths: FxMap<(u32, u32), PathInfo>,
    cons: Conservation,
    /// TCP small queues: the most bytes an engine may have waiting in its NIC queue before it is
    /// polled no more (0 = no limit). docs/simulator.md, "TCP small queues".
    host_tsq: u64,
    /// Times an engine was held back by `host_tsq`.
    tsq_holds: u64,
}

impl<'a> Sim<'a> {
    pub fn new(
        net: Network,
        flows: &'a [FlowSpec],
        components: &'a [ComponentRun],
        faults: Vec<(Dur, FaultAction)>,
        seed: u64,
        max_time: Dur,
    ) -> Sim<'a> {
        let mut host_of_node = vec![u32::MAX; net.nodes.len()];
        for (i, &n) in net.hosts.iter().enumerate() {
            host_of_node[n as usize] = i as u32;
        }
        let hosts = net.host_count();
        let host_tsq = net.host_tsq;
        let mut sim = Sim {
            now: Time::ZERO,
            max_time: Time::ZERO + max_time,
            seed,
            events: EventQueue::default(),
            arena: PacketArena::default(),
            net,
            host_of_node,
            engines: Vec::new(),
            demux: FxMap::default(),
            shims: (0..hosts).map(|_| None).collect(),
            shim_scheduled: vec![Time::MAX; hosts],
            flows,
            flow_state: Vec::with_capacity(flows.len()),
            components,
            conns: Vec::new(),
            pool: FxMap::default(),
            round_robin: FxMap::default(),
            next_port: vec![1024; hosts],
            conn_rng: rng::stream(seed, Stream::Engine, u64::MAX),
            faults,
            drain_stack: Vec::new(),
            app_events: Vec::new(),
            payload_buf: Vec::new(),
            rx_payload: Vec::new(),
            flows_started: 0,
            flows_finished: 0,
            paths: FxMap::default(),
            cons: Conservation::default(),
            host_tsq,
            tsq_holds: 0,
        };
        for (i, f) in flows.iter().enumerate() {
            sim.events.push(f.start, Event::FlowStart(i as u32));
        }
        for (i, (at, _)) in sim.faults.iter().enumerate() {
            sim.events.push(Time::ZERO + *at, Event::Fault(i as u32));
        }
        sim
    }

    /// Installs a shim on a host (T-RACKs and other hypervisor-level schemes).
    pub fn set_shim(&mut self, host: u32, shim: Box<dyn Shim>) {
        self.shims[host as usize] = Some(shim);
        self.rearm_shim(host);
    }

    /// Runs until every flow has finished or `max_time`. `progress(fraction)` is offered the chance to
    /// report every few thousand events; it returns false to cancel.
    pub fn run(&mut self, progress: &mut dyn FnMut(&Sim) -> bool) -> Result<(), String> {
        let mut since_check = 0u32;
        while let Some(t) = self.events.peek_time() {
            if t > self.max_time {
                break;
            }
            let (t, ev) = self.events.pop().expect("peeked");
            self.now = t;
            match ev {
                Event::TxDone(p) => self.tx_done(p),
                Event::Arrive(pkt) => self.arrive(pkt),
                Event::EngineTimer(e) => self.engine_timer(e, t),
                Event::HostQueueWake(e) => self.host_queue_wake(e),
                Event::ShimTimer(h) => self.shim_timer(h, t),
                Event::FlowStart(f) => self.start_flow(f),
                Event::Fault(i) => {
                    let action = self.faults[i as usize].1.clone();
                    if fault::apply(&mut self.net, &action) {
                        self.net.recompute_routes();
                    }
                }
            }
            if self.flows_finished == self.flows.len() {
                break;
            }
            since_check += 1;
            if since_check >= 4096 {
                since_check = 0;
                if !progress(self) {
                    return Err("run cancelled".into());
                }
            }
        }
        Ok(())
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Fraction of the run done: the larger of finished flows and elapsed time.
    pub fn progress_fraction(&self) -> f64 {
        let by_flows = if self.flows.is_empty() {
            1.0
        } else {
            self.flows_finished as f64 / self.flows.len() as f64
        };
        let by_time = self.now.0 as f64 / self.max_time.0.max(1) as f64;
        by_flows.max(by_time).min(1.0)
    }

    // ---- packets in the network ----------------------------------------------------------------

    fn enqueue(&mut self, port: PortId, id: PktId) {
        let s = self.net.ports[port as usize].offer(self.now, id, &mut self.arena);
        self.serve(port, s);
    }

    /// Carries out what a port asks of its driver: free the packets it dropped, put the one it sent
    /// on its wire, and wake it when its line frees.
    #[inline(always)]
    fn serve(&mut self, port: PortId, s: Service) {
        for victim in s.dropped.into_iter().flatten() {
            if self.host_tsq > 0 {
                let size = self.arena.get(victim).size_bytes as u64;
                self.leave_host_queue(victim, size);
            }
            self.arena.remove(victim);
            self.cons.dropped += 1;
        }
        if let Some(d) = s.sent {
            if self.host_tsq > 0 {
                let size = self.arena.get(d.id).size_bytes as u64;
                self.leave_host_queue(d.id, size);
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

    /// A packet leaves its host's NIC queue (sent or dropped): its engine's budget is freed, and an
    /// engine held back by it is woken (Linux's TSQ handler runs on transmit completion).
    fn leave_host_queue(&mut self, id: PktId, size: u64) {
        let e = self.arena.take_owner(id);
        if e == NO_OWNER {
            return;
        }
        let slot = &mut self.engines[e as usize];
        slot.nic_bytes -= size;
        if slot.held && slot.nic_bytes <= self.host_tsq {
            slot.held = false;
            self.events.push(self.now, Event::HostQueueWake(e));
        }
    }

    fn tx_done(&mut self, port: PortId) {
        let s = self.net.ports[port as usize].wake(self.now, &self.arena);
        self.serve(port, s);
    }

    fn arrive(&mut self, id: PktId) {
        let node = self.net.ports[self.arena.link(id) as usize].peer;
        let host = self.host_of_node[node as usize];
        if host != u32::MAX {
            self.cons.delivered += 1;
            self.rx_payload.clear();
            self.rx_payload.extend_from_slice(self.arena.payload(id));
            let pkt = self.arena.remove(id);
            self.host_receive(host, pkt);
        } else {
            self.forward(node, id);
        }
    }

    fn forward(&mut self, node: NodeId, id: PktId) {
        let salt = self.net.nodes[node as usize].salt;
        let pkt = self.arena.get_mut(id);
        let hops = self.net.routes.next_hops(node, pkt.tuple.dst);
        match routing::choose(hops, &pkt.tuple, &mut pkt.route, salt) {
            Some(egress) => self.enqueue(egress, id),
            None => {
                self.arena.remove(id);
                self.cons.dropped += 1;
                self.cons.dropped_no_route += 1;
            }
        }
    }

    // ---- hosts -------------------------------------------------------------------------------

    fn host_receive(&mut self, host: u32, mut pkt: Packet) {
        if self.shim_passes(host, &mut pkt, Direction::ToHost) {
            self.deliver_local(pkt);
        }
    }

    /// Offers a packet to the host's shim (if any) in the given direction; false if the shim drops it.
    fn shim_passes(&mut self, host: u32, pkt: &mut Packet, dir: Direction) -> bool {
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
        }
        v == Verdict::Pass
    }

    fn deliver_local(&mut self, pkt: Packet) {
        match self.demux.get(&(pkt.tuple.dst.0, pkt.tuple.dst_port)) {
            Some(&e) => {
                let payload = std::mem::take(&mut self.rx_payload);
                self.engines[e as usize]
                    .engine
                    .handle_packet(self.now, &pkt, &payload);
                self.rx_payload = payload;
                self.drain(e);
            }
            None => self.cons.undeliverable += 1,
        }
    }

    fn host_send(&mut self, host: u32, mut pkt: Packet, payload: &[u8], owner: EngineId) {
        if self.shim_passes(host, &mut pkt, Direction::ToNetwork) {
            self.nic_send(host, pkt, payload, owner);
        }
    }

    /// Puts a packet into its host's NIC queue; `owner` is the engine whose host-queue budget it
    /// counts against ([`NO_OWNER`] for shim-made packets).
    fn nic_send(&mut self, host: u32, pkt: Packet, payload: &[u8], owner: EngineId) {
        let (node, nic) = self.net.addrs[pkt.tuple.src.0 as usize];
        debug_assert_eq!(
            self.host_of_node[node as usize], host,
            "engines send from their own host's addresses"
        );
        let id = self.arena.insert(pkt);
        if !payload.is_empty() {
            self.arena.set_payload(id, payload);
        }
        self.cons.injected += 1;
        if self.host_tsq > 0 && owner != NO_OWNER {
            self.arena.set_owner(id, owner);
            self.engines[owner as usize].nic_bytes += u64::from(pkt.size_bytes);
        }
        self.enqueue(nic, id);
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
                Direction::ToNetwork => self.nic_send(host, pkt, &[], NO_OWNER),
                Direction::ToHost => {
                    self.rx_payload.clear();
                    self.deliver_local(pkt)
                }
            }
        }
        self.rearm_shim(host);
    }

    fn rearm_shim(&mut self, host: u32) {
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

    fn shim_timer(&mut self, host: u32, t: Time) {
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

    // ---- engines -----------------------------------------------------------------------------

    fn drain(&mut self, e: EngineId) {
        self.drain_stack.push(e);
        while let Some(e) = self.drain_stack.pop() {
            self.drain_one(e);
            let events = std::mem::take(&mut self.app_events);
            for &(src, ev) in &events {
                self.on_app_event(src, ev);
            }
            self.app_events = events;
            self.app_events.clear();
        }
    }

    fn drain_one(&mut self, e: EngineId) {
        let host = self.engines[e as usize].host;
        let mut buf = std::mem::take(&mut self.payload_buf);
        loop {
            // TCP small queues: Linux stops handing a socket's segments to the qdisc while more than
            // the limit of its bytes wait there, and resumes when they drain (`leave_host_queue`).
            let slot = &mut self.engines[e as usize];
            if self.host_tsq > 0 && slot.nic_bytes > self.host_tsq {
                if !slot.held {
                    slot.held = true;
                    self.tsq_holds += 1;
                }
                break;
            }
            buf.clear();
            let Some(pkt) = slot.engine.poll_transmit(self.now, &mut buf) else {
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
    }

    /// An engine's bytes in its NIC queue fell to the budget: serve a deadline that passed while it was
    /// held, and let it send.
    fn host_queue_wake(&mut self, e: EngineId) {
        let slot = &mut self.engines[e as usize];
        if slot.engine.poll_timeout().is_some_and(|d| d <= self.now) {
            slot.engine.handle_timeout(self.now);
        }
        self.drain(e);
    }

    fn engine_timer(&mut self, e: EngineId, t: Time) {
        let slot = &mut self.engines[e as usize];
        if slot.scheduled != t {
            return;
        }
        slot.scheduled = Time::MAX;
        if slot.engine.poll_timeout().is_some_and(|d| d <= self.now) {
            slot.engine.handle_timeout(self.now);
        }
        self.drain(e);
    }

    fn on_app_event(&mut self, e: EngineId, ev: AppEvent) {
        match ev {
            AppEvent::Connected => {}
            AppEvent::MessageReceived { msg } => {
                let f = (msg >> 1) as usize;
                let spec = &self.flows[f];
                let conn = &self.conns[self.engines[e as usize].conn as usize];
                if msg & 1 == 0 {
                    // The request reached the server: answer it.
                    let (a, b) = (conn.a, conn.b);
                    let resp = msg | 1;
                    self.engines[b as usize]
                        .engine
                        .expect_response(msg, resp, spec.size_bytes);
                    self.engines[a as usize]
                        .engine
                        .send_response(self.now, msg, resp, spec.size_bytes);
                    self.drain_stack.push(a);
                } else if self.flow_state[f].finish.is_none() {
                    // The first copy to arrive completes the flow (RepFlow).
                    let st = &mut self.flow_state[f];
                    st.winner = st.copy_of(self.engines[e as usize].conn) as u8;
                    st.finish = Some(self.now);
                    self.flows_finished += 1;
                }
            }
            AppEvent::MessageAcked { msg, mut stats } | AppEvent::MessageFailed { msg, mut stats } => {
                let conn = self.engines[e as usize].conn;
                let st = &mut self.flow_state[(msg >> 1) as usize];
                let copy = st.copy_of(conn);
                if copy > 0 {
                    // Everything a replica sends is redundant.
                    stats.redundant_bytes = stats.sent_bytes;
                }
                st.stats[copy as usize].add(&stats);
                st.final_mask |= 1 << (2 * copy as u64 + (msg & 1));
            }
        }
    }

    // ---- flows and connections ---------------------------------------------------------------

    fn start_flow(&mut self, f: u32) {
        let spec = &self.flows[f as usize];
        let copies = self.components[spec.component as usize]
            .transport
            .replicas(spec.size_bytes);
        let mut conns = [0u32; MAX_COPIES as usize];
        conns[0] = self.connection_for(spec);
        // Replicas always get connections of their own, so each has its own 5-tuple (and ECMP
        // path draw).
        for c in conns.iter_mut().take(copies as usize).skip(1) {
            *c = self.open_connection(spec);
        }
        self.flow_state.push(FlowState {
            conns,
            copies: copies as u8,
            winner: 0,
            finish: None,
            stats: [MessageStats::default(); MAX_COPIES as usize],
            final_mask: 0,
        });
        debug_assert_eq!(self.flow_state.len(), f as usize + 1, "flows start in id order");
        self.flows_started += 1;
        let base = (f as u64) << 1;
        for (k, &conn) in conns.iter().take(copies as usize).enumerate() {
            let c = &self.conns[conn as usize];
            let (a, b) = (c.a, c.b);
            if spec.request_bytes > 0 {
                self.engines[a as usize]
                    .engine
                    .expect_request(base, spec.request_bytes);
                self.engines[b as usize]
                    .engine
                    .send_request(self.now, base, spec.request_bytes);
                self.drain(b);
            } else {
                self.flow_state[f as usize].final_mask |= 1 << (2 * k);
                self.engines[b as usize]
                    .engine
                    .expect_message(base | 1, spec.size_bytes);
                self.engines[a as usize]
                    .engine
                    .send_message(self.now, base | 1, spec.size_bytes);
                self.drain(a);
            }
        }
    }

    fn connection_for(&mut self, spec: &FlowSpec) -> u32 {
        let comp = &self.components[spec.component as usize];
        match comp.conn_mode {
            ConnMode::PerFlow => self.open_connection(spec),
            ConnMode::Persistent(n) => {
                let rr = self
                    .round_robin
                    .entry((spec.component, spec.src, spec.dst))
                    .or_insert(0);
                let slot = *rr % n.max(1);
                *rr += 1;
                let key = (spec.component, spec.src, spec.dst, slot);
                if let Some(&c) = self.pool.get(&key) {
                    return c;
                }
                let c = self.open_connection(spec);
                self.pool.insert(key, c);
                c
            }
        }
    }

    /// `n` consecutive ports (MPTCP sub-flows), restarting at 1024 rather than wrapping mid-block.
    fn alloc_ports(&mut self, host: u32, n: u16) -> u16 {
        let p = &mut self.next_port[host as usize];
        // The block's last port must fit (n = 1 wraps exactly as a single port always did).
        if p.checked_add(n - 1).is_none() {
            *p = 1024;
        }
        let port = *p;
        *p = p.checked_add(n).unwrap_or(1024);
        port
    }

    fn open_connection(&mut self, spec: &FlowSpec) -> u32 {
        let idx = self.conns.len() as u64;
        let ports = self.components[spec.component as usize]
            .transport
            .ports_per_end()
            .max(1);
        let (pa, pb) = (
            self.alloc_ports(spec.src, ports),
            self.alloc_ports(spec.dst, ports),
        );
        let tuple = FiveTuple {
            src: self.net.host_addrs[spec.src as usize][0],
            dst: self.net.host_addrs[spec.dst as usize][0],
            src_port: pa,
            dst_port: pb,
            proto: Proto::Tcp,
        };
        let setup = ConnSetup {
            tuple,
            sender_opens: spec.request_bytes == 0,
            isn_sender: Seq(self.conn_rng.random()),
            isn_receiver: Seq(self.conn_rng.random()),
            now: self.now,
            size_bytes: spec.size_bytes,
            sender_addrs: self.net.host_addrs[spec.src as usize].clone(),
            receiver_addrs: self.net.host_addrs[spec.dst as usize].clone(),
        };
        let comp = &self.components[spec.component as usize];
        let (ea, eb) = comp.transport.connect(
            &setup,
            rng::stream(self.seed, Stream::Engine, 2 * idx),
            rng::stream(self.seed, Stream::Engine, 2 * idx + 1),
        );
        let conn = self.conns.len() as u32;
        let a = self.add_engine(ea, spec.src, pa, ports, conn);
        let b = self.add_engine(eb, spec.dst, pb, ports, conn);
        self.conns.push(Conn { a, b });
        // A connection with a handshake starts talking at once.
        self.drain(a);
        self.drain(b);
        (self.conns.len() - 1) as u32
    }

    /// Registers an engine that owns `ports` consecutive ports from `first` (an MPTCP end owns one per
    /// sub-flow).
    fn add_engine(
        &mut self,
        engine: Box<dyn Engine>,
        host: u32,
        first: u16,
        ports: u16,
        conn: u32,
    ) -> EngineId {
        let id = self.engines.len() as EngineId;
        self.engines.push(EngineSlot {
            engine,
            host,
            conn,
            scheduled: Time::MAX,
            nic_bytes: 0,
            held: false,
        });
        // Ports are allocated per host, so the engine owns its port on every address of the host: a
        // connection that migrates to another NIC (DCQUIC) keeps receiving.
        for a in &self.net.host_addrs[host as usize] {
            for port in first..first + ports {
                self.demux.insert((a.0, port), id);
            }
        }
        id
    }

    // ---- results -----------------------------------------------------------------------------

    fn path_info(&mut self, src: u32, dst: u32) -> PathInfo {
        if let Some(p) = self.paths.get(&(src, dst)) {
            return *p;
        }
        let dst_addr = self.net.host_addrs[dst as usize][0];
        let mut port = self.net.addrs[self.net.host_addrs[src as usize][0].0 as usize].1;
        let mut info = PathInfo {
            delay_ns: 0,
            bottleneck_bps: u64::MAX,
            inv_rate_sum: 0.0,
            hops: 0,
        };
        for _ in 0..64 {
            let p = &self.net.ports[port as usize];
            info.delay_ns += p.delay().0;
            info.bottleneck_bps = info.bottleneck_bps.min(p.rate_bps());
            info.inv_rate_sum += 1.0 / p.rate_bps() as f64;
            info.hops += 1;
            if p.peer == self.net.hosts[dst as usize] {
                break;
            }
            match self.net.routes.next_hops(p.peer, dst_addr).first() {
                Some(&next) => port = next,
                None => break,
            }
        }
        self.paths.insert((src, dst), info);
        info
    }

    /// The run's flow records (unfinished flows included, with their counters so far).
    pub fn flow_records(&mut self, scheme: &str, component_names: &[String]) -> Vec<FlowRecord> {
        let mut out = Vec::with_capacity(self.flows.len());
        for (i, spec) in self.flows.iter().enumerate() {
            let transport = &self.components[spec.component as usize].transport;
            let (mss, hdr) = transport.framing();
            let (mut per_copy, finish, started) = match self.flow_state.get(i) {
                Some(st) => (st.stats, st.finish, true),
                None => ([MessageStats::default(); MAX_COPIES as usize], None, false),
            };
            let mut stats = per_copy[0];
            if started {
                let st = &self.flow_state[i];
                for (copy, &c) in st.conns.iter().take(st.copies as usize).enumerate() {
                    let conn = &self.conns[c as usize];
                    for part in 0..2u64 {
                        if st.final_mask & (1 << (2 * copy as u64 + part)) == 0 {
                            let sender = if part == 0 { conn.b } else { conn.a };
                            let msg = ((i as u64) << 1) | part;
                            if let Some(mut s) = self.engines[sender as usize].engine.message_stats(msg) {
                                if copy > 0 {
                                    s.redundant_bytes = s.sent_bytes;
                                }
                                per_copy[copy].add(&s);
                            }
                        }
                    }
                }
                // Byte counters sum every copy; the loss events are those of the copy that won.
                let w = per_copy[st.winner as usize];
                stats = MessageStats {
                    timeouts: w.timeouts,
                    fast_retransmits: w.fast_retransmits,
                    ..MessageStats::default()
                };
                for c in &per_copy[..st.copies as usize] {
                    stats.retransmitted_bytes += c.retransmitted_bytes;
                    stats.redundant_bytes += c.redundant_bytes;
                    stats.sent_bytes += c.sent_bytes;
                }
            }
            let fwd = self.path_info(spec.src, spec.dst);
            let mut ideal = fwd.ideal_ns(spec.size_bytes, mss, hdr);
            if spec.request_bytes > 0 {
                ideal += self
                    .path_info(spec.dst, spec.src)
                    .ideal_ns(spec.request_bytes, mss, hdr);
            }
            out.push(FlowRecord {
                flow_id: spec.id,
                scheme: scheme.to_string(),
                component: component_names[spec.component as usize].clone(),
                src: spec.src,
                dst: spec.dst,
                size_bytes: spec.size_bytes,
                request_bytes: spec.request_bytes,
                start_ns: spec.start.0,
                finish_ns: finish.map(|t| t.0),
                ideal_fct_ns: ideal,
                stats,
            });
        }
        out
    }

    pub fn port_records(&self, scheme: &str) -> Vec<PortRecord> {
        self.net
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (node, peer) = fault::port_name(&self.net, i as u32);
                PortRecord {
                    scheme: scheme.to_string(),
                    node,
                    port: i as u32,
                    peer,
                    counters: *p.counters(),
                }
            })
            .collect()
    }

    /// Checks that every packet is accounted for; returns the counts either way.
    pub fn conservation(&self) -> Conservation {
        let mut c = self.cons;
        let queued: usize = self.net.ports.iter().map(|p| p.queued_packets()).sum();
        let on_wires = self.events.packets_on_wires();
        c.in_flight = self.arena.live() as u64;
        c.ok = c.injected == c.delivered + c.dropped + c.in_flight && queued + on_wires == self.arena.live();
        c
    }

    /// Every shim's counters, summed by name over hosts.
    pub fn shim_counters(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = std::collections::BTreeMap::new();
        for s in self.shims.iter().flatten() {
            for (k, v) in s.counters() {
                *m.entry(k.to_string()).or_insert(0) += v;
            }
        }
        m
    }

    /// Every engine's counters, summed by name, and how often the host-queue budget held one back.
    pub fn engine_counters(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = std::collections::BTreeMap::new();
        if self.host_tsq > 0 {
            m.insert("host_tsq_holds".to_string(), self.tsq_holds);
        }
        for e in &self.engines {
            for (k, v) in e.engine.counters() {
                *m.entry(k.to_string()).or_insert(0) += v;
            }
        }
        m
    }

    /// Number of hosts (shims are installed per host).
    pub fn host_count(&self) -> u32 {
        self.shims.len() as u32
    }

    pub fn run_info(&self, scheme: &str, wall_seconds: f64) -> RunInfo {
        RunInfo {
            scheme: scheme.to_string(),
            events: self.events.processed(),
            packet_hops: self.cons.packet_hops,
            wall_seconds,
            sim_end_ns: self.now.0,
            conservation: self.conservation(),
            flows_started: self.flows_started as u64,
            flows_finished: self.flows_finished as u64,
            shim_counters: self.shim_counters(),
            engine_counters: self.engine_counters(),
        }
    }
}

impl PathInfo {
    /// The FCT of a flow alone on an idle path, measured at the receiver: transmission at the
    /// bottleneck rate plus one-way propagation, plus the store-and-forward of one packet at every other
    /// hop.
    pub fn ideal_ns(&self, size: u64, mss: u64, hdr: u64) -> u64 {
        let pkts = size.div_ceil(mss).max(1);
        let wire = size + pkts * hdr;
        let first = size.min(mss) + hdr;
        let bottleneck = serialization_time(wire, self.bottleneck_bps).0 as f64;
        let sf = first as f64 * 8.0 * 1e9 * (self.inv_rate_sum - 1.0 / self.bottleneck_bps as f64);
        (bottleneck + sf.max(0.0)).round() as u64 + self.delay_ns
    }
}
