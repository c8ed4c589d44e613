//! The T-RACKs agent's packet path on whatever reaches it: `tailcut_tracksd::peer_input::exercise`
//! (its documentation says what is sent and checked), with the live heap bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};
use tailcut_tracksd::peer_input;

#[global_allocator]
static ALLOC: Counting = Counting;

/// An input of at most libFuzzer's 4096 bytes creates at most one flow per 3-byte record; the
/// shim's entries are a few hundred bytes, so this is far above what it may hold and far below
/// what a leak per packet would reach.
const LIMIT: usize = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let base = reset_peak();
    peer_input::exercise(data);
    check_peak(base, LIMIT, "tracks agent packet path");
});
