//! DCQUIC (seed 004): QUIC tuned for the datacenter, on quinn-proto.
//!
//! One [`DcquicEngine`] is one end of one QUIC connection: a quinn-proto `Endpoint` holding a single
//! `Connection`, driven through the [`Engine`](crate::engine::Engine) contract with real datagrams
//! (the simulator carries the bytes beside the packet). On top of stock QUIC it adds what the paper
//! adds:
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

mod bridge;
pub mod cc;
mod config;
mod counters;
pub mod crypto;
mod engine;
pub mod migration;
pub mod mps;
pub mod real;
#[cfg(any(test, feature = "dcquic-testkit"))]
pub mod real_testkit;
#[cfg(test)]
mod real_tests;
pub mod retry;
pub mod route;
mod shared;
mod simrand;
mod streams;
pub mod tailfec;
#[cfg(test)]
mod tests;
pub mod tickets;

pub use cc::CcKind;
pub use config::DcquicConfig;
pub use counters::DcquicCounters;
pub use engine::DcquicEngine;
pub use migration::{MigrationConfig, Monitor, StreamRecord};
pub use mps::MpsConfig;
pub use shared::Shared;
