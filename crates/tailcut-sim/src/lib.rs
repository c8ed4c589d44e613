//! tailcut simulator
pub mod workload;
