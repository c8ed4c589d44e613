//! The client: one association (several paths) to one server, request/response calls.
//!
//! `call` hands the request to the runtime thread over a bounded channel and blocks for the response.
//! CloudBurst names a message with 8 bits on the wire, so at most 256 calls are in flight per client
//! and a finished call's id rests for [`NetConfig::id_quarantine`] before reuse (see there); calls
//! beyond that wait in the runtime, and [`CallStats::waited_for_id`] says how long.

use crate::config::NetConfig;
use crate::driver::{Driver, RX_BUDGET, WAKE_TOKEN};
use crate::frame::{Preamble, SCHEME_CLOUDBURST};
use crate::io::{PathSocket, TxCounters};
use crate::runtime_thread::RuntimeThread;
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::net::UnixDatagram;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use tailcut_proto::cloudburst::{CloudBurstEndpoint, TableSizes};
use tailcut_proto::rng::{derive_seed, stream, Stream};
use tailcut_proto::{AppEvent, Dur, Engine, FiveTuple, MessageStats, MsgId, Outgoing, Packet, Time};

/// Per-call measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    /// From handing the request to the engine to decoding the response.
    pub latency: Dur,
    /// Time the call waited for a free message id before that.
    pub waited_for_id: Dur,
    /// The request's sender-side counters (final if its STOP came before the response).
    pub request: MessageStats,
}

#[derive(Debug)]
pub struct Reply {
    pub bytes: Vec<u8>,
    pub stats: CallStats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    TooLarge {
        len: usize,
        max: u64,
    },
    /// No response within [`NetConfig::call_timeout`].
    Timeout,
    /// The runtime thread has stopped.
    Closed,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::TooLarge { len, max } => {
                write!(f, "request of {len} bytes; CloudBurst carries at most {max}")
            }
            CallError::Timeout => write!(f, "no response before the call timeout"),
            CallError::Closed => write!(f, "the client's runtime thread has stopped"),
        }
    }
}

impl std::error::Error for CallError {}

/// Client-side totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    pub calls_completed: u64,
    pub calls_timed_out: u64,
    /// Responses to calls already answered or timed out (duplicates or late ones), dropped.
    pub stale_responses: u64,
    pub datagrams_in: u64,
    /// Datagrams that are not this association's (other preamble, scheme or id).
    pub foreign_datagrams: u64,
    pub dropped_by_hook: u64,
    pub tx: TxCounters,
    pub tables: TableSizes,
    pub engine_malformed: u64,
}

type ReplyTx = SyncSender<Result<Reply, CallError>>;
type LoopTx = SyncSender<Result<ClosedLoopReport, CallError>>;

enum Command {
    Call {
        data: Vec<u8>,
        reply: ReplyTx,
    },
    ClosedLoop {
        data: Vec<u8>,
        count: usize,
        reply: LoopTx,
    },
    Shutdown,
}

/// Who waits for a call's response.
enum Waiter {
    Caller(ReplyTx),
    /// The runtime's own closed loop ([`Client::closed_loop`]).
    Loop,
}

/// What [`Client::closed_loop`] measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClosedLoopReport {
    pub calls: Vec<CallStats>,
    /// Responses that were not the request's bytes (the loop expects an echo server).
    pub not_echoed: usize,
}

struct ClosedLoop {
    data: Vec<u8>,
    left: usize,
    report: ClosedLoopReport,
    reply: LoopTx,
}

/// A CloudBurst RPC client. Calls may come from several threads at once.
pub struct Client {
    commands: SyncSender<Command>,
    runtime: RuntimeThread,
    stats: Arc<Mutex<ClientStats>>,
    max_message_bytes: u64,
    local: Vec<SocketAddr>,
}

