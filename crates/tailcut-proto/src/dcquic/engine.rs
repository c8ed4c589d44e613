//! [`DcquicEngine`], one end of one DCQUIC connection: its state, its construction in either mode,
//! its public controls (migration, rebind, close), and the loop that runs quinn after any input.
//! The rest of its methods are in the child modules, by concern.

mod contract;
mod repair;
mod stream_io;

// The child modules take these through `use super::*`.
use crate::engine::{AppEvent, Engine, MessageStats, MsgId, Outgoing};
use crate::packet::{Addr, Ecn, FiveTuple, Header, Packet, Proto};
use crate::rng::Rng;
use crate::time::{Dur, Time};
use crate::ConfigError;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, EcnCodepoint, Endpoint, EndpointConfig,
    Event, ServerConfig, Side, StreamEvent, StreamId, VarInt,
};
use rand::RngCore;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use super::bridge::{addr_of, sock, to_instant, to_time, FrozenClock};
use super::shared::{server_name, Mode};
use super::streams::{Queued, RecvSide, SendSide, StreamState};
use super::{crypto, real, simrand, tailfec, DcquicCounters, Monitor, Shared, StreamRecord};

/// A real-mode engine's quinn endpoint, on the driver's keys.
fn real_endpoint(keys: real::EndpointKeys, mps: u16, server: Option<Arc<ServerConfig>>) -> Endpoint {
    let mut ep_cfg = EndpointConfig::new(keys.reset_key);
    let cids = keys.cids;
    ep_cfg
        .cid_generator(move || cids())
        .max_udp_payload_size(mps)
        .expect("validated MPS is a legal UDP payload");
    Endpoint::new(Arc::new(ep_cfg), server, false, Some(keys.rng_seed))
}

/// Acknowledged messages whose final counters a real-mode engine keeps.
const ACKED_STATS: usize = 64;

/// Stateless datagrams an engine holds at most (more are dropped, as a busy server would).
const STATELESS_QUEUE: usize = 4;

/// Where an engine's keys and randomness come from.
enum Origin {
    /// The run's seed (simulation).
    Sim(Rng),
    /// The driver (real sockets).
    RealClient(real::ClientKeys),
    RealServer(real::ServerKeys),
}

/// One end of a DCQUIC connection.
pub struct DcquicEngine {
    shared: Arc<Shared>,
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    server_cfg: Option<Arc<ServerConfig>>,
    side: Side,
    /// Our current address and port, and the peer's (as our packets carry them).
    tuple: FiveTuple,
    local_addrs: Vec<Addr>,
    addr_idx: usize,
    /// When the client last migrated away from each of `local_addrs` (`migration.hold_down`).
    left_at: Vec<Option<Time>>,
    start: Time,
    connected: bool,
    events: VecDeque<AppEvent>,
    quinn_timeout: Option<Time>,
    next_check: Option<Time>,
    streams: BTreeMap<StreamId, StreamState>,
    /// Messages waiting for a stream of their kind: bidirectional for a request, else unidirectional.
    pending: VecDeque<Queued>,
    /// Requests the peer sent on its bidirectional streams, waiting for their responses.
    requests_in: BTreeMap<MsgId, StreamId>,
    /// Our requests, by id, on our bidirectional streams.
    requests_out: BTreeMap<MsgId, StreamId>,
    /// Messages the application framed on the peer's streams, by peer stream index: [bidi, uni].
    expect: [Vec<(MsgId, u64)>; 2],
    monitor: Monitor,
    /// The client host's own delay so far, as its driver reports it (`note_host_delay`).
    host_delay: Dur,
    counters: DcquicCounters,
    scratch: Vec<u8>,
    /// Streams whose data was complete before the application framed their message.
    framed_late: Vec<StreamId>,
    /// Tail FEC, receive side: per stream of the peer's data not yet delivered.
    fec_rx: BTreeMap<StreamId, tailfec::TailRecv>,
    /// Tail FEC, send side: messages fully written whose repair goes out when quinn next has nothing to
    /// send: normally after their data, so a repair does not share a packet with the bytes it protects
    /// (quinn writes DATAGRAM frames first); a congestion-blocked message's repair may overtake its
    /// last bytes (`docs/dcquic.md`).
    repairs_due: Vec<(StreamId, MsgId, u64)>,
    fec_scratch: Vec<u8>,
    /// Peer streams accepted so far, per direction [bidi, uni].
    accepted: [u64; 2],
    /// Real sockets: messages delivered and not yet taken, and the bytes held in them and in streams
    /// still arriving.
    pub(super) inbox: BTreeMap<MsgId, Vec<u8>>,
    buffered: u64,
    /// Why the connection ended, as quinn reports it.
    close_reason: Option<String>,
    /// Real sockets: the final counters of the last [`ACKED_STATS`] messages acknowledged, for
    /// `message_stats` after their stream is gone (a response and its request's acknowledgement can
    /// come in one datagram, the response's event first).
    acked_stats: VecDeque<(MsgId, MessageStats)>,
    /// Stateless datagrams to send (real sockets): (destination, bytes).
    stateless: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Reconstructions: (message, start offset of the kept window, its bytes), for tests to check.
    #[cfg(test)]
    pub(super) fec_log: Vec<(MsgId, u64, Vec<u8>)>,
}

