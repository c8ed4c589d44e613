//! The CloudBurst header parser on arbitrary bytes, in both layouts: it never panics, and whatever
//! parses emits back to the same 12 bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::cloudburst::{CbHeader, Codec, HEADER_BYTES};

fuzz_target!(|data: &[u8]| {
    for codec in [Codec::Lt, Codec::Raptorq] {
        if let Ok(h) = CbHeader::parse(codec, data) {
            let mut b = [0u8; HEADER_BYTES];
            assert_eq!(h.emit(codec, &mut b), Some(HEADER_BYTES));
            assert_eq!(&b[..], &data[..HEADER_BYTES]);
            let _ = h.check_size(1460);
        }
    }
});
