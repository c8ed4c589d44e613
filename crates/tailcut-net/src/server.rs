//! The server: answers requests of one scheme from any number of clients, one engine per association.
//! The loop is the same for every scheme; what a request is to the engine is the scheme's
//! ([`ServerScheme`]: `cloudburst.rs`, `tcp.rs`, `dcquic.rs`).
//!
//! The handler runs on the runtime thread (`request bytes -> response bytes` into a reused buffer), so
//! a slow handler delays every association; hand work to other threads inside it if that matters.
//!
//! Memory is bounded under any peer input: at most `max_associations` engines (only a datagram that
//! opens a connection of the scheme creates one: a coded CloudBurst packet, a TCP SYN, a QUIC
//! Initial), each engine's state is capped by its configuration (CloudBurst's tables and 256 wire
//! ids; TCP's receive window, and messages up to `stream_max_message_bytes`, a peer announcing more
//! is dropped), every other per-association array has a fixed size, and the TCP family remembers
//! the route MTU of a bounded number of client addresses (`route_mtus.rs`).
//!
//! No forged datagram pushes a client out. Once the server is full (or always, with
//! `address_validation = always`), an opening datagram allocates nothing until its source shows it
//! receives at its address: it gets a stateless cookie to echo (`address_check.rs`; DCQUIC: QUIC's
//! Retry). Only a checked opener may replace an association, and it replaces the least recently
//! active of those whose client never showed it receives (no handshake completed, no response
//! acknowledged) before any that did.

use crate::address_check::AddressCheck;
use crate::codec::Codec;
use crate::config::{AddressValidation, Family, NetConfig};
use crate::driver::{Driver, HeldDatagram, RX_BUDGET, WAKE_TOKEN};
use crate::frame::{Control, Preamble, MAX_PATHS, PREAMBLE_BYTES, TOKEN_BYTES};
use crate::io::{PathSocket, RX_SLOTS};
use crate::runtime_thread::RuntimeThread;
use crate::server_scheme::{route_by_preamble, AddressProof, Request, ServerScheme};
pub use crate::stats::ServerStats;
use crate::timers::Timers;
use crate::{cloudburst, dcquic, tcp};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::sync::{Arc, Mutex};
use tailcut_proto::mptcp::MptcpEndpoint;
use tailcut_proto::tcp::TcpEndpoint;
use tailcut_proto::{AppEvent, Dur, Ecn, Engine, MessageStats, Time};

/// The request handler: reads the request, writes the response into the (cleared) buffer, and
/// returns a tag the response's final counters are reported under ([`Server::bind_observed`]).
pub type Handler = Box<dyn FnMut(&[u8], &mut Vec<u8>) -> u64 + Send>;

/// Told each response's final sender counters ([`MessageStats`]: acknowledged, or given up), under
/// the tag its request's handler returned.
pub type ResponseObserver = Box<dyn FnMut(u64, MessageStats) + Send>;

pub struct Server {
    runtime: RuntimeThread,
    stats: Arc<Mutex<ServerStats>>,
    local: SocketAddr,
}

impl Server {
    /// Binds `addr` (port 0 picks one) and starts the runtime thread.
    pub fn bind(
        addr: SocketAddr,
        cfg: NetConfig,
        mut handler: impl FnMut(&[u8], &mut Vec<u8>) + Send + 'static,
    ) -> io::Result<Server> {
        Self::start(
            addr,
            cfg,
            Box::new(move |req: &[u8], out: &mut Vec<u8>| {
                handler(req, out);
                0
            }),
            None,
        )
    }

    /// [`Server::bind`], and `observer` is told each response's final counters under the tag the
    /// handler returned for its request (a testbed agent charges them to the request's flow). The
    /// tags of responses not yet final are held per association and dropped with it, so they are
    /// bounded as the responses in flight are.
    pub fn bind_observed(
        addr: SocketAddr,
        cfg: NetConfig,
        handler: impl FnMut(&[u8], &mut Vec<u8>) -> u64 + Send + 'static,
        observer: impl FnMut(u64, MessageStats) + Send + 'static,
    ) -> io::Result<Server> {
        Self::start(addr, cfg, Box::new(handler), Some(Box::new(observer)))
    }

