//! The TCP-in-UDP parser on arbitrary bytes: it never panics, whatever parses builds back to the same
//! bytes, and trimming a parsed datagram leaves a trimmed segment with the same header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::wire::tcp_udp::{build, parse, trim};

fuzz_target!(|data: &[u8]| {
    if let Ok(seg) = parse(data) {
        let mut out = Vec::new();
        build(&seg.header, seg.trimmed, seg.payload, &mut out).expect("a parsed segment builds");
        assert_eq!(&out[..], data);
        assert!(trim(&mut out));
        let cut = parse(&out).expect("a trimmed segment parses");
        assert_eq!(cut.header, seg.header);
        assert!(cut.trimmed && cut.payload.is_empty());
    }
});