impl Client {
    /// Binds one UDP socket per path (ephemeral ports on the address family's loopback or
    /// unspecified address) and starts the runtime thread.
    pub fn connect(server: SocketAddr, cfg: NetConfig) -> io::Result<Client> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let ip: IpAddr = match server.ip() {
            IpAddr::V4(a) if a.is_loopback() => Ipv4Addr::LOCALHOST.into(),
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(a) if a.is_loopback() => Ipv6Addr::LOCALHOST.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let socks = (0..cfg.cloudburst.paths)
            .map(|_| PathSocket::bind(SocketAddr::new(ip, 0), cfg.socket_buffer_bytes))
            .collect::<io::Result<Vec<_>>>()?;
        let local = socks
            .iter()
            .map(PathSocket::local_addr)
            .collect::<io::Result<Vec<_>>>()?;
        // The association id: seeded, but different for every client of one process (by port).
        let association = derive_seed(cfg.seed, Stream::Engine, u64::from(local[0].port()));
        let (wake, wake_rx) = UnixDatagram::pair()?;
        let (commands, rx) = mpsc::sync_channel(1024);
        let stats = Arc::new(Mutex::new(ClientStats::default()));
        let max_message_bytes = cfg.max_message_bytes();
        let engine = CloudBurstEndpoint::new(
            cfg.engine_config(),
            FiveTuple::default(),
            stream(cfg.seed, Stream::Engine, association),
        )
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let driver = Driver::new(socks, wake_rx, &cfg)?;
        let shared = stats.clone();
        let runtime = RuntimeThread::spawn("tailcut-net-client", wake, move || {
            ClientLoop::new(driver, engine, association, server, cfg, rx, shared).run()
        })?;
        Ok(Client {
            commands,
            runtime,
            stats,
            max_message_bytes,
            local,
        })
    }

    /// Runs `count` calls of `request` back to back on the runtime thread itself (each starts when the
    /// previous response is decoded), so no thread hop is measured: what a benchmark wants. Expects an
    /// echo server.
    pub fn closed_loop(&self, request: &[u8], count: usize) -> Result<ClosedLoopReport, CallError> {
        self.ask(request, |data, reply| Command::ClosedLoop { data, count, reply })
    }

    /// Sends `request` and waits for the response.
    pub fn call(&self, request: &[u8]) -> Result<Reply, CallError> {
        self.ask(request, |data, reply| Command::Call { data, reply })
    }

    /// Hands `request` to the runtime thread in the command `make` builds around it and a reply
    /// channel, and waits for the reply.
    fn ask<T>(
        &self,
        request: &[u8],
        make: impl FnOnce(Vec<u8>, SyncSender<Result<T, CallError>>) -> Command,
    ) -> Result<T, CallError> {
        if request.len() as u64 > self.max_message_bytes {
            return Err(CallError::TooLarge {
                len: request.len(),
                max: self.max_message_bytes,
            });
        }
        let (reply, rx) = mpsc::sync_channel(1);
        self.commands
            .send(make(request.to_vec(), reply))
            .map_err(|_| CallError::Closed)?;
        self.runtime.wake();
        rx.recv().map_err(|_| CallError::Closed)?
    }

    pub fn stats(&self) -> ClientStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The local address of each path's socket.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local
    }

    /// Stops the runtime thread and reports how it ended.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> io::Result<()> {
        let _ = self.commands.try_send(Command::Shutdown);
        self.runtime.stop()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

struct Pending {
    msg: MsgId,
    started: Time,
    waited: Dur,
    deadline: Time,
    reply: Option<Waiter>,
    request_final: Option<MessageStats>,
}

struct ClientLoop {
    d: Driver,
    engine: CloudBurstEndpoint,
    association: u64,
    server: SocketAddr,
    cfg: NetConfig,
    commands: Receiver<Command>,
    /// Indexed by the 8-bit wire id.
    slots: Vec<Option<Pending>>,
    in_flight: usize,
    /// Free wire ids and the time each becomes usable, in that order (the quarantine is constant).
    free: VecDeque<(u8, Time)>,
    waiting: VecDeque<(Vec<u8>, Waiter, Time)>,
    closed_loop: Option<ClosedLoop>,
    generation: u64,
    stats: ClientStats,
    shared: Arc<Mutex<ClientStats>>,
}

impl ClientLoop {
    fn new(
        d: Driver,
        engine: CloudBurstEndpoint,
        association: u64,
        server: SocketAddr,
        cfg: NetConfig,
        commands: Receiver<Command>,
        shared: Arc<Mutex<ClientStats>>,
    ) -> ClientLoop {
        ClientLoop {
            d,
            engine,
            association,
            server,
            cfg,
            commands,
            slots: (0..256).map(|_| None).collect(),
            in_flight: 0,
            free: (0..=255u8).map(|w| (w, Time::ZERO)).collect(),
            waiting: VecDeque::new(),
            closed_loop: None,
            generation: 0,
            stats: ClientStats::default(),
            shared,
        }
    }

