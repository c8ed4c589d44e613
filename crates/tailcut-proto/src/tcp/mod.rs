//! TCP: NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO, DCTCP.
//!
//! Layout: [`TcpEndpoint`] (`endpoint.rs`) owns a sender (`sender.rs`: windows, loss detection and
//! recovery) and a receiver (`receiver.rs`: reassembly, ACK/SACK generation, ECN echo). The sender is
//! built from small parts that later schemes reuse: the segment scoreboard (`scoreboard.rs`), the RTT
//! estimator (`rtt.rs`), congestion control (`cc/`: the shared window arithmetic and one file per
//! algorithm) and per-message accounting (`ledger.rs`).
//!
//! # What is modelled
//! - RFC 5681 slow start / congestion avoidance with byte counting, RFC 6928 initial window, slow
//!   start after idle (Sec. 4.1); flow control by the peer's advertised window; no Nagle.
//! - Loss recovery: NewReno (RFC 6582) without SACK; with SACK (RFC 2018) the RFC 6675 scoreboard,
//!   IsLost, pipe, NextSeg rules 1-2 and one reduction per recovery; limited transmit (RFC 3042);
//!   early retransmit (RFC 5827); RACK-TLP (RFC 8985, `rack.rs`) in place of DupThresh when SACK
//!   is on (the default, as Linux); RFC 6298 RTO with exponential back-off ended as Linux or Karn
//!   (`rto_backoff`), go-back from `snd_una` after a timeout keeping SACK information (RFC 6675
//!   Sec. 5.1). Under the Linux host profile (`HostProfile`, the default) PRR (RFC 6937, `prr.rs`)
//!   in SACK fast recovery and the RTO restarted by a retransmission of the first unacknowledged
//!   segment, as Linux.
//! - Congestion control NewReno, DCTCP (RFC 8257) and Cubic (RFC 9438 with Linux's HyStart); ECN
//!   (RFC 3168) on both sides; delayed ACKs, fixed or Linux's; RFC 7323 timestamps on every
//!   segment (echoed, not used for RTT); optional three-way handshake with SYN back-off.
//!
//! - Schemes built on TCP are extensions (`ext/`, one file each: TLP, TCP-IR, Proactive, PIAS,
//!   pFabric, CP, spraying), switched on by `TcpConfig` fields the transport registry sets (see
//!   `docs/baselines.md`). The core calls them at the points of `ext::Extension` and holds none of
//!   their state; congestion control is one trait with a file per algorithm (`cc/`).
//!
//! # What is not
//! FIN / RST and connection teardown, zero-window probing (the receiver always offers its full
//! window because the application reads at once), window scaling limits, timestamp-based undo (Eifel) and F-RTO
//! (D-SACK undo is modelled, `undo.rs`), PRR in
//! the ECN (CWR) reduction, and NextSeg rules 3-4 (see `sender.rs`, `next_transmission`). Schemes layered on this sender
//! reuse `scoreboard.rs`'s per-segment records (with a free `tag`), the explicit
//! `retransmit_segment` hook, and the RTT / congestion parts.

// The parts are crate-visible so schemes built on TCP (TLP, TCP-IR, CP, MPTCP subflows) can reuse them.
pub(crate) mod bytes;
pub(crate) mod cc;
mod config;
pub(crate) mod endpoint;
pub(crate) mod ext;
pub(crate) mod jiffies;
pub(crate) mod ledger;
pub mod peer_input;
mod prr;
pub(crate) mod rack;
pub(crate) mod receiver;
pub(crate) mod rtt;
pub(crate) mod scoreboard;
pub(crate) mod sender;
mod stats;
mod undo;

#[cfg(test)]
mod tests;

pub use config::{
    CongestionControl, CubicConfig, DelayedAck, HostDelay, HostProfile, LinuxDelayedAck, LossDetection,
    PiasConfig, RackConfig, RtoBackoff, RtoEstimator, TcpConfig, TcpIrConfig, TlpConfig, TESTBED_HOST_DELAY,
    TESTBED_HZ,
};
pub use endpoint::{Role, TcpEndpoint};
pub use stats::ConnStats;