impl DcquicEngine {
    /// `tuple` is this end's view (src = own address). `client` opens the connection; `local_addrs`
    /// are the host's addresses (migration moves through them; the first must be `tuple.src`);
    /// `task_bytes` sizes the MPS. Every key and random comes from `rng`.
    ///
    /// # Panics
    ///
    /// With a real [`Shared`]: its engines take their keys from the driver ([`Self::real_client`],
    /// [`Self::real_server`]).
    pub fn new(
        shared: Arc<Shared>,
        tuple: FiveTuple,
        client: bool,
        local_addrs: Vec<Addr>,
        task_bytes: u64,
        rng: Rng,
        now: Time,
    ) -> DcquicEngine {
        assert!(
            shared.real_mode().is_none(),
            "a real-mode engine is built by real_client or real_server"
        );
        DcquicEngine::build(
            shared,
            tuple,
            client,
            local_addrs,
            task_bytes,
            Origin::Sim(rng),
            now,
        )
    }

    /// A client on real sockets ([`Shared::real`]): `local_addrs` name its paths (one per local
    /// interface address; migration moves through them), `tuple.dst` the server. The MPS follows
    /// `task_bytes`, capped at what the path carries. `keys` are this engine's own.
    pub fn real_client(
        shared: Arc<Shared>,
        tuple: FiveTuple,
        local_addrs: Vec<Addr>,
        task_bytes: u64,
        keys: real::ClientKeys,
        now: Time,
    ) -> Result<DcquicEngine, ConfigError> {
        // The path is the field of `RealMode` that is missing (as `RealMode::validate` names it).
        match shared.real_mode() {
            Some(r) if r.client.is_some() => {}
            _ => {
                return Err(ConfigError::new(
                    "client",
                    "a real client needs a Shared::real with a client config",
                ))
            }
        }
        let origin = Origin::RealClient(keys);
        Ok(DcquicEngine::build(
            shared,
            tuple,
            true,
            local_addrs,
            task_bytes,
            origin,
            now,
        ))
    }

    /// A server on real sockets for one connection. A runtime serving many connections on one
    /// socket finds this engine by the routing key its connection IDs begin with, which `keys` set
    /// ([`real::server_cid`]).
    pub fn real_server(
        shared: Arc<Shared>,
        tuple: FiveTuple,
        keys: real::ServerKeys,
        now: Time,
    ) -> Result<DcquicEngine, ConfigError> {
        match shared.real_mode() {
            Some(r) if r.server.is_some() => {}
            _ => {
                return Err(ConfigError::new(
                    "server",
                    "a real server needs a Shared::real with a server config",
                ))
            }
        }
        let origin = Origin::RealServer(keys);
        Ok(DcquicEngine::build(
            shared,
            tuple,
            false,
            Vec::new(),
            0,
            origin,
            now,
        ))
    }