    fn run(&mut self) -> io::Result<()> {
        loop {
            let deadline = self.next_deadline();
            self.d.wait(deadline)?;
            let now = self.d.clock.now();
            for i in 0..self.d.ready.len() {
                match self.d.ready[i] {
                    WAKE_TOKEN => {
                        let stop = self.d.drain_wake();
                        if !self.take_commands(now) || stop {
                            return Ok(());
                        }
                    }
                    k if (k as usize) < self.d.socks.len() => self.receive(k as usize)?,
                    _ => {}
                }
            }
            let now = self.d.clock.now();
            if self.engine.poll_timeout().is_some_and(|t| t <= now) {
                self.engine.handle_timeout(now);
            }
            self.expire_calls(now);
            self.start_calls(now);
            self.drain(now);
            self.publish();
        }
    }

    /// Moves queued commands into the waiting list; false on shutdown.
    fn take_commands(&mut self, now: Time) -> bool {
        loop {
            match self.commands.try_recv() {
                Ok(Command::Call { data, reply }) => {
                    self.waiting.push_back((data, Waiter::Caller(reply), now))
                }
                Ok(Command::ClosedLoop { data, count, reply }) => {
                    if self.closed_loop.is_some() || count == 0 {
                        let _ = reply.send(Ok(ClosedLoopReport::default()));
                        continue;
                    }
                    self.waiting.push_back((data.clone(), Waiter::Loop, now));
                    self.closed_loop = Some(ClosedLoop {
                        data,
                        left: count,
                        report: ClosedLoopReport::default(),
                        reply,
                    });
                }
                Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => return false,
                Err(TryRecvError::Empty) => return true,
            }
        }
    }

