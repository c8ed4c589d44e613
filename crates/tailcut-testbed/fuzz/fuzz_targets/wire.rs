//! The testbed's packet path on what a real stack (or anything writing to a TUN) may hand it: IPv4
//! parsing (`wire::parse`) and the one rewrite the fabric makes (`wire::set_ce`). Each input is tried
//! as it is and with its header checksum made valid, so the rewrite's checksum property is reached;
//! `wire::check_packet` asserts the properties (never a panic; a rewrite keeps a valid checksum valid
//! and changes nothing but the ECN bits and the checksum). The stable proptest in `src/wire/tests.rs`
//! checks the same function on arbitrary bytes in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_testbed::wire;

fuzz_target!(|data: &[u8]| {
    wire::check_packet(data);
    let mut fixed = data.to_vec();
    if wire::fix_header_checksum(&mut fixed) {
        wire::check_packet(&fixed);
    }
});
