//! DCQUIC (seed 004): QUIC tuned for the datacenter, on quinn-proto.
//!
//! One [`DcquicEngine`] is one end of one QUIC connection: a quinn-proto `Endpoint` holding a single
//! `Connection`, driven through the [`Engine`] contract with real datagrams (the simulator carries the
//! bytes beside the packet). On top of stock QUIC it adds what the paper adds:
//! - RPCs as streams on a long-lived connection: a request opens a bidirectional stream and its
//!   response comes back on it; a message without a request (a push) opens a unidirectional stream;
//! - per-connection maximum packet size chosen by task size ([`mps`], Sec. 4.2) and a socket-buffer
//!   size (flow-control windows);
//! - pluggable congestion control: quinn's Cubic and NewReno, and a DCTCP-style controller ([`cc`]);
//! - proactive connection migration ([`migration`], Sec. 3.4.1): the client keeps stream records and
//!   moves the connection to its next local address (another NIC) when the rule fires; QUIC's path
//!   validation does the rest. Passive migration (the host's address changed under the connection) is
//!   [`DcquicEngine::rebind`].
//!
//! Message ids follow the simulator's RPC convention: a request has an even id and its response the id
//! with the low bit set; that is how an engine knows which stream a response belongs on.
//!
//! Determinism: quinn-proto's endpoint RNG is seeded from the engine's RNG, its stateless-reset and
//! token keys are fixed, and connection ids and every TLS random and key share come from a seeded
//! stream ([`simrand`]; simulation only, not secure), so every packet's bytes and every timer are the
//! same across runs. quinn-proto allocates internally (per packet: a `BytesMut` for each received
//! datagram, frames and stream buffers); that cost stays inside the engine.

pub mod cc;
pub mod crypto;
pub mod migration;
pub mod mps;
pub mod real;
#[cfg(any(test, feature = "dcquic-testkit"))]
pub mod real_testkit;
#[cfg(test)]
mod real_tests;
pub mod route;
mod simrand;
pub mod tailfec;
#[cfg(test)]
mod tests;
pub mod tickets;

use crate::engine::{AppEvent, Engine, MessageStats, MsgId, Outgoing};
use crate::packet::{Addr, Ecn, FiveTuple, Header, Packet, Proto};
use crate::rng::Rng;
use crate::time::{Dur, Time};
use crate::units::Bytes;
use crate::ConfigError;
use quinn_proto::{
    AckFrequencyConfig, ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, EcnCodepoint,
    Endpoint, EndpointConfig, Event, ServerConfig, Side, StreamEvent, StreamId, TransportConfig, VarInt,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use cc::CcKind;
pub use migration::{MigrationConfig, Monitor, StreamRecord};
pub use mps::MpsConfig;

/// DCQUIC's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcquicConfig {
    pub congestion_control: CcKind,
    /// Initial congestion window, packets of the connection's MPS, before the byte limit below.
    pub initial_window_packets: u32,
    /// RFC 9002 Sec. 7.2: the initial window is `min(10 * max_datagram_size, max(14720,
    /// 2 * max_datagram_size))`, so with jumbo datagrams it is two of them, not ten; this is the
    /// 14720 (RFC 6928's 10 x 1460 B in bytes) of that rule. The window is
    /// [`DcquicConfig::initial_window_bytes`].
    pub initial_window_limit: Bytes,
    /// Mark packets ECN-capable and report CE counts (RFC 9000 Sec. 13.4).
    pub ecn: bool,
    pub mps: MpsConfig,
    /// Socket buffer: the receive windows (per stream and per connection) and the send buffer.
    pub socket_buffer: Bytes,
    /// RTT assumed before the first sample (RFC 9002's 333 ms is for the Internet; datacenter tuning).
    pub initial_rtt: Dur,
    /// IPv4 + UDP header bytes per datagram on the wire.
    pub header_bytes: u32,
    /// Streams each side may have open at once.
    pub max_streams: u32,
    pub migration: MigrationConfig,
    /// 0-RTT resumption: a client's second and later connections to a server send their requests
    /// with the first flight, on a session ticket from an earlier connection of the same host.
    pub zero_rtt: bool,
    /// Protect the tail of every message with an XOR parity sent as QUIC DATAGRAM frames ([`tailfec`];
    /// not in the paper).
    pub tail_fec: bool,
    /// k: the protected tail is the message's last k chunks of one path MTU each (the parity is one
    /// chunk whatever k is).
    pub tail_fec_packets: u32,
    /// Each endpoint asks its peer for `ack_delay` and `ack_eliciting_threshold` through the
    /// ACK-frequency extension (draft-ietf-quic-ack-frequency, which quinn implements). Off, receivers
    /// follow RFC 9000: an ACK every second ack-eliciting packet, else after the 25 ms `max_ack_delay`,
    /// an Internet value that a lone packet of a small message waits out in full, 100x a datacenter RTT.
    /// Datacenter tuning, like `initial_rtt`: the paper is silent.
    pub ack_frequency: bool,
    /// The longest a receiver may hold an ACK (quinn clamps the request to at least its 1 ms timer
    /// granularity and at most max(RTT, 25 ms)).
    pub ack_delay: Dur,
    /// Ack-eliciting packets a receiver may take before it must ACK: RFC 9000's rule is 1 (an ACK every
    /// second packet); 0 ACKs every packet.
    pub ack_eliciting_threshold: u32,
}