    fn receive(&mut self, k: usize) -> io::Result<()> {
        let engine = &mut self.engine;
        let stats = &mut self.stats;
        let association = self.association;
        let server = self.server;
        let clock = self.d.clock;
        for _ in 0..RX_BUDGET {
            let n = self.d.rx.recv(&self.d.socks[k], |dg| {
                stats.datagrams_in += 1;
                let ours = Preamble::parse(dg.bytes).filter(|(p, _)| {
                    p.scheme == SCHEME_CLOUDBURST && p.association == association && dg.from == server
                });
                let Some((_, payload)) = ours else {
                    stats.foreign_datagrams += 1;
                    return;
                };
                let pkt = Packet {
                    ecn: dg.ecn,
                    ..Packet::default()
                };
                engine.handle_packet(clock.now(), &pkt, payload);
            })?;
            if n == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Starts waiting calls while message ids are free.
    fn start_calls(&mut self, now: Time) {
        while !self.waiting.is_empty() {
            let Some(&(w, at)) = self.free.front() else {
                return;
            };
            if at > now {
                return;
            }
            self.free.pop_front();
            let Some((data, reply, queued)) = self.waiting.pop_front() else {
                return;
            };
            self.generation += 1;
            let msg = self.generation << 8 | u64::from(w);
            self.engine.send_bytes(now, Outgoing::Message, msg, &data);
            // The response travels under the same wire id in the other direction.
            self.engine.expect_message(msg, 0);
            self.slots[w as usize] = Some(Pending {
                msg,
                started: now,
                waited: now.saturating_sub(queued),
                deadline: now + self.cfg.call_timeout(),
                reply: Some(reply),
                request_final: None,
            });
            self.in_flight += 1;
        }
    }

    /// The drain of `docs/architecture.md`; a response can start the closed loop's next call, whose
    /// first round then leaves in the same wake-up.
    fn drain(&mut self, now: Time) {
        let server = self.server;
        loop {
            self.d
                .drain_transmits(now, &mut self.engine, self.association, |p| Some((p, server)));
            while let Some(ev) = self.engine.poll_event() {
                match ev {
                    AppEvent::MessageReceived { msg } => self.on_response(now, msg),
                    AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                        if let Some(p) = self.slot_of(msg) {
                            p.request_final = Some(stats);
                        }
                        self.release(now, msg as u8);
                    }
                    AppEvent::Connected => {}
                }
            }
            let before = self.generation;
            self.start_calls(now);
            if self.generation == before {
                break;
            }
        }
        self.d.flush();
    }

    fn slot_of(&mut self, msg: MsgId) -> Option<&mut Pending> {
        self.slots[msg as u8 as usize].as_mut().filter(|p| p.msg == msg)
    }

    fn on_response(&mut self, now: Time, msg: MsgId) {
        let data = self.engine.take_bytes(msg);
        let request_so_far = self.engine.message_stats(msg);
        let Some(p) = self.slot_of(msg) else {
            self.stats.stale_responses += 1;
            return;
        };
        let Some(reply) = p.reply.take() else {
            self.stats.stale_responses += 1;
            return;
        };
        let stats = CallStats {
            latency: now.saturating_sub(p.started),
            waited_for_id: p.waited,
            request: p.request_final.or(request_so_far).unwrap_or_default(),
        };
        let bytes = data.unwrap_or_default();
        match reply {
            Waiter::Caller(tx) => {
                let _ = tx.send(Ok(Reply { bytes, stats }));
            }
            Waiter::Loop => self.loop_step(now, &bytes, stats),
        }
        self.stats.calls_completed += 1;
        self.release(now, msg as u8);
    }

    /// The closed loop got a response: record it and start the next call at once.
    fn loop_step(&mut self, now: Time, bytes: &[u8], stats: CallStats) {
        let Some(l) = self.closed_loop.as_mut() else {
            return;
        };
        l.report.calls.push(stats);
        l.report.not_echoed += usize::from(bytes != l.data.as_slice());
        l.left -= 1;
        if l.left > 0 {
            self.waiting.push_back((l.data.clone(), Waiter::Loop, now));
        } else if let Some(l) = self.closed_loop.take() {
            let _ = l.reply.send(Ok(l.report));
        }
    }

    /// Frees wire id `w` once its call is answered (or timed out) and its request is final.
    fn release(&mut self, now: Time, w: u8) {
        let done = self.slots[w as usize]
            .as_ref()
            .is_some_and(|p| p.reply.is_none() && p.request_final.is_some());
        if done {
            self.slots[w as usize] = None;
            self.in_flight -= 1;
            self.free.push_back((w, now + self.cfg.id_quarantine()));
        }
    }

    fn expire_calls(&mut self, now: Time) {
        if self.in_flight == 0 {
            return;
        }
        for w in 0..=255u8 {
            let Some(p) = self.slots[w as usize].as_mut() else {
                continue;
            };
            if p.deadline <= now {
                match p.reply.take() {
                    Some(Waiter::Caller(tx)) => {
                        let _ = tx.send(Err(CallError::Timeout));
                        self.stats.calls_timed_out += 1;
                    }
                    Some(Waiter::Loop) => {
                        self.stats.calls_timed_out += 1;
                        if let Some(l) = self.closed_loop.take() {
                            let _ = l.reply.send(Err(CallError::Timeout));
                        }
                    }
                    None => {}
                }
                let Some(p) = self.slots[w as usize].as_mut() else {
                    continue;
                };
                // A request the engine never reported final cannot exist past the call timeout
                // (transmission_timeout is shorter); treat it as final so the id comes back.
                if p.request_final.is_none() && self.engine.message_stats(p.msg).is_none() {
                    p.request_final = Some(MessageStats::default());
                }
                self.release(now, w);
            }
        }
    }

    fn next_deadline(&self) -> Option<Time> {
        // Only unanswered calls: an answered call waits for its request's STOP or failure, which
        // the engine's own deadline brings.
        let calls = if self.in_flight > 0 {
            self.slots
                .iter()
                .flatten()
                .filter(|p| p.reply.is_some())
                .map(|p| p.deadline)
                .min()
        } else {
            None
        };
        let ids = self
            .free
            .front()
            .map(|&(_, at)| at)
            .filter(|_| !self.waiting.is_empty());
        [self.engine.poll_timeout(), calls, ids]
            .into_iter()
            .flatten()
            .min()
    }

    fn publish(&mut self) {
        self.stats.dropped_by_hook = self.d.dropped_by_hook;
        self.stats.tx = self.d.lanes.counters;
        self.stats.tables = self.engine.table_sizes();
        self.stats.engine_malformed = self.engine.counters().malformed;
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = self.stats;
    }
}
