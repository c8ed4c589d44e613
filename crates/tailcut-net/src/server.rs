//! The server: answers CloudBurst requests from any number of clients, one engine per association.
//!
//! The handler runs on the runtime thread (`request bytes -> response bytes` into a reused buffer), so
//! a slow handler delays every association; hand work to other threads inside it if that matters.
//!
//! Memory is bounded under any peer input: at most `max_associations` engines (the least recently
//! active is dropped for a new one, and only a well-formed coded CloudBurst packet creates one), each
//! engine's tables are capped by its configuration and the 256 wire ids, and every other per-association
//! array has a fixed size.

use crate::config::NetConfig;
use crate::driver::{Driver, RX_BUDGET, WAKE_TOKEN};
use crate::frame::{Preamble, MAX_PATHS, PREAMBLE_BYTES, SCHEME_CLOUDBURST};
use crate::io::{PathSocket, TxCounters};
use crate::runtime_thread::RuntimeThread;
use crate::timers::Timers;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::sync::{Arc, Mutex};
use tailcut_proto::cloudburst::{CbHeader, CloudBurstConfig, CloudBurstEndpoint, Kind, TableSizes};
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::{AppEvent, Dur, Ecn, Engine, FiveTuple, MsgId, Outgoing, Packet, Time};

/// Server-side totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub requests: u64,
    /// Requests decoded again (packets that outlived the receiver's memory of the message), not
    /// handed to the handler twice.
    pub duplicate_requests: u64,
    pub responses_acked: u64,
    pub responses_failed: u64,
    pub datagrams_in: u64,
    /// Datagrams with no valid preamble, or that would open an association without being a coded
    /// CloudBurst packet.
    pub foreign_datagrams: u64,
    pub associations: u64,
    pub associations_opened: u64,
    pub associations_evicted: u64,
    /// Entries summed over every association's engine tables.
    pub tables: TableSizes,
    pub engine_malformed: u64,
    pub dropped_by_hook: u64,
    pub tx: TxCounters,
}

