//! An MPTCP (or FUSO) endpoint's receive path on what a peer may send over the TCP-in-UDP
//! encapsulation, on any sub-flow: `tailcut_proto::mptcp::peer_input::exercise` (its documentation
//! says what is sent and checked), with the live heap bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::mptcp::peer_input;
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Three sub-flows' state for the input's 290 KB message, the data level's reassembly (at most a
/// 1 MB window with bytes) and the message itself, with room; far below a leak per packet.
const LIMIT: usize = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let base = reset_peak();
    peer_input::exercise(data);
    check_peak(base, LIMIT, "mptcp endpoint");
});