impl Default for DcquicConfig {
    fn default() -> Self {
        DcquicConfig {
            congestion_control: CcKind::Cubic,
            initial_window_packets: 10,
            initial_window_limit: Bytes(14_720),
            ecn: true,
            mps: MpsConfig::default(),
            socket_buffer: Bytes(1_000_000),
            initial_rtt: Dur::from_millis(1),
            header_bytes: 28,
            max_streams: 1024,
            migration: MigrationConfig::default(),
            zero_rtt: false,
            tail_fec: false,
            tail_fec_packets: 4,
            ack_frequency: true,
            ack_delay: Dur::from_millis(1),
            ack_eliciting_threshold: 1,
        }
    }
}

impl DcquicConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.congestion_control.validate()?;
        self.mps.validate()?;
        self.migration.validate()?;
        if self.initial_window_packets == 0 {
            return Err(ConfigError::new("initial_window_packets", "must be >= 1"));
        }
        if self.socket_buffer.0 < 16_384 || self.socket_buffer.0 > (1 << 40) {
            return Err(ConfigError::new(
                "socket_buffer",
                format!("must be in 16KB..=1TB, got {}", self.socket_buffer.0),
            ));
        }
        if self.initial_rtt.0 == 0 {
            return Err(ConfigError::new("initial_rtt", "must be > 0"));
        }
        if self.max_streams == 0 {
            return Err(ConfigError::new("max_streams", "must be >= 1"));
        }
        // quinn's timer granularity is 1 ms; 2^14 ms is RFC 9000's ceiling for max_ack_delay.
        if self.ack_delay.0 < 1_000_000 || self.ack_delay.0 >= (1 << 14) * 1_000_000 {
            return Err(ConfigError::new(
                "ack_delay",
                format!("must be in 1ms..16s, got {}", self.ack_delay),
            ));
        }
        if self.ack_eliciting_threshold > 1_000_000 {
            return Err(ConfigError::new(
                "ack_eliciting_threshold",
                format!("must be <= 1000000, got {}", self.ack_eliciting_threshold),
            ));
        }
        if !(1..=64).contains(&self.tail_fec_packets) {
            return Err(ConfigError::new(
                "tail_fec_packets",
                format!("must be in 1..=64, got {}", self.tail_fec_packets),
            ));
        }
        Ok(())
    }

    /// The initial congestion window at datagram size `mps` (RFC 9002 Sec. 7.2, with the number of
    /// packets and the byte limit as parameters).
    pub fn initial_window_bytes(&self, mps: u16) -> u64 {
        let mps = u64::from(mps);
        (u64::from(self.initial_window_packets) * mps).min(self.initial_window_limit.0.max(2 * mps))
    }

    fn transport(&self, mps: u16) -> Arc<TransportConfig> {
        let mut t = TransportConfig::default();
        let win = VarInt::from_u64(self.socket_buffer.0).expect("validated");
        t.initial_mtu(mps)
            .min_mtu(1200)
            .mtu_discovery_config(None)
            .stream_receive_window(win)
            .receive_window(win)
            .send_window(self.socket_buffer.0)
            .initial_rtt(Duration::from_nanos(self.initial_rtt.0))
            .max_concurrent_bidi_streams(self.max_streams.into())
            .max_concurrent_uni_streams(self.max_streams.into())
            .enable_segmentation_offload(false)
            .congestion_controller_factory(self.congestion_control.factory(self.initial_window_bytes(mps)));
        if self.ack_frequency {
            let mut ack = AckFrequencyConfig::default();
            ack.max_ack_delay(Some(Duration::from_nanos(self.ack_delay.0)))
                .ack_eliciting_threshold(self.ack_eliciting_threshold.into());
            t.ack_frequency_config(Some(ack));
        }
        if self.tail_fec {
            // quinn enables the datagram extension by default (1.25 MB in, 1 MB out); with tail FEC the
            // repairs use it, sized like the stream buffers. Left untouched otherwise, so the
            // transport parameters (and the handshake's bytes) of plain DCQUIC stay as they were.
            let buf = self.socket_buffer.0 as usize;
            t.datagram_receive_buffer_size(Some(buf))
                .datagram_send_buffer_size(buf);
        }
        Arc::new(t)
    }
}

/// What the engines of one transport (simulator) or one runtime (real sockets) share: the
/// configuration, and the crypto of one of the two modes, which share no source of randomness.
pub struct Shared {
    pub cfg: DcquicConfig,
    mode: Mode,
    /// The `Instant` simulated time is laid on, handed in by the driver: quinn-proto's time type is
    /// `std::time::Instant`, which cannot be built from a number, and an engine reads no clock. Only
    /// differences from it are used, so its value never affects a result.
    epoch: Instant,
}

enum Mode {
    /// Seeded, simulation only ([`crypto`], [`simrand`]): crypto configurations built once per
    /// transport (parsing the key and certificate is not free), and with `zero_rtt` the
    /// session-ticket store of each client host (one per transport, so one per run: tickets never
    /// cross runs).
    Sim {
        client: Arc<quinn_proto::crypto::rustls::QuicClientConfig>,
        server: Arc<quinn_proto::crypto::rustls::QuicServerConfig>,
        hosts: Mutex<BTreeMap<Addr, HostTickets>>,
    },
    /// Real sockets ([`real`]).
    Real(real::RealMode),
}

/// Per client host (its first address): its ticket store and the client config that uses it.
type HostTickets = (
    Arc<tickets::TicketStore>,
    Arc<quinn_proto::crypto::rustls::QuicClientConfig>,
);

impl Shared {
    /// The simulator's mode: seeded crypto, no clock.
    pub fn new(cfg: DcquicConfig, epoch: Instant) -> Shared {
        let server = crypto::server(cfg.zero_rtt);
        Shared {
            cfg,
            mode: Mode::Sim {
                client: crypto::client(None),
                server,
                hosts: Mutex::new(BTreeMap::new()),
            },
            epoch,
        }
    }