    fn start(
        addr: SocketAddr,
        cfg: NetConfig,
        handler: Handler,
        observer: Option<ResponseObserver>,
    ) -> io::Result<Server> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let sock = PathSocket::bind(addr, cfg.socket_buffer_bytes)?;
        sock.set_dscp(cfg.dscp())?;
        let local = sock.local_addr()?;
        let (wake, wake_rx) = UnixDatagram::pair()?;
        let driver = Driver::new(vec![sock], wake_rx, &cfg)?;
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        let shared = stats.clone();
        let runtime = match cfg.family() {
            Family::CloudBurst => {
                let scheme = cloudburst::ServerSide::new(&cfg);
                spawn(driver, scheme, cfg, handler, observer, shared, wake)?
            }
            Family::Tcp => {
                let scheme = tcp::ServerSide::<TcpEndpoint>::new(&cfg);
                spawn(driver, scheme, cfg, handler, observer, shared, wake)?
            }
            Family::Mptcp => {
                let scheme = tcp::ServerSide::<MptcpEndpoint>::new(&cfg);
                spawn(driver, scheme, cfg, handler, observer, shared, wake)?
            }
            Family::Dcquic => {
                let epoch = driver.clock.instant_epoch();
                let engines = dcquic::shared(&cfg, epoch, cfg.path_max_payload())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let scheme = dcquic::ServerSide::new(engines).map_err(io::Error::other)?;
                spawn(driver, scheme, cfg, handler, observer, shared, wake)?
            }
        };
        Ok(Server {
            runtime,
            stats,
            local,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn stats(&self) -> ServerStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the runtime thread and reports how it ended.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.runtime.stop()
    }
}

fn spawn<S: ServerScheme>(
    d: Driver,
    scheme: S,
    cfg: NetConfig,
    handler: Handler,
    observer: Option<ResponseObserver>,
    shared: Arc<Mutex<ServerStats>>,
    wake: UnixDatagram,
) -> io::Result<RuntimeThread> {
    let check = AddressCheck::new().map_err(io::Error::other)?;
    RuntimeThread::spawn("tailcut-net-server", wake, move || {
        ServerLoop {
            check,
            reply: Vec::new(),
            d,
            scheme,
            cfg,
            handler,
            observer,
            tags: BTreeMap::new(),
            assocs: BTreeMap::new(),
            late_seen: Dur::ZERO,
            closed: ClosedIds::default(),
            timers: Timers::default(),
            next_sweep: Time::ZERO,
            backlogged: false,
            response: Vec::new(),
            stats: ServerStats::default(),
            shared,
        }
        .run()
    })
}

/// Closed associations remembered: the tail of one (its last datagrams on other paths) arrives within
/// a few wake-ups of its close, long before 4,096 more clients closed.
const CLOSED_REMEMBERED: usize = 4096;

/// The ids of the last [`CLOSED_REMEMBERED`] associations closed by their clients.
#[derive(Default)]
struct ClosedIds {
    order: VecDeque<u64>,
    set: HashSet<u64>,
}

impl ClosedIds {
    fn insert(&mut self, id: u64) {
        if !self.set.insert(id) {
            return;
        }
        if self.order.len() == CLOSED_REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.order.push_back(id);
    }

    fn contains(&self, id: u64) -> bool {
        self.set.contains(&id)
    }
}

/// The slot of source address `from` among an association's remotes: its own, else the first free
/// one, else the last (a peer with more addresses than slots shares it).
fn slot_of(remotes: &mut [Option<SocketAddr>; MAX_PATHS], from: SocketAddr) -> usize {
    remotes
        .iter()
        .position(|r| *r == Some(from))
        .or_else(|| remotes.iter().position(Option::is_none))
        .unwrap_or(MAX_PATHS - 1)
}

struct Association<S: ServerScheme> {
    engine: S::E,
    state: S::State,
    /// Where each path's datagrams come from: replies on path `i` go there.
    remotes: [Option<SocketAddr>; MAX_PATHS],
    last_active: Time,
    /// Its client showed it receives at its address: an echoed cookie or Retry token, a completed
    /// handshake or an acknowledged response. Associations without it are replaced first.
    proven: bool,
    /// Bytes received from and sent to the client while it is not `proven`: the server sends at most
    /// [`AMPLIFICATION`] times what it received until then.
    unproven_in: u64,
    unproven_out: u64,
    /// A cookie went out since the client's last datagram (one per datagram at most).
    cookie_sent: bool,
    /// The datagram the limit stopped at, sent once the client shows its address.
    held_back: Option<HeldDatagram>,
}

impl<S: ServerScheme> Association<S> {
    /// What the anti-amplification limit still lets the server send to a client that has not shown
    /// its address; None once it has.
    fn budget(&self) -> Option<u64> {
        (!self.proven).then(|| (AMPLIFICATION * self.unproven_in).saturating_sub(self.unproven_out))
    }

