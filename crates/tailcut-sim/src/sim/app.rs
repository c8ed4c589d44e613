//! The application: flows started as one-way messages or RPCs (the data receiver's request, the
//! sender's response), the connections carrying them (one per flow, or pools of persistent ones),
//! and replicas racing to finish a flow first (RepFlow, replicated DCTCP).

use super::{ComponentRun, Conn, ConnMode, Sim};
use crate::event::{EngineId, Event};
use crate::hash::FxMap;
use crate::transport::{ConnSetup, MAX_COPIES};
use crate::workload::FlowSpec;
use rand::Rng as _;
use tailcut_proto::pattern::{is_message_pattern, message_pattern};
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::tcp::HostDelay;
use tailcut_proto::{AppEvent, Dur, Engine, FiveTuple, MessageStats, MsgId, Outgoing, Proto, Seq, Time};

/// The parts of a flow. The application numbers a flow's messages `flow << 1 | part`; engines treat
/// the ids as opaque (the role of each message is in the call that hands it over).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// The data receiver's request (request/response flows only).
    Request = 0,
    /// The flow's data: the response, or the one-way message.
    Data = 1,
}

pub(super) fn msg_id(flow: usize, part: Part) -> MsgId {
    ((flow as u64) << 1) | part as u64
}

fn flow_of(msg: MsgId) -> usize {
    (msg >> 1) as usize
}

fn part_of(msg: MsgId) -> Part {
    if msg & 1 == 0 {
        Part::Request
    } else {
        Part::Data
    }
}

/// The run's `check_bytes` mode: messages carry their pattern bytes, checked where they arrive.
#[derive(Default)]
pub(super) struct ByteCheck {
    pub(super) intact: u64,
    pub(super) corrupt: u64,
    /// Messages whose engine carries no bytes (DCQUIC and the reconnecting client do not yet).
    pub(super) uncarried: u64,
    buf: Vec<u8>,
}

impl ByteCheck {
    /// Hands message `msg` of `len` bytes to `engine` as `how`, with its pattern bytes.
    fn send(&mut self, engine: &mut dyn Engine, now: Time, how: Outgoing, msg: MsgId, len: u64) {
        self.buf.clear();
        message_pattern(msg, len, &mut self.buf);
        engine.send_bytes(now, how, msg, &self.buf);
    }

    /// Message `msg` of `len` bytes arrived at `engine`.
    fn received(&mut self, engine: &mut dyn Engine, msg: MsgId, len: u64) {
        match engine.take_bytes(msg) {
            Some(d) if is_message_pattern(msg, len, &d) => self.intact += 1,
            Some(_) => self.corrupt += 1,
            None => self.uncarried += 1,
        }
    }
}

/// What the applications' wake-ups (`host_delay`, docs/tcp.md "Host profiles") hold back: the first
/// writes on a connection still opening, and every message's read. With no delay (the default) none
/// of this is used and a run is what it was without it.
pub(super) struct AppDelay {
    /// Per component: its delays; none for engines that are not TCP, and no write delay without a
    /// handshake (the flow starts with the application's write).
    per_component: Vec<HostDelay>,
    /// Work waiting for a wake-up, indexed by `Event::AppWake`; freed slots are reused.
    pending: Vec<Wake>,
    free: Vec<u32>,
    /// Messages written on a connection end before it connected, per engine, in order.
    deferred: FxMap<EngineId, Vec<(Outgoing, MsgId, u64)>>,
}

#[derive(Clone, Copy)]
enum Wake {
    /// The application reads message `msg`, which reached engine `e`.
    Read { e: EngineId, msg: MsgId },
    /// The application, woken by `connect`, writes what waited for engine `e` to connect.
    Write { e: EngineId },
}

impl AppDelay {
    pub(super) fn new(components: &[ComponentRun]) -> Self {
        let per_component = components
            .iter()
            .map(|c| match c.transport.tcp() {
                Some(t) if t.handshake => t.host_delay,
                Some(t) => HostDelay {
                    write_after_connect: Dur::ZERO,
                    ..t.host_delay
                },
                None => HostDelay::default(),
            })
            .collect();
        AppDelay {
            per_component,
            pending: Vec::new(),
            free: Vec::new(),
            deferred: FxMap::default(),
        }
    }

    /// The engine whose application `Event::AppWake(i)` wakes (the partition count's owner).
    #[inline]
    pub(super) fn wake_engine(&self, i: u32) -> EngineId {
        match self.pending[i as usize] {
            Wake::Read { e, .. } | Wake::Write { e } => e,
        }
    }
}

pub(super) struct FlowState {
    /// The connections carrying the flow: the first is its own, the others replicas (RepFlow,
    /// replicated DCTCP), each with the flow's messages; the flow finishes with the first copy.
    pub conns: [u32; MAX_COPIES as usize],
    pub copies: u8,
    /// The copy whose data arrived first (0 until the flow finishes).
    winner: u8,
    pub finish: Option<Time>,
    /// Final counters per copy.
    stats: [MessageStats; MAX_COPIES as usize],
    /// Messages of this flow whose counters are final: bit `2 copy + part`.
    final_mask: u16,
}

