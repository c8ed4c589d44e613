//! TCP: NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO, DCTCP.
//!
//! Layout: [`TcpEndpoint`] (`endpoint.rs`) owns a sender (`sender.rs`: windows, loss detection and
//! recovery) and a receiver (`receiver.rs`: reassembly, ACK/SACK generation, ECN echo). The sender is
//! built from small parts that later schemes reuse: the segment scoreboard (`scoreboard.rs`), the RTT
//! estimator (`rtt.rs`), congestion-window arithmetic (`cc.rs`) and per-message accounting
//! (`ledger.rs`).

mod cc;
mod config;
mod endpoint;
mod ledger;
mod receiver;
mod rtt;
mod scoreboard;
mod sender;
mod stats;

#[cfg(test)]
mod tests;

pub use config::{CongestionControl, TcpConfig};
pub use endpoint::{Role, TcpEndpoint};
pub use stats::ConnStats;
