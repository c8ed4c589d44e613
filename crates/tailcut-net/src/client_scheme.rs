//! What a scheme implements to run in the client loop (`client.rs`): its engine, how a call becomes
//! engine messages and how engine events become responses. The schemes (`cloudburst.rs`, `tcp.rs`,
//! `dcquic.rs`) import this, not the loop.

use crate::codec::Codec;
use crate::config::NetConfig;
use crate::frame::Preamble;
use crate::stats::ClientStats;
use tailcut_proto::{AppEvent, Dur, Ecn, MessageStats, Packet, Time};

/// What an engine event means to the calls.
pub enum CallEvent {
    /// The response of call `key` arrived.
    Response { key: u64, bytes: Vec<u8> },
    /// Call `key`'s request is acknowledged or given up: its counters are final.
    RequestFinal { key: u64, stats: MessageStats },
    /// The peer broke the scheme's framing; nothing more will arrive.
    Broken,
    /// A response that is no call's (late, of an older call on a reused id): dropped.
    Stale,
}

/// A scheme's side of the client loop: its engine, how a call becomes engine messages, how engine
/// events become responses.
pub trait ClientScheme: Send + 'static {
    type E: Codec + Send;
    fn engine(&mut self) -> &mut Self::E;
    fn engine_ref(&self) -> &Self::E;
    /// Hands call `data` to the engine and returns its key, or `None` if the call must wait (no free
    /// message id yet).
    fn start(&mut self, now: Time, data: &[u8]) -> Option<u64>;
    /// When a waiting call may start, if not now.
    fn next_start(&self) -> Option<Time> {
        None
    }
    /// Engine event `ev`, in terms of calls.
    fn on_event(&mut self, now: Time, ev: AppEvent) -> Option<CallEvent>;
    /// The response of call `key` came before its request was final: a scheme whose response proves
    /// the request arrived stops sending it and returns its final counters.
    fn settle(&mut self, _now: Time, _key: u64) -> Option<MessageStats> {
        None
    }
    /// When call `key` last made progress (its request acknowledged in part, a packet of its
    /// response), if the scheme can tell: its call timeout then counts from there, not from its
    /// start (a CloudBurst message of many blocks takes as long as its size needs). `None`: from
    /// the start.
    fn last_progress(&self, _key: u64) -> Option<Time> {
        None
    }
    /// Call `key` is over (answered or timed out, its request final); its id may be reused.
    fn release(&mut self, _now: Time, _key: u64) {}
    /// Scheme counters into the published stats.
    fn publish(&self, _stats: &mut ClientStats) {}
    /// The client is shutting down: tell the peer (DCQUIC sends its CONNECTION_CLOSE).
    fn close(&mut self, _now: Time) {}
    /// Whether the client starts over on a new association when the server has been silent for half
    /// of `association_idle_timeout` and no caller waits, as the server may have dropped the old one
    /// (a stream scheme's data would not reopen it). CloudBurst needs none (any coded packet opens an
    /// association) and DCQUIC reconnects by itself.
    const REOPENS: bool = false;
    /// A new engine (a new connection) on association `association`, nothing in flight, the old
    /// one closed: after the idle rule of [`ClientScheme::REOPENS`], or on the caller's
    /// [`crate::Client::reconnect`].
    fn reopen(&mut self, cfg: &NetConfig, association: u64, now: Time) -> Result<(), String>;
    /// The runtime thread starts: what the engine sends first leaves now.
    fn begin(&mut self, _now: Time) {}
    /// The host's own delay so far ([`crate::driver::Driver`]'s lateness past its deadlines), for
    /// an engine that tells it from the network's (DCQUIC's `migration.exclude_host_delay`).
    fn host_delay(&mut self, _total: Dur) {}
    /// Why the engine's connection ended, if it did: its calls can no longer be answered (DCQUIC; a
    /// stream or CloudBurst association never ends by itself).
    fn failure(&self) -> Option<String> {
        None
    }
    /// The packet and engine bytes of a datagram that came from the server on socket `k`, if it is
    /// this association's: by default a preamble naming the scheme and the association.
    fn decode(bytes: &[u8], ecn: Ecn, _k: usize, association: u64) -> Option<(Packet, &[u8])> {
        let (p, b) = Preamble::parse(bytes)
            .filter(|(p, _)| p.scheme == <Self::E as Codec>::SCHEME && p.association == association)?;
        <Self::E as Codec>::decode(b, ecn, p.path)
    }
}