/// The request handler: reads the request, writes the response into the (cleared) buffer.
pub type Handler = Box<dyn FnMut(&[u8], &mut Vec<u8>) + Send>;

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
        handler: impl FnMut(&[u8], &mut Vec<u8>) + Send + 'static,
    ) -> io::Result<Server> {
        cfg.validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let sock = PathSocket::bind(addr, cfg.socket_buffer_bytes)?;
        let local = sock.local_addr()?;
        let (wake, wake_rx) = UnixDatagram::pair()?;
        let driver = Driver::new(vec![sock], wake_rx, &cfg)?;
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        let shared = stats.clone();
        let handler: Handler = Box::new(handler);
        let runtime = RuntimeThread::spawn("tailcut-net-server", wake, move || {
            ServerLoop::new(driver, cfg, handler, shared).run()
        })?;
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

struct Association {
    engine: CloudBurstEndpoint,
    /// Where each path's datagrams come from: replies on path `i` go there.
    remotes: [Option<SocketAddr>; MAX_PATHS],
    /// When each wire id's request was last handed to the handler.
    delivered: [Option<Time>; 256],
    last_active: Time,
}

struct ServerLoop {
    d: Driver,
    cfg: NetConfig,
    engine_cfg: CloudBurstConfig,
    handler: Handler,
    assocs: BTreeMap<u64, Association>,
    timers: Timers,
    response: Vec<u8>,
    stats: ServerStats,
    shared: Arc<Mutex<ServerStats>>,
}

impl ServerLoop {
    fn new(d: Driver, cfg: NetConfig, handler: Handler, shared: Arc<Mutex<ServerStats>>) -> ServerLoop {
        ServerLoop {
            d,
            engine_cfg: cfg.engine_config(),
            cfg,
            handler,
            assocs: BTreeMap::new(),
            timers: Timers::default(),
            response: Vec::new(),
            stats: ServerStats::default(),
            shared,
        }
    }

    fn run(&mut self) -> io::Result<()> {
        loop {
            let deadline = self.timers.earliest();
            self.d.wait(deadline)?;
            for i in 0..self.d.ready.len() {
                match self.d.ready[i] {
                    WAKE_TOKEN if self.d.drain_wake() => return Ok(()),
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
            // Counters first, so that a client holding a response sees them include its request.
            self.publish();
            self.d.flush();
        }
    }

    fn receive(&mut self, k: usize) -> io::Result<()> {
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
            if n == 0 {
                break;
            }
        }
        Ok(())
    }

    fn on_datagram(&mut self, from: SocketAddr, ecn: Ecn, at: usize, len: usize) {
        self.stats.datagrams_in += 1;
        let now = self.d.clock.now();
        let preamble = Preamble::parse(self.d.rx.bytes(at, len))
            .map(|(p, _)| p)
            .filter(|p| p.scheme == SCHEME_CLOUDBURST);
        let Some(p) = preamble else {
            self.stats.foreign_datagrams += 1;
            return;
        };
        let (pat, plen) = (at + PREAMBLE_BYTES, len - PREAMBLE_BYTES);
        if !self.assocs.contains_key(&p.association) {
            let opens = CbHeader::parse(self.engine_cfg.layout(), self.d.rx.bytes(pat, plen))
                .is_ok_and(|h| h.kind != Kind::Stop);
            if !opens {
                self.stats.foreign_datagrams += 1;
                return;
            }
            self.open(now, p.association);
        }
        let Some(a) = self.assocs.get_mut(&p.association) else {
            return;
        };
        a.remotes[p.path as usize] = Some(from);
        a.last_active = now;
        let pkt = Packet {
            ecn,
            ..Packet::default()
        };
        a.engine.handle_packet(now, &pkt, self.d.rx.bytes(pat, plen));
        self.drain(now, p.association);
    }

    fn open(&mut self, now: Time, id: u64) {
        if self.assocs.len() >= self.cfg.max_associations {
            let oldest = self
                .assocs
                .iter()
                .min_by_key(|(k, a)| (a.last_active, **k))
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.assocs.remove(&k);
                self.timers.set(k, None);
                self.stats.associations_evicted += 1;
            }
        }
        let Ok(engine) = CloudBurstEndpoint::new(
            self.engine_cfg.clone(),
            FiveTuple::default(),
            stream(self.cfg.seed, Stream::Engine, id),
        ) else {
            return; // The configuration was validated at bind time.
        };
        self.assocs.insert(
            id,
            Association {
                engine,
                remotes: [None; MAX_PATHS],
                delivered: [None; 256],
                last_active: now,
            },
        );
        self.stats.associations_opened += 1;
    }

    /// The drain of `docs/architecture.md` for one association: transmits, then events (a request
    /// runs the handler and queues the response, so transmits again), then the next deadline.
    fn drain(&mut self, now: Time, id: u64) {
        let dedup = self.cfg.cloudburst.transmission_timeout + Dur::from_millis(1);
        let Some(a) = self.assocs.get_mut(&id) else {
            self.timers.set(id, None);
            return;
        };
        loop {
            let remotes = a.remotes;
            self.d.drain_transmits(now, &mut a.engine, id, |p| {
                let to = remotes[p].or_else(|| remotes.iter().flatten().next().copied());
                to.map(|to| (0, to))
            });
            let mut answered = false;
            while let Some(ev) = a.engine.poll_event() {
                match ev {
                    AppEvent::MessageReceived { msg } => {
                        answered |= on_request(
                            now,
                            dedup,
                            a,
                            msg,
                            &mut self.handler,
                            &mut self.response,
                            &mut self.stats,
                        );
                    }
                    AppEvent::MessageAcked { .. } => self.stats.responses_acked += 1,
                    AppEvent::MessageFailed { .. } => self.stats.responses_failed += 1,
                    AppEvent::Connected => {}
                }
            }
            if !answered {
                break;
            }
        }
        self.timers.set(id, a.engine.poll_timeout());
    }

    fn publish(&mut self) {
        let mut t = TableSizes::default();
        let mut malformed = 0;
        for a in self.assocs.values() {
            let s = a.engine.table_sizes();
            t.sending += s.sending;
            t.decoders += s.decoders;
            t.finished += s.finished;
            t.expected += s.expected;
            t.untaken += s.untaken;
            t.stops_queued += s.stops_queued;
            malformed += a.engine.counters().malformed;
        }
        self.stats.tables = t;
        self.stats.engine_malformed = malformed;
        self.stats.associations = self.assocs.len() as u64;
        self.stats.dropped_by_hook = self.d.dropped_by_hook;
        self.stats.tx = self.d.lanes.counters;
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = self.stats;
    }
}

/// Hands a decoded request to the handler once and queues its response under the same wire id (the
/// client expects it there). Returns whether a response was queued.
fn on_request(
    now: Time,
    dedup: Dur,
    a: &mut Association,
    msg: MsgId,
    handler: &mut Handler,
    response: &mut Vec<u8>,
    stats: &mut ServerStats,
) -> bool {
    let Some(data) = a.engine.take_bytes(msg) else {
        return false;
    };
    let w = msg as u8 as usize;
    // A client reuses a wire id only after `id_quarantine` (> dedup); a decode of the same id sooner
    // is the same request decoded again from late packets.
    if a.delivered[w].is_some_and(|t| now.saturating_sub(t) < dedup) {
        stats.duplicate_requests += 1;
        return false;
    }
    a.delivered[w] = Some(now);
    stats.requests += 1;
    response.clear();
    handler(&data, response);
    a.engine.send_bytes(now, Outgoing::Message, msg, response);
    true
}
