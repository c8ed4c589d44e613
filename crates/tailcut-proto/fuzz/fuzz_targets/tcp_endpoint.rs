//! A TCP endpoint's receive path on what a peer may send over the TCP-in-UDP encapsulation:
//! `tailcut_proto::tcp::peer_input::exercise` (its documentation says what is sent and checked),
//! with the live heap bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::tcp::peer_input;
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Far above what one connection's state needs for the input's 290 KB message (scoreboard,
/// out-of-order ranges, RACK and timer state are per segment at most) and far below a leak per
/// packet.
const LIMIT: usize = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let base = reset_peak();
    peer_input::exercise(data);
    check_peak(base, LIMIT, "tcp endpoint");
});