    /// Real sockets: the driver's TLS configs (`real`), messages delimited by their stream's FIN.
    /// `epoch` is the runtime clock's zero. 0-RTT and tail FEC are simulator features here and are
    /// refused.
    pub fn real(cfg: DcquicConfig, epoch: Instant, real: real::RealMode) -> Result<Shared, ConfigError> {
        cfg.validate()?;
        real.validate()?;
        if cfg.zero_rtt {
            return Err(ConfigError::new(
                "zero_rtt",
                "not available on real sockets (session tickets are simulated)",
            ));
        }
        if cfg.tail_fec {
            return Err(ConfigError::new("tail_fec", "not available on real sockets"));
        }
        Ok(Shared {
            cfg,
            mode: Mode::Real(real),
            epoch,
        })
    }

    fn real_mode(&self) -> Option<&real::RealMode> {
        match &self.mode {
            Mode::Real(r) => Some(r),
            Mode::Sim { .. } => None,
        }
    }

    /// The client crypto config for connections from `host`: with 0-RTT, the host's own (its tickets).
    fn client_for(&self, host: Addr) -> Arc<quinn_proto::crypto::rustls::QuicClientConfig> {
        let Mode::Sim { client, hosts, .. } = &self.mode else {
            unreachable!("simulated engines are built from a simulated Shared")
        };
        if !self.cfg.zero_rtt {
            return client.clone();
        }
        let mut m = hosts.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(host)
            .or_insert_with(|| {
                let store = Arc::new(tickets::TicketStore::default());
                (store.clone(), crypto::client(Some(store)))
            })
            .1
            .clone()
    }

    /// Session tickets `host` holds for `server` (0 without `zero_rtt`).
    pub fn tickets(&self, host: Addr, server: Addr) -> usize {
        let Mode::Sim { hosts, .. } = &self.mode else {
            return 0;
        };
        let m = hosts.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&host).map_or(0, |h| h.0.tickets(&server_name(server)))
    }
}

/// The name a client asks for: with 0-RTT, one per server address, so a host's tickets are kept per
/// server (the pinned-certificate verifier accepts any name).
fn server_name(server: Addr) -> String {
    format!("h{}.{}", server.0, crypto::SERVER_NAME)
}

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

fn to_instant(epoch: Instant, t: Time) -> Instant {
    epoch + Duration::from_nanos(t.0)
}

fn to_time(epoch: Instant, i: Instant) -> Time {
    Time(i.saturating_duration_since(epoch).as_nanos() as u64)
}

/// quinn's server wall clock (retry and validation tokens), frozen: an engine reads no clock.
struct FrozenClock;

impl quinn_proto::TimeSource for FrozenClock {
    fn now(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + Duration::from_secs(1_893_456_000)
    }
}

/// Simulated addresses as IPv4 (10.0.0.0/8 + the address number).
fn sock(addr: Addr, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::from(0x0A00_0000 | addr.0)), port)
}

fn addr_of(s: SocketAddr) -> Addr {
    match s.ip() {
        IpAddr::V4(v4) => Addr(u32::from(v4) & 0x00FF_FFFF),
        IpAddr::V6(_) => Addr(u32::MAX),
    }
}

/// Acknowledged messages whose final counters a real-mode engine keeps.
const ACKED_STATS: usize = 64;

/// Stateless datagrams an engine holds at most (more are dropped, as a busy server would).
const STATELESS_QUEUE: usize = 4;

/// A message waiting for a stream: its id, length, stream kind and (real sockets) its bytes.
type Queued = (MsgId, u64, Dir, Option<Vec<u8>>);

/// Where an engine's keys and randomness come from.
enum Origin {
    /// The run's seed (simulation).
    Sim(Rng),
    /// The driver (real sockets).
    RealClient(real::ClientKeys),
    RealServer(real::ServerKeys),
}

#[derive(Debug, Default)]
struct SendSide {
    msg: MsgId,
    len: u64,
    written: u64,
    finished: bool,
    acked: bool,
    /// Tail FEC: the repair is queued (or sent), and its bytes on the wire (headers included).
    repair_queued: bool,
    repair_bytes: u64,
    /// The connection's lost bytes (quinn's `PathStats::lost_bytes`) when the message was opened.
    lost_at_open: u64,
    /// The application's bytes (real sockets); without them the stream carries [`tailfec::payload`]'s.
    data: Option<Vec<u8>>,
}

impl SendSide {
    /// The message's counters given the connection's lost bytes now. quinn does not attribute
    /// retransmissions to streams, so the bytes the connection lost while the message was in flight
    /// stand for its retransmitted bytes (QUIC resends the frames of a lost packet): exact for one
    /// message at a time on a connection (the per-flow connections of the compare suite), an upper
    /// bound when messages overlap; whole packets, headers and ACK frames included.
    fn stats(&self, lost_now: u64) -> MessageStats {
        let retransmitted = lost_now.saturating_sub(self.lost_at_open);
        MessageStats {
            sent_bytes: self.len + self.repair_bytes + retransmitted,
            retransmitted_bytes: retransmitted,
            redundant_bytes: self.repair_bytes,
            ..MessageStats::default()
        }
    }
}

#[derive(Debug, Default)]
struct RecvSide {
    /// The message this side carries, once the application has framed it.
    msg: Option<(MsgId, u64)>,
    got: u64,
    fin: bool,
    reported: bool,
    /// The bytes read so far (real sockets), in order.
    buf: Vec<u8>,
}

#[derive(Debug)]
struct StreamState {
    opened: Time,
    send: Option<SendSide>,
    recv: RecvSide,
    /// Opened by us as a request: its FIN-bearing response ends a stream record.
    rpc: bool,
}