    fn build(
        shared: Arc<Shared>,
        tuple: FiveTuple,
        client: bool,
        local_addrs: Vec<Addr>,
        task_bytes: u64,
        origin: Origin,
        now: Time,
    ) -> DcquicEngine {
        let cfg = &shared.cfg;
        let mps = match shared.real_mode() {
            // A server offers all the path carries; the client's (smaller) choice wins.
            Some(r) if !client => r.path_max_payload,
            Some(r) => cfg.mps.select(task_bytes).min(r.path_max_payload),
            None => cfg.mps.select(task_bytes),
        };
        let transport = cfg.transport(mps);
        let mut server_cfg = None;
        let local_addrs = if local_addrs.is_empty() {
            vec![tuple.src]
        } else {
            local_addrs
        };
        let mut counters = DcquicCounters::default();
        let (mut endpoint, client_cfg) = match origin {
            Origin::Sim(mut rng) => {
                let mut seed = [0u8; 32];
                rng.fill_bytes(&mut seed);
                let mut reset_key = [0u8; 32];
                rng.fill_bytes(&mut reset_key);
                let tls_seed = simrand::SimSeed::draw(&mut rng);
                let mut ep_cfg = EndpointConfig::new(Arc::new(ring::hmac::Key::new(
                    ring::hmac::HMAC_SHA256,
                    &reset_key,
                )));
                ep_cfg
                    .cid_generator(tls_seed.cid_generator())
                    .max_udp_payload_size(mps)
                    .expect("validated MPS is a legal UDP payload");
                if !client {
                    let Mode::Sim { server, .. } = &shared.mode else {
                        unreachable!("Origin::Sim comes from a simulated Shared")
                    };
                    let mut token_key = [0u8; 32];
                    rng.fill_bytes(&mut token_key);
                    let prk = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&token_key);
                    let crypto = simrand::SeededServer::new(server.clone(), tls_seed);
                    let mut sc = ServerConfig::new(crypto, Arc::new(prk));
                    let mut tokens = quinn_proto::ValidationTokenConfig::default();
                    // No NEW_TOKEN frames: connections are not re-opened from tokens here, and
                    // issuing one would stamp it with the wall clock.
                    tokens.sent(0);
                    sc.transport_config(transport.clone())
                        .migration(true)
                        .validation_token_config(tokens)
                        .time_source(Arc::new(FrozenClock));
                    server_cfg = Some(Arc::new(sc));
                }
                let endpoint = Endpoint::new(Arc::new(ep_cfg), server_cfg.clone(), false, Some(seed));
                let cc = client.then(|| {
                    let host = local_addrs.first().copied().unwrap_or(tuple.src);
                    let mut cc =
                        ClientConfig::new(simrand::SeededClient::new(shared.client_for(host), tls_seed));
                    cc.transport_config(transport.clone())
                        .initial_dst_cid_provider(tls_seed.initial_dst_cid());
                    cc
                });
                (endpoint, cc)
            }
            Origin::RealClient(real::ClientKeys {
                endpoint: keys,
                initial_dst_cid,
            }) => {
                let Some(crypto) = shared.real_mode().and_then(|r| r.client.as_ref()) else {
                    unreachable!("real_client checked the config")
                };
                let mut cc = ClientConfig::new(crypto.clone());
                cc.transport_config(transport.clone())
                    .initial_dst_cid_provider(initial_dst_cid);
                (real_endpoint(keys, mps, None), Some(cc))
            }
            Origin::RealServer(real::ServerKeys {
                endpoint: keys,
                token_key,
                clock,
            }) => {
                let Some(crypto) = shared.real_mode().and_then(|r| r.server.as_ref()) else {
                    unreachable!("real_server checked the config")
                };
                let mut sc = ServerConfig::new(crypto.clone(), token_key);
                sc.transport_config(transport.clone())
                    .migration(true)
                    .time_source(clock);
                let sc = Arc::new(sc);
                server_cfg = Some(sc.clone());
                (real_endpoint(keys, mps, Some(sc)), None)
            }
        };
        let addr_idx = local_addrs.iter().position(|&a| a == tuple.src).unwrap_or(0);
        let mut conn = None;
        if let Some(cc) = client_cfg {
            let name = match shared.real_mode() {
                Some(r) => r.server_name.clone(),
                None if cfg.zero_rtt => server_name(tuple.dst),
                None => crypto::SERVER_NAME.to_string(),
            };
            // A client whose server name is not a valid DNS name or IP fails its first connect: the
            // engine then has no connection and reports every message as failed.
            if let Ok((ch, c)) = endpoint.connect(
                to_instant(shared.epoch, now),
                cc,
                sock(tuple.dst, tuple.dst_port),
                &name,
            ) {
                // 0-RTT keys exist from the start when a ticket was taken: streams open right away
                // and their data goes out as 0-RTT packets (quinn's `into_0rtt` is this, in the
                // async API).
                if c.has_0rtt() {
                    counters.zero_rtt_attempts += 1;
                }
                conn = Some((ch, c));
            }
        }
        let monitor = Monitor::new(&cfg.migration);
        let mut e = DcquicEngine {
            shared,
            endpoint,
            conn,
            server_cfg,
            side: if client { Side::Client } else { Side::Server },
            tuple: FiveTuple {
                proto: Proto::Udp,
                ..tuple
            },
            left_at: vec![None; local_addrs.len()],
            local_addrs,
            addr_idx,
            start: now,
            connected: false,
            events: VecDeque::new(),
            quinn_timeout: None,
            next_check: None,
            streams: BTreeMap::new(),
            pending: VecDeque::new(),
            requests_in: BTreeMap::new(),
            requests_out: BTreeMap::new(),
            expect: [Vec::new(), Vec::new()],
            monitor,
            host_delay: Dur::ZERO,
            counters,
            scratch: Vec::new(),
            framed_late: Vec::new(),
            fec_rx: BTreeMap::new(),
            repairs_due: Vec::new(),
            fec_scratch: Vec::new(),
            accepted: [0; 2],
            inbox: BTreeMap::new(),
            buffered: 0,
            close_reason: None,
            stateless: VecDeque::new(),
            acked_stats: VecDeque::new(),
            #[cfg(test)]
            fec_log: Vec::new(),
        };
        e.process(now);
        e
    }

    /// The driver's measure of the client host's own delay so far (cumulative, never decreasing):
    /// time the host was not running the client while it should have (on real sockets, how late
    /// its thread woke past its timer deadlines). With `migration.exclude_host_delay` the migration
    /// rule counts each stream's time without the part of it that falls while the stream was open.
    pub fn note_host_delay(&mut self, total: Dur) {
        self.host_delay = self.host_delay.max(total);
    }

    /// The host's delay so far the migration rule excludes (`exclude_host_delay`; else 0): a
    /// stream's share is this total at its end less this total at its open.
    pub(super) fn excluded_host_delay(&self) -> Dur {
        if self.shared.cfg.migration.exclude_host_delay {
            self.host_delay
        } else {
            Dur::ZERO
        }
    }

    pub fn counters(&self) -> DcquicCounters {
        let mut c = self.counters;
        if let Some((_, conn)) = &self.conn {
            c.lost_packets = conn.stats().path.lost_packets;
        }
        c
    }

    /// The address this end currently sends from.
    pub fn local_addr(&self) -> Addr {
        self.tuple.src
    }

    /// The maximum UDP payload this connection currently sends.
    pub fn mps(&self) -> Option<u16> {
        self.conn.as_ref().map(|(_, c)| c.current_mtu())
    }

    /// Proactive migration: move to the next local address (another NIC, hence another path) not held
    /// down (`migration.hold_down`; false, and no move, if every other one is). QUIC switches to a
    /// fresh connection ID and the peer validates the new path.
    pub fn migrate(&mut self, now: Time) -> bool {
        if self.side != Side::Client || self.local_addrs.len() < 2 || self.conn.is_none() {
            return false;
        }
        let Some(next) = super::migration::next_path(
            self.addr_idx,
            self.local_addrs.len(),
            &self.left_at,
            now,
            self.shared.cfg.migration.hold_down,
        ) else {
            return false;
        };
        self.left_at[self.addr_idx] = Some(now);
        self.addr_idx = next;
        self.tuple.src = self.local_addrs[self.addr_idx];
        if let Some((_, c)) = self.conn.as_mut() {
            c.local_address_changed();
        }
        self.counters.migrations += 1;
        self.monitor.reset();
        self.process(now);
        true
    }

    /// Passive migration: the host's address changed under the connection (e.g. a migrated VM); the
    /// connection keeps going from `addr`, the peer sees a new address and validates it.
    pub fn rebind(&mut self, now: Time, addr: Addr) {
        self.tuple.src = addr;
        if !self.local_addrs.contains(&addr) {
            self.local_addrs.push(addr);
        }
        self.addr_idx = self.local_addrs.iter().position(|&a| a == addr).unwrap_or(0);
        self.counters.rebinds += 1;
        self.monitor.reset();
        self.process(now);
    }

    fn peer_side(&self) -> Side {
        match self.side {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    /// Runs quinn's endpoint/connection event exchange and our stream logic after any input.
    fn process(&mut self, now: Time) {
        while let Some((ch, conn)) = self.conn.as_mut() {
            let mut progressed = false;
            while let Some(ev) = conn.poll_endpoint_events() {
                progressed = true;
                if let Some(cev) = self.endpoint.handle_event(*ch, ev) {
                    conn.handle_event(cev);
                }
            }
            let Some(ev) = conn.poll() else {
                if !progressed {
                    break;
                }
                continue;
            };
            match ev {
                Event::Connected => {
                    if !self.connected {
                        self.connected = true;
                        if self.side == Side::Client {
                            self.counters.handshakes += 1;
                            self.counters.handshake_ns += now.saturating_sub(self.start).0;
                            if conn.has_0rtt() {
                                if conn.accepted_0rtt() {
                                    self.counters.zero_rtt_accepted += 1;
                                } else {
                                    self.zero_rtt_rejected();
                                }
                            }
                        }
                        self.events.push_back(AppEvent::Connected);
                    }
                    self.open_pending(now);
                }
                Event::ConnectionLost { reason } => {
                    self.close_reason = Some(reason.to_string());
                    self.fail_all();
                    self.conn = None;
                    break;
                }
                Event::Stream(StreamEvent::Opened { dir }) => self.accept(now, dir),
                Event::Stream(StreamEvent::Readable { id }) => self.read(now, id),
                Event::Stream(StreamEvent::Writable { id }) => self.write(id),
                Event::Stream(StreamEvent::Finished { id }) => self.acked(id),
                Event::Stream(StreamEvent::Available { .. }) => self.open_pending(now),
                Event::DatagramReceived => self.repairs_in(now),
                _ => {}
            }
        }
        self.refresh_timeout(now);
    }

    /// Closes the connection (QUIC's CONNECTION_CLOSE with an application error code) and fails what
    /// it carried; the engine keeps the connection until quinn has sent the close.
    pub fn close(&mut self, now: Time, code: u32, reason: &str) {
        let at = to_instant(self.shared.epoch, now);
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        if conn.is_closed() {
            return;
        }
        conn.close(
            at,
            VarInt::from_u32(code),
            bytes::Bytes::copy_from_slice(reason.as_bytes()),
        );
        self.close_reason = Some(format!("closed locally: {reason}"));
        self.fail_all();
        self.process(now);
    }

    /// A client that has sent nothing yet times its handshake (and first byte) from `now` instead of
    /// its construction: for a driver that builds engines ahead of the thread that sends.
    pub fn restart_clock(&mut self, now: Time) {
        if !self.connected {
            self.start = now;
        }
    }

    /// Why the connection ended (a peer's close, a timeout, a TLS alert), if it has.
    pub fn close_reason(&self) -> Option<&str> {
        self.close_reason.as_deref()
    }

    /// The connection is gone, or closed and drained (its close sent and its IDs retired): the engine
    /// holds nothing a peer could still need.
    pub fn is_done(&self) -> bool {
        self.conn.as_ref().is_none_or(|(_, c)| c.is_drained())
    }

    /// The connection is closed or gone (or never opened): nothing more will be delivered.
    pub fn is_closed(&self) -> bool {
        self.conn.as_ref().is_none_or(|(_, c)| c.is_closed())
    }

    fn refresh_timeout(&mut self, now: Time) {
        self.quinn_timeout = self
            .conn
            .as_mut()
            .and_then(|(_, c)| c.poll_timeout())
            .map(|i| to_time(self.shared.epoch, i));
        let rpc_in_flight =
            self.side == Side::Client && self.shared.cfg.migration.enabled && !self.requests_out.is_empty();
        if !rpc_in_flight {
            self.next_check = None;
        } else if self.next_check.is_none_or(|t| t <= now) {
            self.next_check = Some(now + self.shared.cfg.migration.check_interval);
        }
    }

    /// Proactive migration's periodic check: RPCs still in flight count with their elapsed time so far
    /// when that already exceeds the recent mean (a lower bound says nothing when it is below it).
    fn check_migration(&mut self, now: Time) {
        let base = self.monitor.recent_mean();
        let excluded = self.excluded_host_delay();
        let mean_bytes = self.monitor.mean_bytes().max(1);
        let mut in_flight: Vec<(StreamId, (f64, u64))> = self
            .requests_out
            .values()
            .filter_map(|id| self.streams.get(id).map(|s| (*id, s)))
            .map(|(id, s)| {
                let bytes = s.recv.msg.map_or(mean_bytes, |(_, l)| l.max(1));
                let start = s.counted_from(excluded);
                (id, (now.saturating_sub(start).0 as f64 / bytes as f64, bytes))
            })
            .filter(|&(_, (v, _))| v > base)
            .collect();
        in_flight.sort_unstable_by_key(|x| x.0);
        let prov: Vec<(f64, u64)> = in_flight.into_iter().map(|x| x.1).collect();
        if !prov.is_empty() && self.monitor.fires(&prov) {
            self.migrate(now);
        }
    }
}
