//! The simulator's end-to-end tests, one module per subject, in one test binary: each integration
//! test file would otherwise be its own binary, linked (with the release profile's LTO) on its own,
//! which cost CI most of its build time. `tests/alloc.rs` stays apart: it installs a counting global
//! allocator.

mod common;

mod bad_inputs;
mod baselines;
mod bytes;
mod cloudburst;
mod cp;
mod dcquic;
mod e2e;
mod fuso;
mod host_delay;
mod host_queue;
mod network;
mod schema_fuzz;
mod stall;
mod trace;
mod tracks;