/// Counters of one engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DcquicCounters {
    pub handshakes: u64,
    /// Client side: from `connect` to quinn's `Connected`, summed.
    pub handshake_ns: u64,
    pub migrations: u64,
    pub rebinds: u64,
    pub streams_completed: u64,
    pub stream_ns: u64,
    pub lost_packets: u64,
    /// Client side: connections that sent 0-RTT data (a ticket was at hand), and those the server
    /// accepted it on.
    pub zero_rtt_attempts: u64,
    pub zero_rtt_accepted: u64,
    /// Client side: from `connect` to the first response byte, summed over `first_bytes` connections.
    pub first_byte_ns: u64,
    pub first_bytes: u64,
    /// Tail FEC: messages delivered from the parity before QUIC repaired them, the bytes rebuilt, and
    /// the repair datagrams sent with their payload bytes.
    pub fec_recovered: u64,
    pub fec_recovered_bytes: u64,
    pub fec_repairs: u64,
    pub fec_repair_bytes: u64,
    /// Real sockets: connections closed because the peer sent a message over the limit or held too
    /// many bytes in messages not yet complete.
    pub protocol_errors: u64,
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
    inbox: BTreeMap<MsgId, Vec<u8>>,
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
    fec_log: Vec<(MsgId, u64, Vec<u8>)>,
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
    ) -> Result<DcquicEngine, String> {
        match shared.real_mode() {
            Some(r) if r.client.is_some() => {}
            _ => return Err("a real client needs a Shared::real with a client config".into()),
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
    ) -> Result<DcquicEngine, String> {
        match shared.real_mode() {
            Some(r) if r.server.is_some() => {}
            _ => return Err("a real server needs a Shared::real with a server config".into()),
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

    /// Proactive migration: move to the next local address (another NIC, hence another path). QUIC
    /// switches to a fresh connection ID and the peer validates the new path.
    pub fn migrate(&mut self, now: Time) -> bool {
        if self.side != Side::Client || self.local_addrs.len() < 2 || self.conn.is_none() {
            return false;
        }
        self.addr_idx = (self.addr_idx + 1) % self.local_addrs.len();
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

    /// Opens streams for queued messages while the peer's stream limit allows.
    fn open_pending(&mut self, now: Time) {
        while let Some(&(msg, len, dir, _)) = self.pending.front() {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let Some(id) = conn.streams().open(dir) else {
                break;
            };
            let data = self.pending.pop_front().and_then(|q| q.3);
            let lost_at_open = conn.stats().path.lost_bytes;
            self.streams.insert(
                id,
                StreamState {
                    opened: now,
                    send: Some(SendSide {
                        msg,
                        len,
                        lost_at_open,
                        data,
                        ..SendSide::default()
                    }),
                    recv: RecvSide::default(),
                    rpc: dir == Dir::Bi,
                },
            );
            if dir == Dir::Bi {
                self.requests_out.insert(msg, id);
            }
            self.write(id);
        }
    }

    /// Writes as much of a stream's message as flow control and the send buffer take.
    fn write(&mut self, id: StreamId) {
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        let mut stream = conn.send_stream(id);
        while s.written < s.len {
            let n = (s.len - s.written).min(tailfec::SPAN as u64) as usize;
            let bytes = match &s.data {
                Some(d) => &d[s.written as usize..s.written as usize + n],
                None => tailfec::payload(s.msg, s.written, n),
            };
            match stream.write(bytes) {
                Ok(k) if k > 0 => s.written += k as u64,
                _ => break,
            }
        }
        if s.written == s.len && !s.finished {
            s.finished = stream.finish().is_ok();
        }
        if s.finished && !s.repair_queued && s.len > 0 && self.shared.cfg.tail_fec {
            s.repair_queued = true;
            self.repairs_due.push((id, s.msg, s.len));
        }
    }

    /// Queues the repair datagrams of the messages whose data quinn has sent: the XOR parity of each
    /// message's tail ([`tailfec`]), in pieces that fit a datagram.
    fn send_repairs(&mut self) {
        let Some((_, conn)) = self.conn.as_mut() else {
            self.repairs_due.clear();
            return;
        };
        let k = self.shared.cfg.tail_fec_packets;
        for (id, msg, len) in self.repairs_due.drain(..) {
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                continue;
            };
            // Already acknowledged (the data went out long before quinn was idle): nothing to protect.
            if send.acked || send.msg != msg {
                continue;
            }
            let Some(room) = conn
                .datagrams()
                .max_size()
                .and_then(|m| m.checked_sub(tailfec::HEADER))
            else {
                continue;
            };
            if room == 0 {
                continue;
            }
            let chunk = conn.current_mtu();
            let tail = tailfec::tail_len(len, k, chunk);
            tailfec::parity(msg, len - tail as u64, tail, chunk, &mut self.fec_scratch);
            for (j, piece) in self.fec_scratch.chunks(room).enumerate() {
                let h = tailfec::RepairHeader {
                    stream: id.into(),
                    len,
                    tail,
                    chunk,
                    piece: (j * room) as u32,
                };
                let mut d = Vec::with_capacity(tailfec::HEADER + piece.len());
                h.encode(&mut d);
                d.extend_from_slice(piece);
                let n = d.len() as u64;
                if conn.datagrams().send(d.into(), false).is_err() {
                    break;
                }
                send.repair_bytes += n;
                self.counters.fec_repairs += 1;
                self.counters.fec_repair_bytes += n;
            }
        }
    }

    /// Repair datagrams from the peer: keep each piece with its stream's receive state and try to
    /// rebuild the tail.
    fn repairs_in(&mut self, now: Time) {
        loop {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let Some(d) = conn.datagrams().recv() else {
                return;
            };
            if !self.shared.cfg.tail_fec {
                continue;
            }
            let Some((h, piece)) = tailfec::RepairHeader::decode(&d) else {
                continue;
            };
            let Ok(v) = VarInt::from_u64(h.stream) else {
                continue;
            };
            let id = StreamId::from(v);
            // Only streams the peer sends on: its own, and the responses on our bidirectional ones.
            if id.initiator() == self.side && id.dir() == Dir::Uni {
                continue;
            }
            // A peer stream beyond QUIC's stream limit cannot exist yet: keeping state for it would
            // let a peer fill the table with streams it never opens.
            let limit = self.accepted[id.dir() as usize] + self.shared.cfg.max_streams as u64;
            if self.recv_done(id) || (id.initiator() != self.side && id.index() >= limit) {
                continue;
            }
            let limits = tailfec::Limits::of(&self.shared.cfg);
            let f = self
                .fec_rx
                .entry(id)
                .or_insert_with(|| tailfec::TailRecv::new(limits));
            if f.add_repair(h, piece) && !f.has_window() {
                f.set_window(h.len, h.tail_start());
            }
            self.try_fec(now, id);
        }
    }

    /// The receive side of stream `id` is delivered (or the stream is gone): repairs and late data for it
    /// are dropped.
    fn recv_done(&self, id: StreamId) -> bool {
        match self.streams.get(&id) {
            Some(s) => s.recv.reported,
            None if id.initiator() == self.side => true,
            None => id.index() < self.accepted[id.dir() as usize],
        }
    }

    /// Delivers stream `id`'s message from its tail parity if the missing bytes allow it.
    fn try_fec(&mut self, now: Time, id: StreamId) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let (Some((_msg, len)), false) = (s.recv.msg, s.recv.reported) else {
            return;
        };
        let Some(f) = self.fec_rx.get_mut(&id) else {
            return;
        };
        let Some(r) = f.try_recover(len, &mut self.fec_scratch) else {
            return;
        };
        self.counters.fec_recovered += 1;
        self.counters.fec_recovered_bytes += r.bytes;
        #[cfg(test)]
        if let Some((start, kept)) = f.kept() {
            self.fec_log.push((_msg, start, kept.to_vec()));
        }
        self.fec_rx.remove(&id);
        self.deliver(now, id);
    }

    /// Reads what quinn has for a stream. With tail FEC the read is unordered, so the engine knows which
    /// byte ranges arrived, and data of a stream already delivered from its parity (QUIC's retransmitted
    /// copy) is read and dropped: it holds flow-control credit.
    fn read(&mut self, now: Time, id: StreamId) {
        let tail_fec = self.shared.cfg.tail_fec;
        let done = tail_fec && self.recv_done(id);
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        let mtu = conn.current_mtu();
        let mut stream = conn.recv_stream(id);
        let Some(s) = self.streams.get_mut(&id) else {
            if done {
                if let Ok(mut chunks) = stream.read(false) {
                    while let Ok(Some(_)) = chunks.next(usize::MAX) {}
                    let _ = chunks.finalize();
                }
            }
            return;
        };
        if s.recv.fin {
            return;
        }
        let limits = tailfec::Limits::of(&self.shared.cfg);
        let mut fec = (tail_fec && !done).then(|| {
            self.fec_rx
                .entry(id)
                .or_insert_with(|| tailfec::TailRecv::new(limits))
        });
        if let (Some(f), Some((_, len))) = (fec.as_mut(), s.recv.msg) {
            if !f.has_window() {
                let k = self.shared.cfg.tail_fec_packets;
                f.set_window(len, len - tailfec::tail_len(len, k, mtu) as u64);
            }
        }
        let Ok(mut chunks) = stream.read(!tail_fec) else {
            return;
        };
        let limits = self
            .shared
            .real_mode()
            .map(|r| (r.max_message_bytes, r.max_buffered_bytes));
        let mut over = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(c)) => {
                    s.recv.got += c.bytes.len() as u64;
                    if let Some(f) = fec.as_mut() {
                        f.add_data(c.offset, &c.bytes);
                    }
                    if let Some((max_message, max_buffered)) = limits {
                        self.buffered += c.bytes.len() as u64;
                        if s.recv.got > max_message || self.buffered > max_buffered {
                            over = true;
                            break;
                        }
                        s.recv.buf.extend_from_slice(&c.bytes);
                    }
                }
                Ok(None) => {
                    s.recv.fin = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = chunks.finalize();
        if over {
            self.counters.protocol_errors += 1;
            self.close(now, real::ERROR_TOO_LARGE, "message over the limit");
            return;
        }
        if limits.is_some() && s.recv.fin && s.recv.msg.is_none() {
            // The FIN delimits the message: a response on our request's stream is the request's id
            // with the low bit set, anything else is named by its stream.
            let msg = match &s.send {
                Some(x) if s.rpc => x.msg | 1,
                _ => u64::from(id),
            };
            s.recv.msg = Some((msg, s.recv.got));
        }
        if self.side == Side::Client && self.counters.first_bytes == 0 && s.recv.got > 0 {
            self.counters.first_bytes = 1;
            self.counters.first_byte_ns = now.saturating_sub(self.start).0;
        }
        if s.recv.fin {
            self.fec_rx.remove(&id);
            self.received(now, id);
        } else if tail_fec && !done {
            self.try_fec(now, id);
        }
    }

    /// A stream's receive side is complete (or was just framed): report the message, end the record.
    fn received(&mut self, now: Time, id: StreamId) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let (Some(_), true, false) = (s.recv.msg, s.recv.fin, s.recv.reported) else {
            return;
        };
        self.deliver(now, id);
    }

    /// Reports a stream's message (complete, or rebuilt from its tail parity) and ends its record.
    fn deliver(&mut self, now: Time, id: StreamId) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some((msg, len)) = s.recv.msg else {
            return;
        };
        s.recv.reported = true;
        if self.shared.real_mode().is_some() {
            self.inbox.insert(msg, std::mem::take(&mut s.recv.buf));
        }
        self.events.push_back(AppEvent::MessageReceived { msg });
        if id.dir() == Dir::Bi && id.initiator() != self.side {
            self.requests_in.insert(msg, id);
        }
        if s.rpc {
            let rec = StreamRecord {
                id: id.index(),
                start: s.opened,
                end: now,
                // Rebuilt from the parity, the message is complete before all its bytes arrived.
                total_bytes: s.recv.got.max(len),
            };
            self.counters.streams_completed += 1;
            self.counters.stream_ns += rec.end.saturating_sub(rec.start).0;
            if let Some(req) = s.send.as_ref().map(|x| x.msg) {
                self.requests_out.remove(&req);
            }
            if self.shared.cfg.migration.enabled && self.monitor.record(&rec) {
                self.migrate(now);
            }
        }
        self.gc(id);
    }

    fn report_framed_late(&mut self, now: Time) {
        while let Some(id) = self.framed_late.pop() {
            self.received(now, id);
        }
    }

    /// Drops a stream's state once both of its sides are done.
    fn gc(&mut self, id: StreamId) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let send_done = s.send.as_ref().is_none_or(|x| x.acked);
        let has_recv = id.dir() == Dir::Bi || id.initiator() != self.side;
        let recv_done = !has_recv || s.recv.reported;
        // A peer's request stream stays until our response on it is acknowledged.
        let awaiting_response = id.dir() == Dir::Bi && id.initiator() != self.side && s.send.is_none();
        if send_done && recv_done && !awaiting_response {
            self.streams.remove(&id);
        }
    }

    fn accept(&mut self, now: Time, dir: Dir) {
        loop {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let Some(id) = conn.streams().accept(dir) else {
                return;
            };
            let k = dir as usize;
            self.accepted[k] = self.accepted[k].max(id.index() + 1);
            let msg = self.expect[k].get(id.index() as usize).copied();
            self.streams.insert(
                id,
                StreamState {
                    opened: now,
                    send: None,
                    recv: RecvSide {
                        msg,
                        ..RecvSide::default()
                    },
                    rpc: false,
                },
            );
            self.read(now, id);
        }
    }

    /// Bytes of the connection's packets declared lost so far.
    fn lost_bytes(&self) -> u64 {
        self.conn
            .as_ref()
            .map_or(0, |(_, conn)| conn.stats().path.lost_bytes)
    }

    fn acked(&mut self, id: StreamId) {
        let lost_now = self.lost_bytes();
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        if send.acked {
            return;
        }
        send.acked = true;
        let stats = send.stats(lost_now);
        self.events
            .push_back(AppEvent::MessageAcked { msg: send.msg, stats });
        if self.shared.real_mode().is_some() {
            if self.acked_stats.len() == ACKED_STATS {
                self.acked_stats.pop_front();
            }
            self.acked_stats.push_back((send.msg, stats));
        }
        self.gc(id);
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

    /// The connection is over: every message not yet acknowledged failed, and stream state goes.
    fn fail_all(&mut self) {
        let lost_now = self.lost_bytes();
        let mut failed: Vec<(StreamId, MsgId, MessageStats)> = self
            .streams
            .iter()
            .filter_map(|(&id, s)| {
                let x = s.send.as_ref().filter(|x| !x.acked)?;
                Some((id, x.msg, x.stats(lost_now)))
            })
            .collect();
        failed.sort_unstable_by_key(|f| f.0);
        let queued = self.pending.drain(..).map(|(msg, len, _, _)| {
            let stats = MessageStats {
                sent_bytes: len,
                ..MessageStats::default()
            };
            (msg, stats)
        });
        for (msg, stats) in failed.into_iter().map(|(_, m, st)| (m, st)).chain(queued) {
            self.events.push_back(AppEvent::MessageFailed { msg, stats });
        }
        self.streams.clear();
        self.fec_rx.clear();
        self.repairs_due.clear();
        self.buffered = self.inbox.values().map(|b| b.len() as u64).sum();
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

    /// The server refused our 0-RTT data: quinn has dropped the streams we opened (and what we
    /// wrote on them) and will number new ones from 0 again. Re-open them in the same order, so they
    /// get the same ids, and write their messages again as 1-RTT data; what the application framed on
    /// them (the expected responses) stays.
    fn zero_rtt_rejected(&mut self) {
        let ours: Vec<StreamId> = self
            .streams
            .keys()
            .copied()
            .filter(|id| id.initiator() == self.side)
            .collect();
        for id in ours {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let reopened = conn.streams().open(id.dir());
            let Some(mut s) = self.streams.remove(&id) else {
                continue;
            };
            if let Some(x) = s.send.as_mut() {
                x.written = 0;
                x.finished = false;
                x.acked = false;
                x.repair_queued = false;
            }
            self.repairs_due.retain(|r| r.0 != id);
            self.fec_rx.remove(&id);
            s.recv.got = 0;
            s.recv.fin = false;
            match reopened {
                Some(new) => {
                    // Same id: quinn restarts numbering and we re-open in id order.
                    debug_assert_eq!(new, id);
                    if let Some(x) = s.send.as_ref() {
                        if id.dir() == Dir::Bi {
                            self.requests_out.insert(x.msg, new);
                        }
                    }
                    self.streams.insert(new, s);
                    self.write(new);
                }
                None => {
                    // The new stream limit is below the remembered one: queue it like a new message.
                    if let Some(x) = s.send {
                        self.requests_out.remove(&x.msg);
                        self.pending.push_back((x.msg, x.len, id.dir(), x.data));
                    }
                }
            }
        }
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
        let mean_bytes = self.monitor.mean_bytes().max(1);
        let mut in_flight: Vec<(StreamId, (f64, u64))> = self
            .requests_out
            .values()
            .filter_map(|id| self.streams.get(id).map(|s| (*id, s)))
            .map(|(id, s)| {
                let bytes = s.recv.msg.map_or(mean_bytes, |(_, l)| l.max(1));
                (id, (now.saturating_sub(s.opened).0 as f64 / bytes as f64, bytes))
            })
            .filter(|&(_, (v, _))| v > base)
            .collect();
        in_flight.sort_unstable_by_key(|x| x.0);
        let prov: Vec<(f64, u64)> = in_flight.into_iter().map(|x| x.1).collect();
        if !prov.is_empty() && self.monitor.fires(&prov) {
            self.migrate(now);
        }
    }

    /// Queues a message for a stream of its own: bidirectional for a request (its response comes
    /// back on it), unidirectional otherwise.
    fn queue_message(&mut self, now: Time, msg: MsgId, len_bytes: u64, dir: Dir, data: Option<Vec<u8>>) {
        self.pending.push_back((msg, len_bytes, dir, data));
        self.open_pending(now);
        self.process(now);
    }

    /// Frames the peer's next stream of kind `dir` (peers open streams in the order their
    /// application sends, so the k-th framed message is on the peer's k-th stream).
    fn expect_on(&mut self, dir: Dir, msg: MsgId, len_bytes: u64) {
        // On real sockets a message is its stream, delimited by the FIN: nothing to frame.
        if self.shared.real_mode().is_some() {
            return;
        }
        let k = dir as usize;
        let idx = self.expect[k].len() as u64;
        self.expect[k].push((msg, len_bytes));
        let id = StreamId::new(self.peer_side(), dir, idx);
        if let Some(s) = self.streams.get_mut(&id) {
            s.recv.msg = Some((msg, len_bytes));
            if s.recv.fin {
                self.framed_late.push(id);
            }
        }
    }
}

impl DcquicEngine {
    /// Keeps a stateless datagram quinn wrote to `scratch` (a refused handshake's close, a version
    /// negotiation, a reset) for the next `poll_transmit`: on real sockets only, at most
    /// [`STATELESS_QUEUE`] at once.
    fn stateless_out(&mut self, t: &quinn_proto::Transmit) {
        if self.shared.real_mode().is_some() && self.stateless.len() < STATELESS_QUEUE {
            let n = t.size.min(self.scratch.len());
            self.stateless
                .push_back((t.destination, self.scratch[..n].to_vec()));
        }
    }

    /// The packet of a datagram of `size` bytes to `to`.
    fn datagram(&self, to: SocketAddr, ecn: Option<EcnCodepoint>, size: usize) -> Packet {
        let tuple = FiveTuple {
            src: self.tuple.src,
            dst: addr_of(to),
            src_port: self.tuple.src_port,
            dst_port: to.port(),
            proto: Proto::Udp,
        };
        let ecn = match ecn {
            Some(EcnCodepoint::Ect0) | Some(EcnCodepoint::Ect1) if self.shared.cfg.ecn => Ecn::Ect0,
            Some(EcnCodepoint::Ce) => Ecn::Ce,
            _ => Ecn::NotEct,
        };
        Packet {
            tuple,
            size_bytes: size as u32 + self.shared.cfg.header_bytes,
            ecn,
            header: Header::Datagram {
                payload_len: size as u32,
            },
            ..Packet::default()
        }
    }

    /// Queues a message as the application asked (`data`: its bytes, on real sockets).
    fn send(&mut self, now: Time, how: Outgoing, msg: MsgId, len_bytes: u64, data: Option<Vec<u8>>) {
        match how {
            Outgoing::Message => self.queue_message(now, msg, len_bytes, Dir::Uni, data),
            Outgoing::Request => self.queue_message(now, msg, len_bytes, Dir::Bi, data),
            Outgoing::Response { request } => {
                if let Some(id) = self.requests_in.remove(&request) {
                    let lost_at_open = self.lost_bytes();
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.send = Some(SendSide {
                            msg,
                            len: len_bytes,
                            lost_at_open,
                            data,
                            ..SendSide::default()
                        });
                        self.write(id);
                        self.process(now);
                        return;
                    }
                }
                // The request's stream is gone: the response travels on a stream of its own.
                self.queue_message(now, msg, len_bytes, Dir::Uni, data);
            }
        }
    }
}

