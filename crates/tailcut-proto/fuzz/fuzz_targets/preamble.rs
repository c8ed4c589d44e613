//! The runtime's preamble parsers on arbitrary bytes: they never panic, an engine datagram's
//! preamble and a control datagram are never both read from the same bytes, and whatever parses
//! writes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::wire::preamble::Preamble;

fuzz_target!(|data: &[u8]| {
    let engine = Preamble::parse(data);
    let control = Preamble::parse_control(data);
    assert!(engine.is_none() || control.is_none());
    if let Some((p, rest)) = engine {
        let mut out = Vec::new();
        p.write(&mut out);
        out.extend_from_slice(rest);
        assert_eq!(&out[..], data);
    }
    if let Some((p, c)) = control {
        let mut out = Vec::new();
        p.write_control(c, &mut out);
        assert_eq!(&out[..], data);
    }
});
