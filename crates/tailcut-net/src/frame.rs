//! The runtime's 12-byte preamble in front of every engine datagram (the format lives with the other
//! wire formats in `tailcut_proto::wire::preamble`, where a trimming element can read it too).

pub use tailcut_proto::wire::preamble::*;
