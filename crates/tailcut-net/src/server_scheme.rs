//! What a scheme implements to run in the server loop (`server.rs`): which association a datagram
//! belongs to, the engine of a new association, what a received message is and how a response goes
//! out. The schemes (`cloudburst.rs`, `tcp.rs`, `dcquic.rs`) import this, not the loop.

use crate::codec::Codec;
use crate::frame::{Preamble, PREAMBLE_BYTES};
use crate::stats::ServerStats;
use std::net::SocketAddr;
use tailcut_proto::{Dur, MsgId, Time};

/// Where a datagram goes.
pub struct Routed {
    pub id: u64,
    /// The path it names, or `None`: the path is its source address's slot in the association.
    pub path: Option<u8>,
    /// Bytes in front of the engine's.
    pub skip: usize,
    /// It opens association `id`, which does not exist yet.
    pub opens: bool,
}

/// What a scheme makes of an opening datagram whose source must show that it receives at its
/// address before the server allocates anything (`NetConfig::address_validation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressProof {
    /// It carries the scheme's own proof (a valid QUIC Retry token): it may open.
    Shown,
    /// It does not: the reply the scheme wrote (a QUIC Retry) goes back to its source, and nothing
    /// opens.
    Challenged,
    /// Nothing opens and nothing is sent.
    Refused,
    /// The scheme has no check of its own: the runtime's cookie applies (`address_check.rs`).
    Runtime,
}

/// What a received message is to the server.
pub enum Request {
    /// A request to hand to the handler; its response goes out under `key`.
    Answer { key: u64, data: Vec<u8> },
    /// A request already answered (decoded again from late packets).
    Duplicate,
    /// Not a request (part of the scheme's framing).
    None,
    /// The peer broke the scheme's framing: the association is dropped.
    Broken,
}

/// A scheme's side of the server loop.
pub trait ServerScheme: Send + 'static {
    type E: Codec + Send;
    /// Per-association state of the scheme (duplicate detection, stream framing).
    type State: Send;
    /// May this datagram (its bytes after the preamble) open an association? Only the default
    /// [`ServerScheme::route`] asks, so a scheme that keeps it overrides this; by default nothing
    /// opens one.
    fn opens(&self, _bytes: &[u8]) -> bool {
        false
    }
    /// Which association a datagram belongs to (`live` says whether one exists). By default its
    /// preamble names the scheme, the association and the path, and only a datagram that
    /// [`ServerScheme::opens`] one may open it.
    fn route(&mut self, bytes: &[u8], live: &dyn Fn(u64) -> bool) -> Option<Routed> {
        let (p, rest) = Preamble::parse(bytes).filter(|(p, _)| p.scheme == <Self::E as Codec>::SCHEME)?;
        route_by_preamble(self, &p, rest, PREAMBLE_BYTES, live)
    }
    /// The opening datagram `bytes` (the engine's bytes) of association `id` from `from` must show
    /// its source's address; a challenge goes into `reply`. By default the runtime's cookie does it.
    /// A scheme that refuses forgets what [`ServerScheme::route`] noted for `id`.
    fn check_address(
        &mut self,
        _id: u64,
        _bytes: &[u8],
        _from: SocketAddr,
        _now: Time,
        _reply: &mut Vec<u8>,
    ) -> AddressProof {
        AddressProof::Runtime
    }
    /// The engine and state of a new association `id`.
    fn open(&mut self, id: u64, now: Time) -> Option<(Self::E, Self::State)>;
    /// [`ServerScheme::open`] for an association opened from `from` (the TCP family sizes its
    /// segments for the route to it).
    fn open_from(&mut self, id: u64, now: Time, _from: SocketAddr) -> Option<(Self::E, Self::State)> {
        self.open(id, now)
    }
    /// The server is shutting down: tell the peer of this association (DCQUIC's CONNECTION_CLOSE).
    fn close(&self, _e: &mut Self::E, _now: Time) {}
    /// Association `id` is gone (evicted, broken, finished, closed or expired); `state` was its
    /// scheme state.
    fn forget(&mut self, _id: u64, _state: &Self::State) {}
    /// The engine's connection is over: its association can go (the scheme adds the engine's final
    /// counters to `stats`).
    fn finished(&self, _e: &Self::E, _stats: &mut ServerStats) -> bool {
        false
    }
    /// The engine received message `msg`.
    fn request(&self, e: &mut Self::E, st: &mut Self::State, now: Time, msg: MsgId) -> Request;
    /// The engine message id the response to request `key` goes out under (what its
    /// `MessageAcked` names): the key itself, unless the scheme numbers responses apart.
    fn response_msg(key: u64) -> MsgId {
        key
    }
    /// Queue the response to the request `key`.
    fn respond(&self, e: &mut Self::E, st: &mut Self::State, now: Time, key: u64, response: &[u8]);
    /// The server thread's own delay so far, `total` (its driver's lateness past its timer
    /// deadlines), for an engine whose timers should not count it (CloudBurst's
    /// `exclude_host_delay`); told to every association when it grows, and to a new one at once.
    fn host_delay(_e: &mut Self::E, _total: Dur) {}
    /// The engine acknowledged (or gave up) the response `msg`.
    fn acked(&self, _st: &mut Self::State, _msg: MsgId) {}
    /// Scheme counters over every association's engine into the published stats.
    fn publish<'a>(&self, engines: impl Iterator<Item = &'a Self::E>, stats: &mut ServerStats)
    where
        Self::E: 'a;
}

/// Where a datagram goes by its preamble `p` (already checked to name this scheme), followed by
/// `header` bytes in all before the engine's bytes `rest`: to a live association, or to a new one if
/// [`ServerScheme::opens`] says `rest` may open it; nowhere otherwise. Plain datagrams and echoes
/// (whose token comes between the preamble and the engine's bytes) route alike.
pub(crate) fn route_by_preamble<S: ServerScheme + ?Sized>(
    scheme: &S,
    p: &Preamble,
    rest: &[u8],
    header: usize,
    live: &dyn Fn(u64) -> bool,
) -> Option<Routed> {
    let live = live(p.association);
    let opens = !live && scheme.opens(rest);
    (live || opens).then_some(Routed {
        id: p.association,
        path: Some(p.path),
        skip: header,
        opens,
    })
}
