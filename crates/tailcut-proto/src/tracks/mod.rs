//! T-RACKs (Abdelmoniem & Bensaou, INFOCOM'18 / ToN'21): a hypervisor shim at the data sender's host
//! that hides TCP's minimum RTO from small flows. It watches the packets of unmodified TCP and, when a
//! flow's cumulative ACK has not advanced for `beta = alpha * RTT + rand(RTT)`, spoofs duplicate ACKs of
//! the last ACK toward the local sender so that the sender fast-retransmits instead of waiting for its
//! retransmission timeout (Algorithms 1 and 2 of the paper; `docs/tracks.md` maps each line).
//!
//! The shim is sans-IO like every engine: `now` comes in on every call, randomness from a seeded RNG.

mod config;
mod flow;
mod shim;
#[cfg(test)]
mod tests;

pub use config::{FakeSackBlock, RttSource, TracksConfig, TracksCounters};
pub use shim::{RecoveringFlow, Tracks};
