//! Sans-IO protocol engines for tailcut.
//!
//! Every engine implements [`engine::Engine`]; host shims implement [`engine::Shim`]. Nothing here reads
//! a clock, owns a socket or uses global randomness (enforced by clippy's `disallowed-methods`), so the
//! same code runs in the simulator and, later, on real sockets.

mod macros;

pub mod cloudburst;
pub mod config_error;
pub mod dcquic;
pub mod engine;
pub mod fec;
pub mod flags;
pub mod mptcp;
pub mod packet;
pub mod pattern;
pub mod reconnect;
pub mod rng;
pub mod seq;
pub mod stats;
pub mod tcp;
#[cfg(test)]
pub(crate) mod testing;
pub mod time;
pub mod tls13;
pub mod tracks;
pub mod units;
pub mod wire;

pub use config_error::ConfigError;
pub use engine::{AppEvent, Direction, Engine, EngineProbe, MessageStats, MsgId, Outgoing, Shim, Verdict};
pub use packet::{
    Addr, Ecn, FiveTuple, Header, Packet, Proto, Route, SackBlocks, TcpExt, TcpFlags, TcpHeader,
};
pub use seq::Seq;
pub use time::{Dur, Time};
