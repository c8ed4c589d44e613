//! tailcut-testbed: real Linux hosts through an emulated datacenter fabric.
//!
//! Each host is an anonymous network namespace whose NICs are TUN devices held by this process; one
//! fabric thread forwards the hosts' real packets through the simulator's own ports (queue
//! disciplines with real CE marks, serialisation, loss models, propagation delay), switches
//! (per-switch salted ECMP) and fault schedule, in real time. See `docs/testbed.md`.

pub mod addr;
pub mod error;
pub mod fabric;
pub mod host;
pub mod lateness;
pub mod netstat;
pub mod outputs;
pub mod pcap;
pub mod reconnect;
/// Whether this machine can run a testbed (in tailcut-sys, so that crates below the testbed, the
/// T-RACKs agent's BPF tests, share it).
pub use tailcut_sys::probe;
pub mod report;
pub mod runtime_agent;
pub mod self_command;
pub mod shim;
pub mod testbed;
pub mod timing;
pub mod wire;

pub use error::TestbedError;
pub use host::{HostNs, HostSetup};
pub use report::FabricReport;
pub use self_command::SelfCommand;
pub use testbed::{Testbed, TestbedSpec};
pub mod agent;
pub mod cli;
pub mod command;
pub mod config;
pub mod dctcp;
pub mod doctor;
pub mod experiment;