impl FlowState {
    fn copy_of(&self, conn: u32) -> usize {
        self.conns[..self.copies as usize]
            .iter()
            .position(|&c| c == conn)
            .unwrap_or(0)
    }

    fn mark_final(&mut self, copy: usize, part: Part) {
        self.final_mask |= 1 << (2 * copy as u64 + part as u64);
    }

    pub fn is_final(&self, copy: usize, part: Part) -> bool {
        self.final_mask & (1 << (2 * copy as u64 + part as u64)) != 0
    }

    /// The data of the copy on `conn` arrived: the first copy to arrive completes the flow. Returns
    /// whether it did.
    fn data_arrived(&mut self, conn: u32, now: Time) -> bool {
        if self.finish.is_some() {
            return false;
        }
        self.winner = self.copy_of(conn) as u8;
        self.finish = Some(now);
        true
    }

    /// A message of the copy on `conn` has final counters.
    fn message_final(&mut self, conn: u32, part: Part, stats: MessageStats) {
        let copy = self.copy_of(conn);
        self.stats[copy].add(&replica_charged(copy, stats));
        self.mark_final(copy, part);
    }

    /// The final counters per copy, to which the records add those of unfinished messages.
    pub fn final_stats(&self) -> [MessageStats; MAX_COPIES as usize] {
        self.stats
    }

    /// The flow's counters from its copies': byte counters sum every copy; the loss events are those
    /// of the copy that won.
    pub fn combine(&self, per_copy: &[MessageStats; MAX_COPIES as usize]) -> MessageStats {
        let w = per_copy[self.winner as usize];
        let mut stats = MessageStats {
            timeouts: w.timeouts,
            fast_retransmits: w.fast_retransmits,
            ..MessageStats::default()
        };
        for c in &per_copy[..self.copies as usize] {
            stats.retransmitted_bytes += c.retransmitted_bytes;
            stats.redundant_bytes += c.redundant_bytes;
            stats.sent_bytes += c.sent_bytes;
        }
        stats
    }
}

/// Everything a replica sends is redundant.
pub(super) fn replica_charged(copy: usize, mut stats: MessageStats) -> MessageStats {
    if copy > 0 {
        stats.redundant_bytes = stats.sent_bytes;
    }
    stats
}

