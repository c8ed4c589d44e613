//! The client: one association (several paths) to one server, request/response calls.
//!
//! The loop's state is shared by the runtime thread and the calling threads. `call` starts the
//! request on the loop from the calling thread and, unless another caller has them, takes the
//! sockets and the timer from the runtime thread (which does not hold the loop while it sleeps)
//! until its response comes, so the response wakes the caller itself; otherwise the response comes
//! over a channel from whichever thread received it. Commands (a closed loop, a reconnection, a
//! request over [`CALLER_STARTS_MAX`], the shutdown) go to the runtime thread.
//! The loop is the same for every scheme; what a call is to the engine is the scheme's
//! ([`ClientScheme`]: `cloudburst.rs`, `tcp.rs`, `dcquic.rs`). CloudBurst names a message with 8 bits on the wire,
//! so at most 256 of its calls are in flight per client and a finished call's id rests for
//! [`NetConfig::id_quarantine`] before reuse (see there); calls beyond that wait in the runtime, and
//! [`CallStats::waited_for_id`] says how long. A stream scheme (TCP) frames calls on its byte stream
//! (`stream.rs`) and never waits for an id.

use crate::client_scheme::{CallEvent, ClientScheme};
use crate::codec::Codec;
use crate::config::{Family, NetConfig};
use crate::driver::{Driver, Sleeper, RX_BUDGET, WAKE_TOKEN};
use crate::frame::{Control, Preamble};
use crate::io::{PathSocket, RX_SLOTS};
use crate::runtime_thread::RuntimeThread;
pub use crate::stats::ClientStats;
use crate::{cloudburst, dcquic, tcp};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::net::UnixDatagram;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use tailcut_proto::mptcp::MptcpEndpoint;
use tailcut_proto::tcp::TcpEndpoint;
use tailcut_proto::{Dur, Engine, MessageStats, Time};

/// Per-call measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    /// From handing the request to the engine to decoding the response.
    pub latency: Dur,
    /// Time the call waited for a free message id before that.
    pub waited_for_id: Dur,
    /// The request's sender-side counters: final (the engine acknowledged the request, gave it up,
    /// or stopped sending it on the response) when `request_final`, else those so far.
    pub request: MessageStats,
    pub request_final: bool,
}

#[derive(Debug)]
pub struct Reply {
    pub bytes: Vec<u8>,
    pub stats: CallStats,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    TooLarge {
        len: usize,
        max: u64,
    },
    /// No response within [`NetConfig::call_timeout`].
    Timeout,
    /// The runtime thread has stopped.
    Closed,
    /// The call's connection ended before the response (DCQUIC: a refused handshake, such as a
    /// certificate the client does not trust, or the peer's close), with the reason it gave. The
    /// next call opens a new connection.
    Connection {
        reason: String,
    },
    /// [`Client::reconnect`] while calls were outstanding: the connection they are on stays.
    InFlight {
        calls: usize,
    },
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::TooLarge { len, max } => {
                write!(f, "request of {len} bytes; the scheme carries at most {max}")
            }
            CallError::Timeout => write!(f, "no response before the call timeout"),
            CallError::Closed => write!(f, "the client's runtime thread has stopped"),
            CallError::Connection { reason } => write!(f, "the connection ended: {reason}"),
            CallError::InFlight { calls } => {
                write!(
                    f,
                    "{calls} calls are outstanding; reconnect once they are answered"
                )
            }
        }
    }
}

impl std::error::Error for CallError {}

type ReplyTx = SyncSender<Result<Reply, CallError>>;
type LoopTx = SyncSender<Result<ClosedLoopReport, CallError>>;

/// The largest request a calling thread starts itself ([`Client::call`]). A caller holds the loop
/// while it sends what the engine lets out, and the runtime thread, woken meanwhile by the first
/// ACKs, waits for the lock: on loopback (docs/net.md) starting calls on the caller (before the
/// caller also took the sockets) cut the CPU per TCP call by 13-23% from 100 B to 256 KB, was even
/// at 512 KB, and at 1 MB doubled the context switches per call (5.8 -> 10.4) and raised the p99
/// by a fifth. With the sockets taken too, 1 MB calls started by the caller still switched more
/// (7.5-9.3 against 5.2-5.5 per call for TCP and MPTCP, 3 runs each) and were no faster.
pub const CALLER_STARTS_MAX: usize = 256 << 10;

