//! Two-endpoint tests on virtual time: a scripted wire (`harness.rs`), exact scenario tests by
//! concern (`loss.rs`, `ecn.rs`, `connection.rs`, `cp.rs`) and property tests (`props.rs`).

mod bytes;
mod connection;
mod cp;
mod cubic;
mod cwnd_limited;
mod delack;
mod dsack;
mod ecn;
mod harness;
mod loss;
mod props;
mod prr;
mod rack;
mod reneging;
mod schemes;
mod timers;
mod tracks;
mod undo;
