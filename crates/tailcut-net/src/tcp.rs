//! The stream schemes over the runtime: tailcut's TCP engine (and CP or DCTCP through its
//! configuration) and its MPTCP engine (and FUSO), unchanged, over the TCP-in-UDP encapsulation, with
//! calls framed on their byte stream (`stream.rs`).
//!
//! The client pipelines calls on its one connection and matches responses by the call id in their
//! frame header; the server answers in order. TCP opens with a SYN (the server learns the client's
//! initial sequence number there, and only a SYN opens an association). MPTCP's sub-flows start
//! established (its MP_CAPABLE / MP_JOIN handshakes are not modelled), so both ends derive every
//! initial sequence number from the association id, and any well-formed segment with a DSS opens an
//! association; sub-flow `i` is path `i` (the client's `i`-th socket).

use crate::client_scheme::{CallEvent, ClientScheme};
use crate::codec::Codec;
use crate::config::NetConfig;
use crate::route_mtus::RouteMtus;
use crate::server_scheme::{Request, ServerScheme};
use crate::stats::ServerStats;
use crate::stream::StreamFraming;
use std::net::SocketAddr;
use tailcut_proto::mptcp::{MptcpConfig, MptcpEndpoint};
use tailcut_proto::rng::{derive_seed, mix64, stream, Stream};
use tailcut_proto::tcp::{Role, TcpConfig, TcpEndpoint};
use tailcut_proto::wire::tcp_udp;
use tailcut_proto::{AppEvent, FiveTuple, MsgId, Seq, TcpExt, TcpFlags, Time};

/// Builds one end's engine of a stream scheme.
pub trait StreamEngine: Codec + Send + Sized + 'static {
    /// The engine configuration the runtime uses.
    type Config: Clone + Send + 'static;
    fn config(cfg: &NetConfig) -> Self::Config;
    fn client(c: &Self::Config, seed: u64, association: u64) -> Self;
    fn server(c: &Self::Config, seed: u64, association: u64) -> Self;
    /// May this datagram (its bytes after the preamble) open an association?
    fn opens(bytes: &[u8]) -> bool;
    /// `c` with segments of at most `mss` bytes.
    fn with_mss(c: &Self::Config, mss: u32) -> Self::Config;
}

impl StreamEngine for TcpEndpoint {
    type Config = TcpConfig;

    fn config(cfg: &NetConfig) -> TcpConfig {
        cfg.tcp_config()
    }

    fn client(c: &TcpConfig, seed: u64, association: u64) -> TcpEndpoint {
        let isn = Seq(derive_seed(seed, Stream::Engine, association) as u32);
        TcpEndpoint::new(c.clone(), FiveTuple::default(), Role::Client, isn, Seq(0))
    }

    fn server(c: &TcpConfig, seed: u64, association: u64) -> TcpEndpoint {
        let isn = Seq(derive_seed(seed, Stream::Engine, !association) as u32);
        TcpEndpoint::new(c.clone(), FiveTuple::default(), Role::Server, isn, Seq(0))
    }

    /// Only a SYN opens an association, as a listening socket.
    fn opens(bytes: &[u8]) -> bool {
        tcp_udp::parse(bytes).is_ok_and(|s| {
            let f = s.header.flags;
            f.contains(TcpFlags::SYN) && !f.contains(TcpFlags::ACK)
        })
    }

    fn with_mss(c: &TcpConfig, mss: u32) -> TcpConfig {
        TcpConfig {
            mss_bytes: c.mss_bytes.min(mss),
            ..c.clone()
        }
    }
}

/// Both ends derive the initial sequence numbers from the association id alone (their seeds may
/// differ): the client's, then the server's.
fn mptcp_isns(association: u64) -> (Seq, Seq) {
    (Seq(mix64(association) as u32), Seq(mix64(!association) as u32))
}

impl StreamEngine for MptcpEndpoint {
    type Config = (TcpConfig, MptcpConfig);

    fn config(cfg: &NetConfig) -> (TcpConfig, MptcpConfig) {
        (cfg.tcp_config(), cfg.mptcp_config())
    }

    fn client(c: &Self::Config, seed: u64, association: u64) -> MptcpEndpoint {
        let (a, b) = mptcp_isns(association);
        let rng = stream(seed, Stream::Engine, association);
        MptcpEndpoint::new(c.0.clone(), c.1.clone(), FiveTuple::default(), a, b, rng)
    }

    fn server(c: &Self::Config, seed: u64, association: u64) -> MptcpEndpoint {
        let (a, b) = mptcp_isns(association);
        let rng = stream(seed, Stream::Engine, !association);
        MptcpEndpoint::new(c.0.clone(), c.1.clone(), FiveTuple::default(), b, a, rng)
    }

    fn opens(bytes: &[u8]) -> bool {
        tcp_udp::parse(bytes).is_ok_and(|s| matches!(s.header.ext, TcpExt::Dss { .. }))
    }

    fn with_mss(c: &Self::Config, mss: u32) -> Self::Config {
        (TcpEndpoint::with_mss(&c.0, mss), c.1.clone())
    }
}

pub struct ClientSide<E: StreamEngine> {
    engine: E,
    framing: StreamFraming,
    next: u64,
}