impl Engine for DcquicEngine {
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        self.send(now, Outgoing::Message, msg, len_bytes, None);
    }

    fn send_request(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        self.send(now, Outgoing::Request, msg, len_bytes, None);
    }

    fn send_response(&mut self, now: Time, request: MsgId, msg: MsgId, len_bytes: u64) {
        self.send(now, Outgoing::Response { request }, msg, len_bytes, None);
    }

    /// The stream carries `data` itself (real sockets, or a simulation checking bytes).
    fn send_bytes(&mut self, now: Time, how: Outgoing, msg: MsgId, data: &[u8]) {
        self.send(now, how, msg, data.len() as u64, Some(data.to_vec()));
    }

    /// On real sockets: the bytes of a message delivered with `MessageReceived`.
    fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        let b = self.inbox.remove(&msg)?;
        self.buffered = self.buffered.saturating_sub(b.len() as u64);
        Some(b)
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.expect_on(Dir::Uni, msg, len_bytes);
    }

    fn expect_request(&mut self, msg: MsgId, len_bytes: u64) {
        self.expect_on(Dir::Bi, msg, len_bytes);
    }

    fn expect_response(&mut self, request: MsgId, msg: MsgId, len_bytes: u64) {
        if self.shared.real_mode().is_some() {
            return;
        }
        if let Some(&id) = self.requests_out.get(&request) {
            if let Some(s) = self.streams.get_mut(&id) {
                s.recv.msg = Some((msg, len_bytes));
                // A response already complete is reported at the next input (no `now` here).
                if s.recv.fin {
                    self.framed_late.push(id);
                }
                return;
            }
        }
        self.expect_on(Dir::Uni, msg, len_bytes);
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        let remote = sock(pkt.tuple.src, pkt.tuple.src_port);
        let ecn = match pkt.ecn {
            Ecn::NotEct => None,
            Ecn::Ect0 => Some(EcnCodepoint::Ect0),
            Ecn::Ce => Some(EcnCodepoint::Ce),
        };
        let data = bytes::BytesMut::from(payload);
        self.scratch.clear();
        match self.endpoint.handle(
            to_instant(self.shared.epoch, now),
            remote,
            None,
            ecn,
            data,
            &mut self.scratch,
        ) {
            Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                if let Some((_, c)) = self.conn.as_mut() {
                    c.handle_event(ev);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.conn.is_none() && self.server_cfg.is_some() {
                    self.tuple.dst = pkt.tuple.src;
                    self.tuple.dst_port = pkt.tuple.src_port;
                    // A refused handshake (bad Initial, no common ALPN) leaves the server waiting for a
                    // good one; on real sockets the refusal goes back to the client.
                    match self.endpoint.accept(
                        incoming,
                        to_instant(self.shared.epoch, now),
                        &mut self.scratch,
                        self.server_cfg.clone(),
                    ) {
                        Ok((ch, c)) => self.conn = Some((ch, c)),
                        Err(e) => {
                            self.close_reason = Some(e.cause.to_string());
                            if let Some(t) = e.response {
                                self.stateless_out(&t);
                            }
                        }
                    }
                } else {
                    self.endpoint.ignore(incoming);
                }
            }
            // Stateless responses (version negotiation, resets) do not arise between simulated peers.
            Some(DatagramEvent::Response(t)) => self.stateless_out(&t),
            None => {}
        }
        self.report_framed_late(now);
        self.process(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.report_framed_late(now);
        if self.quinn_timeout.is_some_and(|t| t <= now) {
            if let Some((_, c)) = self.conn.as_mut() {
                c.handle_timeout(to_instant(self.shared.epoch, now));
            }
        }
        if self.next_check.is_some_and(|t| t <= now) {
            self.next_check = None;
            self.check_migration(now);
        }
        self.process(now);
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        if let Some((to, bytes)) = self.stateless.pop_front() {
            payload.extend_from_slice(&bytes);
            return Some(self.datagram(to, None, bytes.len()));
        }
        let at = to_instant(self.shared.epoch, now);
        let (_, conn) = self.conn.as_mut()?;
        let mut sent = conn.poll_transmit(at, 1, payload);
        if sent.is_none() && !self.repairs_due.is_empty() {
            // quinn has sent what it could of the messages: now their repairs.
            self.send_repairs();
            sent = self.conn.as_mut()?.1.poll_transmit(at, 1, payload);
        }
        let Some(t) = sent else {
            self.refresh_timeout(now);
            return None;
        };
        payload.truncate(t.size);
        Some(self.datagram(t.destination, t.ecn, t.size))
    }

    fn poll_timeout(&self) -> Option<Time> {
        match (self.quinn_timeout, self.next_check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.streams
            .values()
            .filter_map(|s| s.send.as_ref())
            .find(|x| x.msg == msg)
            .map(|x| {
                let stats = x.stats(self.lost_bytes());
                MessageStats {
                    // Written so far, not the whole message: it did not finish.
                    sent_bytes: stats.sent_bytes - x.len + x.written,
                    ..stats
                }
            })
            .or_else(|| {
                self.pending
                    .iter()
                    .find(|p| p.0 == msg)
                    .map(|_| MessageStats::default())
            })
            .or_else(|| self.acked_stats.iter().rev().find(|a| a.0 == msg).map(|a| a.1))
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters();
        vec![
            ("dcquic_handshakes", c.handshakes),
            ("dcquic_handshake_ns", c.handshake_ns),
            ("dcquic_migrations", c.migrations),
            ("dcquic_rebinds", c.rebinds),
            ("dcquic_streams_completed", c.streams_completed),
            ("dcquic_stream_ns", c.stream_ns),
            ("dcquic_lost_packets", c.lost_packets),
            ("dcquic_0rtt_attempts", c.zero_rtt_attempts),
            ("dcquic_0rtt_accepted", c.zero_rtt_accepted),
            ("dcquic_first_byte_ns", c.first_byte_ns),
            ("dcquic_first_bytes", c.first_bytes),
            ("dcquic_fec_recovered", c.fec_recovered),
            ("dcquic_fec_recovered_bytes", c.fec_recovered_bytes),
            ("dcquic_fec_repairs", c.fec_repairs),
            ("dcquic_fec_repair_bytes", c.fec_repair_bytes),
            ("dcquic_protocol_errors", c.protocol_errors),
        ]
    }
}