    /// `n` bytes went to the client: they count against the limit until it shows its address.
    fn sent(&mut self, n: u64) {
        if !self.proven {
            self.unproven_out += n;
        }
    }
}

/// How many times the bytes it received a server sends to an address its client has not shown,
/// QUIC's anti-amplification limit (RFC 9000 Sec. 8.1): without it a forged one-packet CloudBurst
/// request from a victim's address made the server spray the response at the victim until its
/// transmission timeout (366 datagrams per forged request with a 1 s t, `cpu_per_forged_opener`).
/// A real client reaching the limit gets a cookie and shows its address with an echo (one round
/// trip, only for a response over three times its request before the client showed anything).
pub const AMPLIFICATION: u64 = 3;

/// How much the server thread's delay grows before its associations' engines are told.
const HOST_DELAY_STEP: Dur = Dur::from_millis(1);

struct ServerLoop<S: ServerScheme> {
    d: Driver,
    check: AddressCheck,
    /// A challenge being sent (reused).
    reply: Vec<u8>,
    scheme: S,
    cfg: NetConfig,
    handler: Handler,
    observer: Option<ResponseObserver>,
    /// With an observer: the handler's tag of each response not yet final, by (association, the
    /// response's engine message id).
    tags: BTreeMap<(u64, u64), u64>,
    assocs: BTreeMap<u64, Association<S>>,
    /// The driver's lateness the engines were last told of (`ServerScheme::host_delay`).
    late_seen: Dur,
    /// Ids of associations their clients closed, newest last (at most [`CLOSED_REMEMBERED`]).
    closed: ClosedIds,
    timers: Timers,
    /// When idle associations are next looked for.
    next_sweep: Time,
    /// The last receive stopped at its budget with datagrams left.
    backlogged: bool,
    response: Vec<u8>,
    stats: ServerStats,
    shared: Arc<Mutex<ServerStats>>,
}

impl<S: ServerScheme> ServerLoop<S> {
    /// How often idle associations are looked for: an association goes between one and 1.25
    /// `association_idle_timeout`s after its last datagram.
    fn sweep_every(&self) -> Dur {
        Dur(self.cfg.association_idle_timeout.0 / 4).max(Dur::from_micros(1))
    }

    fn run(&mut self) -> io::Result<()> {
        self.next_sweep = self.d.clock.now() + self.sweep_every();
        loop {
            let deadline = self
                .timers
                .earliest()
                .map_or(self.next_sweep, |t| t.min(self.next_sweep));
            self.d.wait(Some(deadline))?;
            // In steps: every association is told, and a loaded thread is a little late at most
            // wake-ups; a millisecond is nothing beside the timers that use it (CloudBurst's t).
            if self.d.late >= self.late_seen + HOST_DELAY_STEP {
                self.late_seen = self.d.late;
                for a in self.assocs.values_mut() {
                    S::host_delay(&mut a.engine, self.late_seen);
                }
            }
            for i in 0..self.d.ready.len() {
                match self.d.ready[i] {
                    WAKE_TOKEN if self.d.drain_wake() => {
                        self.close_all();
                        return Ok(());
                    }
                    k if (k as usize) < self.d.socks.len() => self.receive(k as usize)?,
                    _ => {}
                }
            }
            let now = self.d.clock.now();
            while let Some(id) = self.timers.pop_due(now) {
                if let Some(a) = self.assocs.get_mut(&id) {
                    a.engine.handle_timeout(now);
                }
                self.drain(now, id);
            }
            // Not while datagrams wait behind the receive budget: their associations are active.
            if now >= self.next_sweep && !self.backlogged {
                self.expire_idle(now);
                self.next_sweep = now + self.sweep_every();
            }
            // Counters first, so that a client holding a response sees them include its request.
            self.publish();
            self.d.flush();
        }
    }