enum Command {
    /// A call handed to the runtime thread (a request over [`CALLER_STARTS_MAX`]).
    Call {
        data: Vec<u8>,
        reply: ReplyTx,
    },
    ClosedLoop {
        data: Vec<u8>,
        count: usize,
        reply: LoopTx,
    },
    Reconnect {
        reply: SyncSender<Result<(), CallError>>,
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

/// An RPC client of one scheme ([`NetConfig::scheme`]). Calls may come from several threads at once.
pub struct Client {
    /// The loop itself, which `call` starts its request on from the calling thread.
    inbox: Arc<dyn CallIn>,
    /// How a caller that has the sockets sleeps on them.
    sleeper: Sleeper,
    commands: SyncSender<Command>,
    runtime: RuntimeThread,
    stats: Arc<Mutex<ClientStats>>,
    max_message_bytes: u64,
    local: Vec<SocketAddr>,
}

impl Client {
    /// Binds one UDP socket per path (ephemeral ports on the address family's loopback or
    /// unspecified address, or on [`NetConfig::path_addrs`]) and starts the runtime thread.
    pub fn connect(server: SocketAddr, mut cfg: NetConfig) -> io::Result<Client> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let ip: IpAddr = match server.ip() {
            IpAddr::V4(a) if a.is_loopback() => Ipv4Addr::LOCALHOST.into(),
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(a) if a.is_loopback() => Ipv6Addr::LOCALHOST.into(),
            IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        let routes: Vec<(IpAddr, SocketAddr)> = (0..cfg.paths())
            .map(|i| match cfg.path_addrs.len() {
                0 => (ip, server),
                n => (cfg.path_addrs[i % n].local, cfg.path_addrs[i % n].remote),
            })
            .collect();
        let via = |i: usize| routes[i];
        // The TCP family sizes its MSS from the path MTU, the smaller of the configured one and what
        // the kernel knows of each path (Linux advertises its route's MTU less 40 bytes).
        if cfg.mss_from_path && matches!(cfg.family(), Family::Tcp | Family::Mptcp) {
            cfg.path_mtu = cfg.effective_path_mtu(probe_path_mtu(&routes));
        }
        let remotes: Vec<SocketAddr> = (0..cfg.paths()).map(|i| via(i).1).collect();
        let socks = (0..cfg.paths())
            .map(|i| {
                let s = PathSocket::bind(SocketAddr::new(via(i).0, 0), cfg.socket_buffer_bytes)?;
                s.set_dscp(cfg.dscp())?;
                Ok(s)
            })
            .collect::<io::Result<Vec<_>>>()?;
        let local = socks
            .iter()
            .map(PathSocket::local_addr)
            .collect::<io::Result<Vec<_>>>()?;
        let association = new_association()?;
        let (wake, wake_rx) = UnixDatagram::pair()?;
        let (commands, rx) = mpsc::sync_channel(1024);
        let stats = Arc::new(Mutex::new(ClientStats::default()));
        let max_message_bytes = cfg.max_message_bytes();
        let driver = Driver::new(socks, wake_rx, &cfg)?;
        let shared = stats.clone();
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let (runtime, inbox) = match cfg.family() {
            Family::CloudBurst => {
                let scheme = cloudburst::ClientSide::new(&cfg, association).map_err(invalid)?;
                spawn(driver, scheme, association, remotes, cfg, rx, shared, wake)?
            }
            Family::Tcp => {
                let scheme = tcp::ClientSide::<TcpEndpoint>::new(&cfg, association);
                spawn(driver, scheme, association, remotes, cfg, rx, shared, wake)?
            }
            Family::Mptcp => {
                let scheme = tcp::ClientSide::<MptcpEndpoint>::new(&cfg, association);
                spawn(driver, scheme, association, remotes, cfg, rx, shared, wake)?
            }
            Family::Dcquic => {
                let mtu = probe_path_mtu(&routes).map_or(cfg.path_mtu, |m| m.min(cfg.path_mtu));
                let payload = mtu.saturating_sub(28).min(u32::from(u16::MAX)) as u16;
                let clock = driver.clock;
                let engines = dcquic::client_shared(&cfg, clock.instant_epoch(), payload).map_err(invalid)?;
                let scheme = dcquic::ClientSide::new(&cfg, engines, clock.now()).map_err(invalid)?;
                spawn(driver, scheme, association, remotes, cfg, rx, shared, wake)?
            }
        };
        Ok(Client {
            sleeper: inbox.sleeper(),
            inbox,
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

    /// Sends `request` and waits for the response. The calling thread starts the call on the loop
    /// itself (its first datagrams leave from this thread) and waits on the sockets for the
    /// response ([`CallIn`]). A request over [`CALLER_STARTS_MAX`] is handed to the runtime thread
    /// instead.
    pub fn call(&self, request: &[u8]) -> Result<Reply, CallError> {
        self.check_size(request)?;
        if request.len() > CALLER_STARTS_MAX {
            return self.ask(request, |data, reply| Command::Call { data, reply });
        }
        let (reply, rx) = mpsc::sync_channel(1);
        if !self.inbox.call_in(request.to_vec(), reply)? {
            return rx.recv().map_err(|_| CallError::Closed)?;
        }
        // This caller has the sockets until its response comes: it takes the response itself (and
        // whatever else arrives meanwhile), so no thread has to wake it.
        let _back = HandBack(&*self.inbox);
        let mut ready = Vec::with_capacity(64);
        loop {
            match rx.try_recv() {
                Ok(r) => return r,
                Err(TryRecvError::Disconnected) => return Err(CallError::Closed),
                Err(TryRecvError::Empty) => {}
            }
            self.sleeper
                .sleep(None, &mut ready)
                .map_err(|e| CallError::Connection {
                    reason: format!("waiting on the sockets: {e}"),
                })?;
            ready = self.inbox.step_in(ready)?;
        }
    }

    fn check_size(&self, request: &[u8]) -> Result<(), CallError> {
        if request.len() as u64 > self.max_message_bytes {
            return Err(CallError::TooLarge {
                len: request.len(),
                max: self.max_message_bytes,
            });
        }
        Ok(())
    }

    /// Ends this client's connection (DCQUIC's CONNECTION_CLOSE, the runtime's close for the others)
    /// and opens a new one for the next call, on the same runtime thread and sockets: a new QUIC
    /// connection with its handshake, a new TCP-family association with its SYN, a new CloudBurst
    /// association. What a process that keeps its endpoint does to open a fresh connection, as a
    /// kernel TCP client opens a new socket with the TLS configuration it already has. Refused
    /// while calls are outstanding.
    pub fn reconnect(&self) -> Result<(), CallError> {
        let (reply, rx) = mpsc::sync_channel(1);
        self.commands
            .send(Command::Reconnect { reply })
            .map_err(|_| CallError::Closed)?;
        self.runtime.wake();
        rx.recv().map_err(|_| CallError::Closed)?
    }

    /// Hands `request` to the runtime thread in the command `make` builds around it and a reply
    /// channel, and waits for the reply.
    fn ask<T>(
        &self,
        request: &[u8],
        make: impl FnOnce(Vec<u8>, SyncSender<Result<T, CallError>>) -> Command,
    ) -> Result<T, CallError> {
        self.check_size(request)?;
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

/// A fresh association id from the OS's random source: unpredictable, so no other host can forge
/// datagrams of it (a close) without seeing its traffic, and never the id of an earlier client
/// that used the same port (a server may still hold that one).
fn new_association() -> io::Result<u64> {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut b = [0u8; 8];
    SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| io::Error::other("no OS randomness for the association id"))?;
    Ok(u64::from_be_bytes(b))
}

/// The smallest MTU the kernel knows on the paths (each a local address and the server's);
/// `None` if it cannot say for one of them.
fn probe_path_mtu(paths: &[(IpAddr, SocketAddr)]) -> Option<u32> {
    paths
        .iter()
        .map(|&(local, remote)| tailcut_sys::pmtu::route_mtu(Some(local), remote).ok())
        .collect::<Option<Vec<u32>>>()?
        .into_iter()
        .min()
}

/// Starts the runtime thread of a client speaking `scheme`; returns it and the loop it shares with
/// the calling threads.
#[allow(clippy::too_many_arguments)]
fn spawn<S: ClientScheme + 'static>(
    d: Driver,
    scheme: S,
    association: u64,
    remotes: Vec<SocketAddr>,
    cfg: NetConfig,
    commands: Receiver<Command>,
    shared: Arc<Mutex<ClientStats>>,
    wake: UnixDatagram,
) -> io::Result<(RuntimeThread, Arc<dyn CallIn>)> {
    let mut l = ClientLoop {
        d,
        scheme,
        association,
        remotes,
        cfg,
        commands: Some(commands),
        calls: BTreeMap::new(),
        waiting: VecDeque::new(),
        closed_loop: None,
        started: 0,
        last_heard: Time::ZERO,
        late_seen: Dur::ZERO,
        responses: Vec::new(),
        stats: ClientStats::default(),
        shared,
        closed: false,
    };
    // Before any caller can reach the loop: a call must find the association begun.
    l.begin();
    let shared = Arc::new(Mutex::new(l));
    let inbox: Arc<dyn CallIn> = shared.clone();
    let thread = RuntimeThread::spawn("tailcut-net-client", wake, move || run(shared))?;
    Ok((thread, inbox))
}

/// The client loop as its runtime thread and the calling threads share it.
type Shared<S> = Arc<Mutex<ClientLoop<S>>>;

fn lock<S: ClientScheme>(l: &Mutex<ClientLoop<S>>) -> std::sync::MutexGuard<'_, ClientLoop<S>> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// A call started by the calling thread on the loop it shares with the runtime thread. Handing the
/// call over a channel instead woke the runtime thread for every call: a context switch, the wake
/// socket's write and reads, and 15-20 us of a 100 KB call's latency on loopback (docs/net.md).
///
/// The caller then waits for its response on the sockets itself, if no other caller has them: the
/// runtime thread's poller stops listening to the sockets and the timer meanwhile
/// ([`Driver::hand_sockets`]), so a datagram wakes one thread, the one whose call it answers, and
/// the response needs no hand-back (a futex wake-up, ~18 us of a call on loopback). Another caller
/// that starts a call meanwhile waits for its reply over the channel as before.
trait CallIn: Send + Sync {
    /// Starts the call; true if this caller now has the sockets (and must [`CallIn::step_in`] until
    /// its reply comes, then [`CallIn::hand_back`]).
    fn call_in(&self, data: Vec<u8>, reply: ReplyTx) -> Result<bool, CallError>;
    /// What one wake-up of a caller that has the sockets does (the runtime thread's step).
    fn step_in(&self, ready: Vec<u64>) -> Result<Vec<u64>, CallError>;
    /// Gives the sockets back to the runtime thread.
    fn hand_back(&self);
    fn sleeper(&self) -> Sleeper;
}

/// Gives the sockets back however the caller leaves (its reply, an error, a panic).
struct HandBack<'a>(&'a dyn CallIn);

impl Drop for HandBack<'_> {
    fn drop(&mut self) {
        self.0.hand_back();
    }
}

impl<S: ClientScheme + 'static> CallIn for Mutex<ClientLoop<S>> {
    fn call_in(&self, data: Vec<u8>, reply: ReplyTx) -> Result<bool, CallError> {
        let mut l = lock(self);
        if l.closed {
            return Err(CallError::Closed);
        }
        let now = l.d.clock.now();
        l.waiting.push_back((data, Waiter::Caller(reply), now));
        l.start_calls(now);
        l.drain(now);
        // The runtime thread sleeps on the timer armed before this call: move it if the call
        // brought a deadline nearer (its engine's retransmission timer, its own timeout).
        let deadline = l.next_deadline();
        l.d.arm(deadline).map_err(timer_error)?;
        if l.d.caller_has_sockets() {
            return Ok(false);
        }
        if let Err(e) = l.d.hand_sockets(true) {
            // Some of the runtime thread's fds may be off already: nobody would hear them.
            l.close_all();
            return Err(CallError::Connection {
                reason: format!("taking the sockets: {e}"),
            });
        }
        Ok(true)
    }

    fn step_in(&self, ready: Vec<u64>) -> Result<Vec<u64>, CallError> {
        let mut l = lock(self);
        if l.closed {
            return Err(CallError::Closed);
        }
        let old = l.d.woke(ready, true);
        l.step(true).map_err(|e| CallError::Connection {
            reason: format!("receiving: {e}"),
        })?;
        let deadline = l.next_deadline();
        l.d.arm(deadline).map_err(timer_error)?;
        Ok(old)
    }

    fn hand_back(&self) {
        let mut l = lock(self);
        // Cannot fail on fds the pollers hold. If it did, the runtime thread would not hear the
        // sockets or the timer again: the client closes (every waiter told, later calls refused)
        // rather than leave calls waiting for ever.
        if l.d.hand_sockets(false).is_err() {
            l.close_all();
        }
    }

    fn sleeper(&self) -> Sleeper {
        lock(self).d.caller_sleeper()
    }
}

fn timer_error(e: io::Error) -> CallError {
    CallError::Connection {
        reason: format!("arming the runtime's timer: {e}"),
    }
}

/// The runtime thread: sleeps on the sockets, the timer and the wake-up socket without holding the
/// loop (callers start their calls meanwhile), then does what woke it.
fn run<S: ClientScheme>(shared: Shared<S>) -> io::Result<()> {
    let _closer = Closer(shared.clone());
    let sleeper = lock(&shared).d.sleeper();
    let mut ready = Vec::with_capacity(64);
    loop {
        let (deadline, owned) = {
            let mut l = lock(&shared);
            let deadline = l.next_deadline();
            l.d.arm(deadline)?;
            (deadline, !l.d.caller_has_sockets())
        };
        // Without the sockets and the timer (a caller has them) the thread waits for commands
        // only: no deadline of its own to spin up to or be late for.
        sleeper.sleep(deadline.filter(|_| owned), &mut ready)?;
        let mut l = lock(&shared);
        let owns = !l.d.caller_has_sockets();
        // Late for the deadline only if it had the timer while it slept and still has it.
        ready = l.d.woke(ready, owned && owns);
        if l.step(owns)? {
            return Ok(());
        }
    }
}

/// Closes the loop when its thread ends, however it ends: later calls fail at once, and callers
/// still waiting are told (their reply channels go with the calls).
struct Closer<S: ClientScheme>(Shared<S>);

impl<S: ClientScheme> Drop for Closer<S> {
    fn drop(&mut self) {
        lock(&self.0).close_all();
    }
}

struct Pending {
    started: Time,
    waited: Dur,
    deadline: Time,
    /// How far the thread's own delay moved `deadline`, at most one call timeout.
    extended: Dur,
    reply: Option<Waiter>,
    request_final: Option<MessageStats>,
}

struct ClientLoop<S: ClientScheme> {
    d: Driver,
    scheme: S,
    association: u64,
    /// The server address each path (socket) sends to and accepts datagrams from.
    remotes: Vec<SocketAddr>,
    cfg: NetConfig,
    /// Taken (dropped) when the loop closes, so that later commands fail at once instead of
    /// waiting in a queue nobody reads.
    commands: Option<Receiver<Command>>,
    /// Calls started and not yet released, by key.
    calls: BTreeMap<u64, Pending>,
    waiting: VecDeque<(Vec<u8>, Waiter, Time)>,
    closed_loop: Option<ClosedLoop>,
    /// Calls started so far.
    started: u64,
    /// When a datagram of the association last came from the server.
    last_heard: Time,
    /// The driver's lateness the engine and the call deadlines were last moved by.
    late_seen: Dur,
    /// The responses of one drain (reused), applied after the events that made requests final.
    responses: Vec<(u64, Vec<u8>)>,
    stats: ClientStats,
    shared: Arc<Mutex<ClientStats>>,
    /// The runtime thread has ended: calls fail at once.
    closed: bool,
}

impl<S: ClientScheme> ClientLoop<S> {
    /// Later calls fail at once, and every waiter is told (its reply channel goes with its call).
    fn close_all(&mut self) {
        self.closed = true;
        self.commands = None;
        self.waiting.clear();
        self.calls.clear();
        self.closed_loop = None;
        // A caller asleep on the sockets is woken (the timer fires on whichever poller listens
        // to it) and finds its reply channel gone.
        let _ = self.d.fire_timer_now();
    }

    /// Opens the association (the scheme's first datagrams, such as a SYN or a QUIC Initial).
    fn begin(&mut self) {
        let now = self.d.clock.now();
        self.last_heard = now;
        self.d.new_association(<S::E as Codec>::PREAMBLE);
        self.scheme.begin(now);
        self.drain(now);
    }

    /// What one wake-up does: datagrams, commands, timers, calls waiting to start. True when the
    /// client is to stop (its close is sent). `owns`: this thread has the sockets and the timer (the
    /// runtime thread unless a caller has them, [`CallIn`]); the other one only takes commands and
    /// starts calls, since a readiness it saw before the hand-over is the owner's to act on.
    fn step(&mut self, owns: bool) -> io::Result<bool> {
        self.note_host_delay();
        let now = self.d.clock.now();
        for i in 0..self.d.ready.len() {
            match self.d.ready[i] {
                WAKE_TOKEN => {
                    let stop = self.d.drain_wake();
                    if !self.take_commands(now) || stop {
                        let now = self.d.clock.now();
                        self.scheme.close(now);
                        self.drain(now);
                        self.say_closed();
                        return Ok(true);
                    }
                }
                k if owns && (k as usize) < self.d.socks.len() => self.receive(k as usize)?,
                _ => {}
            }
        }
        let now = self.d.clock.now();
        if owns {
            let engine = self.scheme.engine();
            if engine.poll_timeout().is_some_and(|t| t <= now) {
                engine.handle_timeout(now);
            }
            self.expire_calls(now);
        }
        self.start_calls(now);
        self.drain(now);
        self.publish();
        Ok(false)
    }

    /// Moves queued commands into the waiting list; false on shutdown.
    fn take_commands(&mut self, now: Time) -> bool {
        loop {
            let Some(next) = self.commands.as_ref().map(Receiver::try_recv) else {
                return false;
            };
            match next {
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
                Ok(Command::Reconnect { reply }) => {
                    let calls =
                        self.waiting.len() + self.calls.values().filter(|p| p.reply.is_some()).count();
                    let r = match calls {
                        0 => self.renew(now).map_err(|e| CallError::Connection {
                            reason: e.to_string(),
                        }),
                        calls => Err(CallError::InFlight { calls }),
                    };
                    let _ = reply.send(r);
                }
                Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => return false,
                Err(TryRecvError::Empty) => return true,
            }
        }
    }

    fn receive(&mut self, k: usize) -> io::Result<()> {
        let engine = self.scheme.engine();
        let stats = &mut self.stats;
        let association = self.association;
        let server = self.remotes[k];
        let clock = self.d.clock;
        let mut heard = false;
        let mut cookie = None;
        for _ in 0..RX_BUDGET {
            let n = self.d.rx.recv(&self.d.socks[k], |dg| {
                stats.datagrams_in += 1;
                if dg.from == server && <S::E as Codec>::PREAMBLE {
                    // The server checks this client's address before it opens the association.
                    if let Some((p, Control::Cookie(token))) = Preamble::parse_control(dg.bytes) {
                        if p.association == association && p.scheme == <S::E as Codec>::SCHEME {
                            stats.address_checks += 1;
                            cookie = Some(token);
                        } else {
                            stats.foreign_datagrams += 1;
                        }
                        return;
                    }
                }
                let ours = (dg.from == server)
                    .then(|| S::decode(dg.bytes, dg.ecn, k, association))
                    .flatten();
                let Some((pkt, payload)) = ours else {
                    stats.foreign_datagrams += 1;
                    return;
                };
                heard = true;
                engine.handle_packet(clock.now(), &pkt, payload);
            })?;
            // Fewer slots than asked for: the socket was empty (epoll is level-triggered, so a
            // datagram arriving since wakes the next wait). Another call would only say EAGAIN.
            if n < RX_SLOTS {
                break;
            }
        }
        if heard {
            self.last_heard = self.d.clock.now();
            self.d.heard();
        }
        // After `heard`: a server may send part of a response and then hold the rest back for the
        // cookie (its amplification limit), both in one batch.
        if let Some(token) = cookie {
            self.d
                .echo_first(k, server, <S::E as Codec>::SCHEME, self.association, token);
        }
        Ok(())
    }

    /// Tells the server this association is over, so it frees it now (schemes with the runtime's
    /// preamble; DCQUIC's CONNECTION_CLOSE says it in QUIC). Sent on every path's socket, as a path
    /// may be dead.
    fn say_closed(&mut self) {
        if !<S::E as Codec>::PREAMBLE {
            return;
        }
        // Everything of the association goes out first (a datagram the reorder hook holds too), so
        // nothing of it arrives after the close to open it again.
        self.d.flush();
        let mut d = Vec::with_capacity(crate::frame::PREAMBLE_BYTES);
        for k in 0..self.d.socks.len().min(self.remotes.len()) {
            d.clear();
            Preamble {
                scheme: <S::E as Codec>::SCHEME,
                path: k as u8,
                association: self.association,
            }
            .write_control(Control::Close, &mut d);
            self.d.send_raw(k, self.remotes[k], &d);
        }
        self.d.flush();
    }

    /// Opens a new association before a call if the server may have dropped this one: it has been
    /// silent for half `association_idle_timeout` (its idle rule, or an association it no longer
    /// has: a stream engine never gives a request up, so that silence is how a client learns it)
    /// and no caller still waits. Calls whose requests the old engine still held go with it.
    fn reopen_if_idle(&mut self, now: Time) {
        let half = Dur(self.cfg.association_idle_timeout.0 / 2);
        let waiting = self.calls.values().any(|p| p.reply.is_some());
        if !S::REOPENS || waiting || now.saturating_sub(self.last_heard) < half {
            return;
        }
        if self.renew(now).is_ok() {
            self.stats.reopened += 1;
        }
    }

    /// Ends the association (the scheme's close, then the runtime's) and starts a new one on a
    /// fresh id; calls whose requests the old engine still held go with it.
    fn renew(&mut self, now: Time) -> io::Result<()> {
        let id = new_association()?;
        self.scheme.close(now);
        self.transmit(now);
        self.say_closed();
        self.scheme
            .reopen(&self.cfg, id, now)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.d.new_association(<S::E as Codec>::PREAMBLE);
        self.calls.clear();
        self.association = id;
        self.last_heard = now;
        // The delay so far is not the new engine's.
        self.scheme.host_delay(self.d.late);
        Ok(())
    }

    /// The thread's own delay (its driver's lateness past its deadlines) goes to the engine, and
    /// moves every unanswered call's deadline on by what it added, by at most one call timeout in
    /// all: a call times out on what the network and the server took, not on time this thread
    /// could not run, and still within twice its timeout of wall time.
    fn note_host_delay(&mut self) {
        let late = self.d.late;
        let extra = late - self.late_seen;
        if extra == Dur::ZERO {
            return;
        }
        self.late_seen = late;
        self.scheme.host_delay(late);
        let cap = self.cfg.call_timeout();
        for p in self.calls.values_mut().filter(|p| p.reply.is_some()) {
            let add = extra.min(cap - p.extended);
            p.extended = p.extended + add;
            p.deadline += add;
        }
    }

    /// Starts waiting calls while the scheme takes them.
    fn start_calls(&mut self, now: Time) {
        // Before a new call can replace the ended connection, whose calls then could not be told.
        self.fail_calls(now);
        if !self.waiting.is_empty() {
            self.reopen_if_idle(now);
        }
        while let Some((data, _, _)) = self.waiting.front() {
            let Some(key) = self.scheme.start(now, data) else {
                return;
            };
            let Some((_, reply, queued)) = self.waiting.pop_front() else {
                return;
            };
            self.started += 1;
            self.calls.insert(
                key,
                Pending {
                    started: now,
                    waited: now.saturating_sub(queued),
                    deadline: now + self.cfg.call_timeout(),
                    extended: Dur::ZERO,
                    reply: Some(reply),
                    request_final: None,
                },
            );
        }
    }

    /// The drain of `docs/architecture.md`; a response can start the closed loop's next call, whose
    /// first packets then leave in the same wake-up.
    fn drain(&mut self, now: Time) {
        loop {
            self.transmit(now);
            // A response may be decoded before the STOP or ACK that made its request final, in the
            // same wake-up (they came on different paths): the request's counters are taken from
            // that event, not read from an engine that no longer holds the message.
            let mut responses = std::mem::take(&mut self.responses);
            while let Some(ev) = self.scheme.engine().poll_event() {
                match self.scheme.on_event(now, ev) {
                    Some(CallEvent::RequestFinal { key, stats }) => {
                        if let Some(p) = self.calls.get_mut(&key) {
                            p.request_final = Some(stats);
                        }
                        self.release(now, key);
                        // A long-lived association otherwise keeps its largest message's records.
                        self.scheme.engine().release_memory();
                    }
                    Some(CallEvent::Broken) => self.stats.protocol_errors += 1,
                    Some(CallEvent::Stale) => self.stats.stale_responses += 1,
                    Some(CallEvent::Response { key, bytes }) => responses.push((key, bytes)),
                    None => {}
                }
            }
            for (key, bytes) in responses.drain(..) {
                self.on_response(now, key, bytes);
            }
            self.responses = responses;
            let before = self.started;
            self.start_calls(now);
            if self.started == before {
                break;
            }
        }
        self.d.flush();
    }

    /// What the engine has to send, path `p` on socket `p` (modulo the sockets).
    fn transmit(&mut self, now: Time) {
        let remotes = &self.remotes;
        self.d
            .drain_transmits(now, self.scheme.engine(), self.association, |p| {
                let k = p % remotes.len().max(1);
                remotes.get(k).map(|&to| (k, to))
            });
    }

    fn on_response(&mut self, now: Time, key: u64, bytes: Vec<u8>) {
        let Some(known) = self
            .calls
            .get(&key)
            .filter(|p| p.reply.is_some())
            .map(|p| p.request_final)
        else {
            self.stats.stale_responses += 1;
            return;
        };
        let settled = known.or_else(|| self.scheme.settle(now, key));
        let so_far = || self.scheme.engine_ref().message_stats(key);
        let request = settled.or_else(so_far).unwrap_or_default();
        let Some(p) = self.calls.get_mut(&key) else {
            return;
        };
        let Some(reply) = p.reply.take() else {
            return;
        };
        p.request_final = settled;
        let stats = CallStats {
            latency: now.saturating_sub(p.started),
            waited_for_id: p.waited,
            request,
            request_final: settled.is_some(),
        };
        // Counted and published before the caller is woken: a caller that reads `Client::stats` right
        // after its call returned must see the call (it raced the loop thread's publication and read 6
        // of 7 on a loaded machine).
        self.stats.calls_completed += 1;
        match reply {
            Waiter::Caller(tx) => {
                self.publish();
                let _ = tx.send(Ok(Reply { bytes, stats }));
            }
            Waiter::Loop => self.loop_step(now, &bytes, stats),
        }
        self.release(now, key);
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

    /// Forgets call `key` once it is answered (or timed out) and its request is final.
    fn release(&mut self, now: Time, key: u64) {
        let done = self
            .calls
            .get(&key)
            .is_some_and(|p| p.reply.is_none() && p.request_final.is_some());
        if done {
            self.calls.remove(&key);
            self.scheme.release(now, key);
        }
    }

    fn expire_calls(&mut self, now: Time) {
        let due: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, p)| p.reply.is_some() && p.deadline <= now)
            .map(|(k, _)| *k)
            .collect();
        let timeout = self.cfg.call_timeout();
        for key in due {
            // A call still making progress is not over: its timeout counts from its latest.
            let alive = self
                .scheme
                .last_progress(key)
                .map(|t| t + timeout)
                .filter(|&d| d > now);
            if let (Some(d), Some(p)) = (alive, self.calls.get_mut(&key)) {
                p.deadline = d;
                continue;
            }
            if self.end_call(key, CallError::Timeout) {
                self.stats.calls_timed_out += 1;
            }
            // A request the engine no longer holds will never be reported final: treat it as
            // final so the call (and its id) goes.
            let gone = self.scheme.engine_ref().message_stats(key).is_none();
            if let Some(p) = self.calls.get_mut(&key) {
                if p.request_final.is_none() && gone {
                    p.request_final = Some(MessageStats::default());
                }
            }
            self.release(now, key);
        }
    }

    /// Ends every unanswered call with the reason its connection ended, at once rather than at its
    /// timeout: the handshake's reason (an untrusted certificate, a wrong server name) is what the
    /// caller needs, not a timeout seconds later.
    fn fail_calls(&mut self, now: Time) {
        if !self.calls.values().any(|p| p.reply.is_some()) {
            return;
        }
        let Some(reason) = self.scheme.failure() else {
            return;
        };
        let keys: Vec<u64> = self.calls.keys().copied().collect();
        for key in keys {
            let err = CallError::Connection {
                reason: reason.clone(),
            };
            if self.end_call(key, err) {
                self.stats.calls_failed += 1;
            }
            // The ended engine reports nothing more about its requests.
            if let Some(p) = self.calls.get_mut(&key) {
                p.request_final.get_or_insert_with(MessageStats::default);
            }
            self.release(now, key);
        }
    }

    /// Tells call `key`'s waiter (its caller, or the closed loop it belongs to) that it failed with
    /// `err`; true if it still had one.
    fn end_call(&mut self, key: u64, err: CallError) -> bool {
        match self.calls.get_mut(&key).and_then(|p| p.reply.take()) {
            Some(Waiter::Caller(tx)) => {
                let _ = tx.send(Err(err));
                true
            }
            Some(Waiter::Loop) => {
                if let Some(l) = self.closed_loop.take() {
                    let _ = l.reply.send(Err(err));
                }
                true
            }
            None => false,
        }
    }

    fn next_deadline(&self) -> Option<Time> {
        // Only unanswered calls: an answered call waits for its request to be final, which the
        // engine's own deadline brings.
        let calls = self
            .calls
            .values()
            .filter(|p| p.reply.is_some())
            .map(|p| p.deadline)
            .min();
        let start = self.scheme.next_start().filter(|_| !self.waiting.is_empty());
        [self.scheme.engine_ref().poll_timeout(), calls, start]
            .into_iter()
            .flatten()
            .min()
    }

    fn publish(&mut self) {
        self.stats.dropped_by_hook = self.d.dropped_by_hook;
        self.stats.host_delay_ns = self.d.late.0;
        self.stats.tx = self.d.lanes.counters;
        self.scheme.publish(&mut self.stats);
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = self.stats;
    }
}