impl<const TRACED: bool> Sim<'_, TRACED> {
    pub(super) fn on_app_event(&mut self, e: EngineId, ev: AppEvent) {
        let conn = self.engines[e as usize].conn;
        match ev {
            AppEvent::Connected => {
                self.engines[e as usize].connected = true;
                if let Some(&(_, msg, _)) = self.app_delay.deferred.get(&e).and_then(|d| d.first()) {
                    let wait = self.host_delay(msg).write_after_connect;
                    self.wake_after(wait, Wake::Write { e });
                }
            }
            AppEvent::MessageReceived { msg } => {
                // The bytes are the kernel's as soon as they arrive; the application sees them later.
                self.check_received(e, msg);
                let wait = self.host_delay(msg).read_after_arrival;
                if wait > Dur::ZERO {
                    self.wake_after(wait, Wake::Read { e, msg });
                } else {
                    self.read(conn, msg);
                }
            }
            AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                self.flow_state[flow_of(msg)].message_final(conn, part_of(msg), stats);
                // Memory then follows the flows in progress rather than every flow ever run.
                self.engines[e as usize].engine.release_memory();
            }
        }
    }

    /// The application at the end of `conn` has read message `msg`: a server answers a request, a
    /// flow's data finishes it.
    fn read(&mut self, conn: u32, msg: MsgId) {
        match part_of(msg) {
            Part::Request => self.answer(conn, msg),
            Part::Data => {
                if self.flow_state[flow_of(msg)].data_arrived(conn, self.now) {
                    self.flows_finished += 1;
                }
            }
        }
    }

    /// The wake-ups of the application that handles message `msg` (its flow's component's).
    fn host_delay(&self, msg: MsgId) -> HostDelay {
        let c = self.flows[flow_of(msg)].component as usize;
        self.app_delay.per_component[c]
    }

    fn wake_after(&mut self, wait: Dur, work: Wake) {
        let d = &mut self.app_delay;
        let i = match d.free.pop() {
            Some(i) => {
                d.pending[i as usize] = work;
                i
            }
            None => {
                d.pending.push(work);
                (d.pending.len() - 1) as u32
            }
        };
        self.events.push(self.now + wait, Event::AppWake(i));
    }

    /// `Event::AppWake`: the application does what waited for it.
    pub(super) fn app_wake(&mut self, i: u32) {
        let work = self.app_delay.pending[i as usize];
        self.app_delay.free.push(i);
        match work {
            Wake::Read { e, msg } => {
                let conn = self.engines[e as usize].conn;
                self.read(conn, msg);
                // A server's answer left its engine to drain.
                if let Some(a) = self.drain_stack.pop() {
                    self.drain(a);
                }
            }
            Wake::Write { e } => {
                for (how, msg, len) in self.app_delay.deferred.remove(&e).unwrap_or_default() {
                    self.give(e, how, msg, len);
                }
                self.drain(e);
            }
        }
    }

    /// The application writes message `msg` on engine `e` to start a flow: at once, or, on a
    /// connection still opening with a `write_after_connect` delay, that long after it connects.
    fn write(&mut self, e: EngineId, how: Outgoing, msg: MsgId, len: u64) {
        // Behind writes still waiting, so that a connection's messages keep their order.
        if self.host_delay(msg).write_after_connect > Dur::ZERO
            && (!self.engines[e as usize].connected || self.app_delay.deferred.contains_key(&e))
        {
            self.app_delay
                .deferred
                .entry(e)
                .or_default()
                .push((how, msg, len));
            return;
        }
        self.give(e, how, msg, len);
        self.drain(e);
    }

    /// With `check_bytes`: checks the bytes of message `msg` that engine `e` received. The
    /// application goes on either way, as it would on a network that corrupted a message.
    fn check_received(&mut self, e: EngineId, msg: MsgId) {
        if self.byte_check.is_none() {
            return;
        }
        let spec = &self.flows[flow_of(msg)];
        let len = match part_of(msg) {
            Part::Request => spec.request_bytes,
            Part::Data => spec.size_bytes,
        };
        if let Some(check) = self.byte_check.as_mut() {
            check.received(self.engines[e as usize].engine.as_mut(), msg, len);
        }
    }

    /// Engine `e` sends message `msg` of `len` bytes as `how` (with its bytes under `check_bytes`).
    fn give(&mut self, e: EngineId, how: Outgoing, msg: MsgId, len: u64) {
        let engine = self.engines[e as usize].engine.as_mut();
        match (self.byte_check.as_mut(), how) {
            (Some(check), _) => check.send(engine, self.now, how, msg, len),
            (None, Outgoing::Message) => engine.send_message(self.now, msg, len),
            (None, Outgoing::Request) => engine.send_request(self.now, msg, len),
            (None, Outgoing::Response { request }) => engine.send_response(self.now, request, msg, len),
        }
    }

    /// A request reached the server end of `conn`: it answers with the flow's data.
    fn answer(&mut self, conn: u32, request: MsgId) {
        let f = flow_of(request);
        let len = self.flows[f].size_bytes;
        let c = &self.conns[conn as usize];
        let (a, b) = (c.a, c.b);
        let resp = msg_id(f, Part::Data);
        self.engines[b as usize]
            .engine
            .expect_response(request, resp, len);
        self.give(a, Outgoing::Response { request }, resp, len);
        self.drain_stack.push(a);
    }

    pub(super) fn start_flow(&mut self, f: u32) {
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
        if TRACED {
            for &c in conns.iter().take(copies as usize) {
                self.trace_follow(f as usize, c);
            }
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
        let f = f as usize;
        for (k, &conn) in conns.iter().take(copies as usize).enumerate() {
            let c = &self.conns[conn as usize];
            let (a, b) = (c.a, c.b);
            if spec.request_bytes > 0 {
                let req = msg_id(f, Part::Request);
                self.engines[a as usize]
                    .engine
                    .expect_request(req, spec.request_bytes);
                let len = spec.request_bytes;
                self.write(b, Outgoing::Request, req, len);
            } else {
                // A one-way flow has no request: its counters are final from the start.
                self.flow_state[f].mark_final(k, Part::Request);
                let data = msg_id(f, Part::Data);
                self.engines[b as usize]
                    .engine
                    .expect_message(data, spec.size_bytes);
                let len = spec.size_bytes;
                self.write(a, Outgoing::Message, data, len);
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
            sender_nic_bps: self.net.host_nic_rate_bps[spec.src as usize],
            receiver_nic_bps: self.net.host_nic_rate_bps[spec.dst as usize],
            carry_bytes: self.byte_check.is_some(),
        };
        let comp = &self.components[spec.component as usize];
        let (ea, eb) = comp.transport.connect(
            &setup,
            rng::stream(self.seed, Stream::Engine, 2 * idx),
            rng::stream(self.seed, Stream::Engine, 2 * idx + 1),
        );
        let conn = self.conns.len() as u32;
        let tcp = comp.transport.tcp().is_some();
        let a = self.add_engine(ea, spec.src, (pa, ports), conn, tcp);
        let b = self.add_engine(eb, spec.dst, (pb, ports), conn, tcp);
        self.conns.push(Conn { a, b });
        if TRACED {
            self.trace_follow(spec.id as usize, conn);
        }
        // A connection with a handshake starts talking at once.
        self.drain(a);
        self.drain(b);
        (self.conns.len() - 1) as u32
    }
}
