//! MPTCP as the FUSO paper's baseline ran it (Linux MPTCP v0.90), and FUSO (Chen et al., USENIX ATC'16)
//! on top of it.
//!
//! One [`MptcpEndpoint`] is one end of one MPTCP connection. It owns `subflows` TCP sub-flows, each
//! with its own 5-tuple (consecutive ports from the connection's own pair, so ECMP hashes them onto
//! paths independently) and its own TCP sender and receiver from `crate::tcp` (SACK / RFC 6675
//! recovery, RTO, DCTCP when configured). Above them sit the data level (RFC 8684 Sec. 3.3): data
//! sequence numbers carried in a DSS option on every segment, a data-level cumulative ACK, a
//! data-level reassembly buffer that delivers the application's messages, and message accounting by
//! data sequence number.
//!
//! Layout: `config.rs` (parameters), `subflow.rs` (one sub-flow and its wire format), `lia.rs`
//! (coupled congestion control, RFC 6356), `fuso.rs` (FUSO's worst / best sub-flow choice, Sec. 3.2),
//! `endpoint.rs` (the engine: scheduler, opportunistic retransmission and penalisation, reinjection,
//! FUSO's `try_send_recoveries`, the receiver). `docs/fuso.md` maps every rule to the papers.

mod config;
mod endpoint;
mod fuso;
mod lia;
pub mod peer_input;
mod subflow;

#[cfg(test)]
mod tests;

pub use config::{FusoConfig, MptcpConfig};
pub use endpoint::{MptcpEndpoint, MptcpStats};
