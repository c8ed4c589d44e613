//! tailcut-tracksd: T-RACKs on a real Linux host. The unchanged `tailcut_proto::tracks::Tracks` shim
//! runs in a user-space agent beside the kernel's TCP: a packet tap shows it the host's outgoing data
//! and incoming ACKs, and spoofed duplicate ACKs go to the local TCP through a raw socket, so a small
//! flow whose tail was lost fast-retransmits instead of waiting for its 200 ms minimum RTO.
//! See docs/tracks.md, section "On real hosts".

pub mod addr6;
pub mod agent;
pub mod bpf_build;
pub mod bpf_tap;
pub mod cli;
pub mod config;
pub mod inject;
pub mod nfq_tap;
pub mod nfqueue;
pub mod peer_input;
pub mod rules;
pub mod tap;
pub mod wire;

pub use agent::Agent;
pub use config::AgentConfig;
