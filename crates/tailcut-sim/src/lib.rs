//! tailcut-sim: a deterministic packet-level datacenter network simulator.
//!
//! Integer-nanosecond time, one event list ordered by (time, insertion sequence), packets in an arena,
//! per-switch ECMP or source-chosen paths, byte-limited output queues with drop-tail / ECN / RED /
//! random-drop and multi-class scheduling, link faults, and the protocol engines of `tailcut-proto`
//! driven through their sans-IO contract. Same configuration and seed, same results.

pub mod api;
pub mod arena;
pub mod config;
pub mod estimate;
pub mod event;
pub mod fault;
mod hash;
pub mod limits;
pub mod metrics;
pub mod net;
pub mod paths;
pub mod run;
/// The scheme layer (`tailcut-scheme`), which every driver shares.
pub use tailcut_scheme as scheme;
pub mod sim;
pub mod summary;
mod tagged;
pub mod topo;
pub mod trace;
pub mod transport;
pub mod workload;

pub use config::Experiment;
pub use run::{run, RunError, Tables};