impl<E: StreamEngine> ClientSide<E> {
    pub fn new(cfg: &NetConfig, association: u64) -> ClientSide<E> {
        let mut engine = E::client(&E::config(cfg), cfg.seed, association);
        let framing = StreamFraming::new(&mut engine, cfg.max_message_bytes());
        ClientSide {
            engine,
            framing,
            next: 0,
        }
    }
}

impl<E: StreamEngine> ClientScheme for ClientSide<E> {
    type E = E;

    fn engine(&mut self) -> &mut E {
        &mut self.engine
    }

    fn engine_ref(&self) -> &E {
        &self.engine
    }

    /// A new engine and stream on the new association; call keys go on from where they were, so a
    /// late response of the old stream can never be taken for a new call.
    const REOPENS: bool = true;

    fn reopen(&mut self, cfg: &NetConfig, association: u64, _now: Time) -> Result<(), String> {
        self.engine = E::client(&E::config(cfg), cfg.seed, association);
        self.framing = StreamFraming::new(&mut self.engine, cfg.max_message_bytes());
        Ok(())
    }

    fn start(&mut self, now: Time, data: &[u8]) -> Option<u64> {
        let key = self.next;
        self.next += 1;
        self.framing.send(&mut self.engine, now, key, data);
        Some(key)
    }

    fn on_event(&mut self, _now: Time, ev: AppEvent) -> Option<CallEvent> {
        match ev {
            AppEvent::MessageReceived { msg } => match self.framing.on_received(&mut self.engine, msg) {
                Ok(Some((key, bytes))) => Some(CallEvent::Response { key, bytes }),
                Ok(None) => None,
                Err(_) => Some(CallEvent::Broken),
            },
            AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                Some(CallEvent::RequestFinal { key: msg, stats })
            }
            AppEvent::Connected => None,
        }
    }
}

pub struct ServerSide<E: StreamEngine> {
    engine_cfg: E::Config,
    seed: u64,
    max_message: u64,
    /// The configuration when the segment size comes from the path MTU (no `mss_bytes` in the
    /// entry): its rule then sizes each association's segments for the route to its client.
    sized_by_route: Option<NetConfig>,
    /// The kernel's MTU of each client's route, probed once per address.
    route_mtus: RouteMtus,
}

impl<E: StreamEngine> ServerSide<E> {
    pub fn new(cfg: &NetConfig) -> ServerSide<E> {
        ServerSide {
            engine_cfg: E::config(cfg),
            seed: cfg.seed,
            max_message: cfg.max_message_bytes(),
            sized_by_route: cfg.mss_from_path.then(|| cfg.clone()),
            route_mtus: RouteMtus::default(),
        }
    }

    /// The engine and stream framing of a new association `id` whose engine runs `c` (what `open`
    /// and `open_from` differ in).
    fn open_with(&self, c: &E::Config, id: u64) -> (E, StreamFraming) {
        let mut e = E::server(c, self.seed, id);
        let framing = StreamFraming::new(&mut e, self.max_message);
        (e, framing)
    }
}

impl<E: StreamEngine> ServerScheme for ServerSide<E> {
    type E = E;
    type State = StreamFraming;

    fn opens(&self, bytes: &[u8]) -> bool {
        E::opens(bytes)
    }

    fn open(&mut self, id: u64, _now: Time) -> Option<(E, StreamFraming)> {
        Some(self.open_with(&self.engine_cfg, id))
    }

    /// The engine's SYN carries no MSS option, so the server sizes its segments for the route to
    /// the client, as Linux sizes the MSS it advertises: [`NetConfig::effective_path_mtu`] of the
    /// kernel's MTU of that route, less the same overhead as `path_mtu` ([`NetConfig::mss_within`];
    /// the client does the same for its paths).
    fn open_from(&mut self, id: u64, now: Time, from: SocketAddr) -> Option<(E, StreamFraming)> {
        let Some(cfg) = &self.sized_by_route else {
            return self.open(id, now);
        };
        let mtu = cfg.effective_path_mtu(self.route_mtus.get(from));
        let c = E::with_mss(&self.engine_cfg, NetConfig::mss_within(mtu));
        Some(self.open_with(&c, id))
    }

    /// A peer that sends requests but does not read (acknowledge) the responses would make them pile
    /// up here without end; past twice the largest message (at least 2 MB) of unacknowledged
    /// responses its association goes, as a socket whose send buffer stays full would be closed.
    fn request(&self, e: &mut E, st: &mut StreamFraming, _now: Time, msg: MsgId) -> Request {
        if st.unacked_bytes() > 2 * self.max_message.max(1 << 20) {
            return Request::Broken;
        }
        match st.on_received(e, msg) {
            Ok(Some((key, data))) => Request::Answer { key, data },
            Ok(None) => Request::None,
            Err(_) => Request::Broken,
        }
    }

    fn respond(&self, e: &mut E, st: &mut StreamFraming, now: Time, key: u64, response: &[u8]) {
        st.send(e, now, key, response);
    }

    fn acked(&self, st: &mut StreamFraming, msg: MsgId) {
        st.acked(msg);
    }

    fn publish<'a>(&self, _engines: impl Iterator<Item = &'a E>, _stats: &mut ServerStats) {}
}