    fn receive(&mut self, k: usize) -> io::Result<()> {
        self.backlogged = true;
        for _ in 0..RX_BUDGET {
            // Datagrams are handled after the receive call returns, one slot batch at a time: the
            // closure only records where each one is, so the engines can be borrowed afterwards.
            let mut batch = std::mem::take(&mut self.d.batch);
            batch.clear();
            let n = self.d.rx.recv(&self.d.socks[k], |dg| {
                batch.push((dg.from, dg.ecn, dg.offset, dg.bytes.len()));
            })?;
            for &(from, ecn, at, len) in &batch {
                self.on_datagram(from, ecn, at, len);
            }
            self.d.batch = batch;
            // Fewer slots than asked for: the socket was empty (epoll is level-triggered, so a
            // datagram arriving since wakes the next wait). Another call would only say EAGAIN.
            if n < RX_SLOTS {
                self.backlogged = false;
                break;
            }
        }
        Ok(())
    }

    fn on_datagram(&mut self, from: SocketAddr, ecn: Ecn, at: usize, len: usize) {
        self.stats.datagrams_in += 1;
        let now = self.d.clock.now();
        let control = <S::E as Codec>::PREAMBLE
            .then(|| Preamble::parse_control(self.d.rx.bytes(at, len)))
            .flatten();
        let (r, proven) = match control {
            None => {
                let assocs = &self.assocs;
                let routed = self
                    .scheme
                    .route(self.d.rx.bytes(at, len), &|id| assocs.contains_key(&id));
                let Some(r) = routed else {
                    self.stats.foreign_datagrams += 1;
                    return;
                };
                (r, false)
            }
            Some((p, Control::Close)) => {
                self.on_close(p, from);
                return;
            }
            Some((p, Control::Echo { token, bytes })) if p.scheme == <S::E as Codec>::SCHEME => {
                // A bad token proves nothing, and costs nothing either: the datagram is taken as
                // if it came plain, so a cookie forged to a client (which would then echo it)
                // cannot cut it off.
                let valid = self.check.valid(now, from, p.scheme, p.association, &token);
                self.stats.bad_tokens += u64::from(!valid);
                let assocs = &self.assocs;
                let live = |id| assocs.contains_key(&id);
                let header = PREAMBLE_BYTES + TOKEN_BYTES;
                let Some(r) = route_by_preamble(&self.scheme, &p, bytes, header, &live) else {
                    self.stats.foreign_datagrams += 1;
                    return;
                };
                (r, valid)
            }
            // A cookie is the server's to send, and an echo must name this server's scheme.
            Some(_) => {
                self.stats.foreign_datagrams += 1;
                return;
            }
        };
        let (pat, plen) = (at + r.skip, len - r.skip);
        if r.opens {
            // A client never uses an id again after closing it (it reopens under a new random id),
            // so whatever of it arrives late is the old association's and must not open a new one.
            if self.closed.contains(r.id) {
                self.stats.after_close += 1;
                return;
            }
            let full = self.assocs.len() >= self.cfg.max_associations;
            let mut proven = proven;
            if !proven && (full || self.cfg.address_validation == AddressValidation::Always) {
                self.reply.clear();
                let bytes = self.d.rx.bytes(pat, plen);
                match self.scheme.check_address(r.id, bytes, from, now, &mut self.reply) {
                    AddressProof::Shown => proven = true,
                    AddressProof::Challenged => {
                        self.d.send_raw(0, from, &self.reply);
                        self.stats.address_checks += 1;
                        return;
                    }
                    AddressProof::Refused => return,
                    AddressProof::Runtime => {
                        self.send_cookie(now, from, r.id, r.path.unwrap_or(0));
                        return;
                    }
                }
            }
            if proven {
                self.stats.addresses_validated += 1;
            }
            self.open(now, r.id, proven, from);
        }
        let Some(a) = self.assocs.get_mut(&r.id) else {
            return;
        };
        // A valid echo on an open association shows the address: what was held back goes now.
        a.proven |= proven;
        if plen == 0 && proven {
            // A valid echo with no engine bytes: the client answering a cookie with nothing to send.
            a.last_active = now;
            self.drain(now, r.id);
            return;
        }
        let path = match r.path {
            Some(p) => usize::from(p),
            None => slot_of(&mut a.remotes, from),
        };
        let Some((pkt, payload)) = S::E::decode(self.d.rx.bytes(pat, plen), ecn, path as u8) else {
            self.stats.foreign_datagrams += 1;
            return;
        };
        a.remotes[path] = Some(from);
        a.last_active = now;
        if !a.proven {
            a.unproven_in += len as u64;
            a.cookie_sent = false;
        }
        a.engine.handle_packet(now, &pkt, payload);
        self.drain(now, r.id);
    }

