//! The CloudBurst header parser on arbitrary bytes, in all four layouts (two codecs, with and
//! without the block word): it never panics, and whatever parses emits back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::cloudburst::{CbHeader, Codec, Layout, BLOCK_HEADER_BYTES};

fuzz_target!(|data: &[u8]| {
    for codec in [Codec::Lt, Codec::Raptorq] {
        for blocks in [false, true] {
            let layout = Layout { codec, blocks };
            if let Ok(h) = CbHeader::parse(layout, data) {
                let n = layout.header_bytes();
                let mut b = [0u8; BLOCK_HEADER_BYTES];
                assert_eq!(h.emit(layout, &mut b), Some(n));
                assert_eq!(&b[..n], &data[..n]);
                assert!(h.block.index <= h.block.last);
                let _ = h.check_size(1456);
            }
        }
    }
});
