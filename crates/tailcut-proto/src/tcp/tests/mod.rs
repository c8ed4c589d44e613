//! Two-endpoint tests on virtual time: a scripted wire (`harness.rs`), exact scenario tests
//! (`scripted.rs`) and property tests (`props.rs`).

mod harness;
mod props;
mod scripted;