    /// A client's close frees its association, if it comes from an address the association has heard
    /// from: a close forged from elsewhere (which must also guess the 64-bit id) frees nothing.
    fn on_close(&mut self, p: Preamble, from: SocketAddr) {
        let known = self
            .assocs
            .get(&p.association)
            .is_some_and(|a| p.scheme == <S::E as Codec>::SCHEME && a.remotes.contains(&Some(from)));
        if known {
            self.drop_association(p.association);
            self.closed.insert(p.association);
            self.stats.associations_closed += 1;
        } else {
            self.stats.foreign_datagrams += 1;
        }
    }

    /// Answers an opener that must show its address with the runtime's cookie, on its path.
    fn send_cookie(&mut self, now: Time, from: SocketAddr, id: u64, path: u8) {
        let scheme = <S::E as Codec>::SCHEME;
        let token = self.check.token(now, from, scheme, id);
        self.reply.clear();
        Preamble {
            scheme,
            path,
            association: id,
        }
        .write_control(Control::Cookie(token), &mut self.reply);
        self.d.send_raw(0, from, &self.reply);
        self.stats.address_checks += 1;
    }

    /// Opens association `id` (`proven`: its client showed its address), replacing another if the
    /// server is full: the least recently active of those never proven, else of all.
    fn open(&mut self, now: Time, id: u64, proven: bool, from: SocketAddr) {
        if self.assocs.len() >= self.cfg.max_associations {
            let victim = self
                .assocs
                .iter()
                .min_by_key(|(k, a)| (a.proven, a.last_active, **k))
                .map(|(k, _)| *k);
            if let Some(k) = victim {
                self.drop_association(k);
                self.stats.associations_evicted += 1;
            }
        }
        // The configuration was validated at bind time.
        let Some((mut engine, state)) = self.scheme.open_from(id, now, from) else {
            return;
        };
        // The delay so far is not this association's.
        S::host_delay(&mut engine, self.d.late);
        self.assocs.insert(
            id,
            Association {
                engine,
                state,
                remotes: [None; MAX_PATHS],
                last_active: now,
                proven,
                unproven_in: 0,
                unproven_out: 0,
                cookie_sent: false,
                held_back: None,
            },
        );
        self.stats.associations_opened += 1;
    }

    /// Drops every association that sent nothing for `association_idle_timeout`, telling its peer
    /// where the scheme has a way to (DCQUIC's CONNECTION_CLOSE).
    fn expire_idle(&mut self, now: Time) {
        let idle = self.cfg.association_idle_timeout;
        let gone: Vec<u64> = self
            .assocs
            .iter()
            .filter(|(_, a)| a.last_active + idle <= now)
            .map(|(k, _)| *k)
            .collect();
        for id in gone {
            if let Some(a) = self.assocs.get_mut(&id) {
                self.scheme.close(&mut a.engine, now);
            }
            self.drain(now, id);
            // The drain may have found the connection finished and dropped it already.
            if self.assocs.contains_key(&id) {
                self.drop_association(id);
                self.stats.associations_expired += 1;
            }
        }
    }

    fn drop_association(&mut self, id: u64) {
        // Responses not yet final go with it, reported with their counters so far (a client that
        // closes as soon as it has its reply leaves the last acknowledgement unprocessed; the
        // simulator reports a message unfinished at the end of a run the same way).
        let held: Vec<(u64, u64)> = self
            .tags
            .range((id, 0)..=(id, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        let a = self.assocs.remove(&id);
        for (assoc, msg) in held {
            let stats = a
                .as_ref()
                .and_then(|a| a.engine.message_stats(msg))
                .unwrap_or_default();
            Self::observe(&mut self.observer, &mut self.tags, assoc, msg, stats);
        }
        if let Some(a) = a {
            self.scheme.forget(id, &a.state);
        }
        self.timers.set(id, None);
    }

    /// Response `msg` of association `id` is final: the observer gets its counters under its tag.
    fn observe(
        observer: &mut Option<ResponseObserver>,
        tags: &mut BTreeMap<(u64, u64), u64>,
        id: u64,
        msg: u64,
        stats: MessageStats,
    ) {
        if let (Some(o), Some(tag)) = (observer.as_mut(), tags.remove(&(id, msg))) {
            o(tag, stats);
        }
    }

    /// The drain of `docs/architecture.md` for one association: transmits, then events (a request
    /// runs the handler and queues the response, so transmits again), then the next deadline.
    fn drain(&mut self, now: Time, id: u64) {
        let Some(a) = self.assocs.get_mut(&id) else {
            self.timers.set(id, None);
            return;
        };
        let mut held = false;
        // The datagram the limit stopped at goes first, once the address is shown or the client's
        // later datagrams made room for it.
        let len = a.held_back.as_ref().map_or(0, |d| d.3.len() as u64);
        if len > 0 && a.budget().is_none_or(|b| len <= b) {
            if let Some(d) = a.held_back.take() {
                self.d.send_held(&d);
                a.sent(len);
            }
        }
        loop {
            let remotes = a.remotes;
            // Only the schemes with the preamble have the cookie that lifts the limit; DCQUIC's
            // connections keep QUIC's own (quinn's).
            let limit = a.budget().filter(|_| <S::E as Codec>::PREAMBLE);
            let over = &mut a.held_back;
            let (sent, stopped) = self
                .d
                .drain_transmits_within(now, &mut a.engine, id, limit, over, |p| {
                    let to = remotes
                        .get(p)
                        .copied()
                        .flatten()
                        .or_else(|| remotes.iter().flatten().next().copied());
                    to.map(|to| (0, to))
                });
            a.sent(sent);
            held |= stopped;
            let mut answered = false;
            while let Some(ev) = a.engine.poll_event() {
                match ev {
                    AppEvent::MessageReceived { msg } => {
                        match self.scheme.request(&mut a.engine, &mut a.state, now, msg) {
                            Request::Answer { key, data } => {
                                self.stats.requests += 1;
                                self.response.clear();
                                let tag = (self.handler)(&data, &mut self.response);
                                self.scheme
                                    .respond(&mut a.engine, &mut a.state, now, key, &self.response);
                                if self.observer.is_some() {
                                    self.tags.insert((id, S::response_msg(key)), tag);
                                }
                                // Active until its response is out, however long the handler took.
                                a.last_active = self.d.clock.now();
                                answered = true;
                            }
                            Request::Duplicate => self.stats.duplicate_requests += 1,
                            Request::None => {}
                            Request::Broken => {
                                self.stats.protocol_errors += 1;
                                self.drop_association(id);
                                return;
                            }
                        }
                    }
                    AppEvent::MessageAcked { msg, stats } => {
                        // The client had the response: it receives at its address.
                        a.proven = true;
                        self.stats.responses_acked += 1;
                        self.scheme.acked(&mut a.state, msg);
                        Self::observe(&mut self.observer, &mut self.tags, id, msg, stats);
                        // As the simulator does: memory follows the messages in flight, not the
                        // largest one an association ever carried.
                        a.engine.release_memory();
                    }
                    AppEvent::MessageFailed { msg, stats } => {
                        self.stats.responses_failed += 1;
                        self.scheme.acked(&mut a.state, msg);
                        Self::observe(&mut self.observer, &mut self.tags, id, msg, stats);
                        a.engine.release_memory();
                    }
                    // A handshake the client completed answered the server's first reply.
                    AppEvent::Connected => a.proven = true,
                }
            }
            if !answered {
                break;
            }
        }
        if self.scheme.finished(&a.engine, &mut self.stats) {
            self.drop_association(id);
            return;
        }
        if held && !a.proven {
            // Nothing more goes until the client shows its address (or sends more): no timer, or
            // an engine that wants to send now would spin the loop.
            self.timers.set(id, None);
            self.stats.amplification_limited += 1;
            let to = (!a.cookie_sent)
                .then(|| {
                    a.remotes
                        .iter()
                        .enumerate()
                        .find_map(|(i, r)| r.map(|r| (r, i as u8)))
                })
                .flatten();
            a.cookie_sent = true;
            if let Some((to, path)) = to {
                self.send_cookie(now, to, id, path);
            }
            return;
        }
        self.timers.set(id, a.engine.poll_timeout());
    }

    /// Closes every association's connection and sends what that makes the engines say.
    fn close_all(&mut self) {
        let now = self.d.clock.now();
        let ids: Vec<u64> = self.assocs.keys().copied().collect();
        for id in ids {
            if let Some(a) = self.assocs.get_mut(&id) {
                self.scheme.close(&mut a.engine, now);
            }
            self.drain(now, id);
        }
        self.d.flush();
    }

    fn publish(&mut self) {
        self.scheme
            .publish(self.assocs.values().map(|a| &a.engine), &mut self.stats);
        self.stats.associations = self.assocs.len() as u64;
        self.stats.dropped_by_hook = self.d.dropped_by_hook;
        self.stats.tx = self.d.lanes.counters;
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = self.stats;
    }
}
