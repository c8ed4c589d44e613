//! The CloudBurst header (Fig. 4): 12 bytes, big endian.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-----------+-----------------------------------+---------------+
//! | count - 1 |        message size (bytes)       |    msg id     |
//! +-----------+-----------------------------------+---------------+
//! |            set of included packets (bits 63..32)              |
//! |            set of included packets (bits 31..0)               |
//! +---------------------------------------------------------------+
//! ```
//! The 6-bit field stores the packet count minus one (1..=64 packets). Bit i of the set is source
//! packet i. An empty set marks a STOP (receiver to sender, Sec. III-B), which the paper leaves
//! unspecified; a STOP echoes the message's count, size and id.
//!
//! With `codec = "raptorq"` (our extension) a packet is named by its RFC 6330 encoding symbol id, not
//! by a set, so the last 8 bytes change; the first word and the total size stay those of Fig. 4:
//!
//! ```text
//! +-----------+-----------------------------------+---------------+
//! | count - 1 |        message size (bytes)       |    msg id     |
//! +-----------+-----------------------------------+---------------+
//! |     type      |              reserved (zero)                  |
//! +---------------+-----------------------------------------------+
//! |  SBN (zero)   |          encoding symbol id (ESI)             |
//! +---------------+-----------------------------------------------+
//! ```
//! type 0 is a coded symbol, type 1 a STOP (its ESI is zero); the last word is RFC 6330's FEC Payload
//! ID (Sec. 3.2) with one source block per message. Both ends must use the same codec, as they must
//! agree on the symbol size: the layout is a function of the configured [`Codec`].

use super::Codec;

/// Header bytes on the wire.
pub const HEADER_BYTES: usize = 12;
/// Largest RaptorQ encoding symbol id (24 bits, RFC 6330 Sec. 3.2).
pub const MAX_ESI: u32 = (1 << 24) - 1;
/// Largest message size the 18-bit field holds.
pub const MAX_MESSAGE_BYTES: u32 = (1 << 18) - 1;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A coded packet; the set is its coefficient vector (non-empty, within `packets`).
    Coded { set: u64 },
    /// A RaptorQ symbol; `esi` < 2^24 (RFC 6330's 24-bit ESI).
    Symbol { esi: u32 },
    /// The receiver decoded the message.
    Stop,
}

/// The parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Source packets in the message, 1..=64.
    pub packets: u8,
    /// Message size in bytes, < 2^18.
    pub message_bytes: u32,
    pub msg_id: u8,
    pub kind: Kind,
}

/// Why bytes are not a CloudBurst header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer than [`HEADER_BYTES`] bytes.
    Truncated { len: usize },
    /// The set names packets at or beyond the count.
    SetBeyondCount { packets: u8, set: u64 },
    /// The message size does not fit in the packet count at the given symbol size (checked by
    /// [`Header::check_size`], not by parse).
    SizeMismatch,
    /// RaptorQ header: a type other than 0 (symbol) or 1 (STOP).
    UnknownType { ty: u8 },
    /// RaptorQ header: reserved bits, the source block number or a STOP's ESI are not zero.
    NonZeroReserved,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::Truncated { len } => write!(f, "truncated header: {len} bytes"),
            HeaderError::SetBeyondCount { packets, set } => {
                write!(f, "set {set:#x} names packets beyond the count {packets}")
            }
            HeaderError::SizeMismatch => write!(f, "message size does not match the packet count"),
            HeaderError::UnknownType { ty } => write!(f, "unknown RaptorQ header type {ty}"),
            HeaderError::NonZeroReserved => {
                write!(f, "reserved field, source block number or STOP ESI not zero")
            }
        }
    }
}

impl std::error::Error for HeaderError {}

impl Header {
    /// Parses the first [`HEADER_BYTES`] bytes of `buf` (trailing bytes are the symbol) in the layout
    /// of `codec`. Never panics.
    pub fn parse(codec: Codec, buf: &[u8]) -> Result<Header, HeaderError> {
        let Some(b) = buf.get(..HEADER_BYTES) else {
            return Err(HeaderError::Truncated { len: buf.len() });
        };
        let w = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let packets = ((w >> 26) as u8) + 1;
        let message_bytes = (w >> 8) & MAX_MESSAGE_BYTES;
        let msg_id = w as u8;
        let kind = match codec {
            Codec::Lt => {
                let set = u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
                if packets < 64 && set >> packets != 0 {
                    return Err(HeaderError::SetBeyondCount { packets, set });
                }
                if set == 0 {
                    Kind::Stop
                } else {
                    Kind::Coded { set }
                }
            }
            Codec::Raptorq => {
                let ty = b[4];
                let reserved = u32::from_be_bytes([0, b[5], b[6], b[7]]);
                let payload_id = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
                // payload_id's top byte is the source block number: one block per message.
                if reserved != 0 || payload_id > MAX_ESI {
                    return Err(HeaderError::NonZeroReserved);
                }
                match ty {
                    0 => Kind::Symbol { esi: payload_id },
                    1 if payload_id == 0 => Kind::Stop,
                    1 => return Err(HeaderError::NonZeroReserved),
                    ty => return Err(HeaderError::UnknownType { ty }),
                }
            }
        };
        Ok(Header {
            packets,
            message_bytes,
            msg_id,
            kind,
        })
    }

    /// Writes the header in the layout of `codec` into the first [`HEADER_BYTES`] bytes of `buf`;
    /// returns the bytes written, or None if `buf` is too short or the kind has no place in that
    /// layout (a set under RaptorQ, an ESI under LT). Fields out of range are masked to their width
    /// (callers validate).
    pub fn emit(&self, codec: Codec, buf: &mut [u8]) -> Option<usize> {
        let b = buf.get_mut(..HEADER_BYTES)?;
        let count = (self.packets.clamp(1, 64) - 1) as u32;
        let w = (count << 26) | ((self.message_bytes & MAX_MESSAGE_BYTES) << 8) | self.msg_id as u32;
        let tail: [u8; 8] = match (codec, self.kind) {
            (Codec::Lt, Kind::Coded { set }) => set.to_be_bytes(),
            (Codec::Lt, Kind::Stop) => [0; 8],
            (Codec::Raptorq, Kind::Symbol { esi }) => ((esi & MAX_ESI) as u64).to_be_bytes(),
            (Codec::Raptorq, Kind::Stop) => (1u64 << 56).to_be_bytes(),
            (Codec::Lt, Kind::Symbol { .. }) | (Codec::Raptorq, Kind::Coded { .. }) => return None,
        };
        b[..4].copy_from_slice(&w.to_be_bytes());
        b[4..].copy_from_slice(&tail);
        Some(HEADER_BYTES)
    }

    /// Appends the header to `out`; panics if the kind has no place in `codec`'s layout.
    pub fn emit_to_vec(&self, codec: Codec, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + HEADER_BYTES, 0);
        self.emit(codec, &mut out[at..])
            .expect("header kind matches the codec");
    }

    /// Checks that `message_bytes` needs exactly `packets` symbols of `symbol_bytes`.
    pub fn check_size(&self, symbol_bytes: u32) -> Result<(), HeaderError> {
        let need = (self.message_bytes as u64)
            .div_ceil(symbol_bytes.max(1) as u64)
            .max(1);
        if need == self.packets as u64 {
            Ok(())
        } else {
            Err(HeaderError::SizeMismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stop_and_coded_round_trip() {
        for (codec, kind) in [
            (Codec::Lt, Kind::Stop),
            (Codec::Lt, Kind::Coded { set: 0b1011 }),
            (Codec::Raptorq, Kind::Stop),
            (Codec::Raptorq, Kind::Symbol { esi: 0 }),
            (Codec::Raptorq, Kind::Symbol { esi: MAX_ESI }),
        ] {
            let h = Header {
                packets: 4,
                message_bytes: 5000,
                msg_id: 7,
                kind,
            };
            let mut b = [0u8; HEADER_BYTES];
            assert_eq!(h.emit(codec, &mut b), Some(HEADER_BYTES));
            assert_eq!(Header::parse(codec, &b), Ok(h));
            assert_eq!(h.check_size(1460), Ok(()));
        }
        for codec in [Codec::Lt, Codec::Raptorq] {
            assert_eq!(
                Header::parse(codec, &[0; 11]),
                Err(HeaderError::Truncated { len: 11 })
            );
        }
        assert!(Header {
            packets: 1,
            message_bytes: 0,
            msg_id: 0,
            kind: Kind::Stop
        }
        .emit(Codec::Lt, &mut [0u8; 5])
        .is_none());
    }

    #[test]
    fn kinds_outside_their_codec_are_not_emitted() {
        let h = |kind| Header {
            packets: 2,
            message_bytes: 2000,
            msg_id: 1,
            kind,
        };
        let mut b = [0u8; HEADER_BYTES];
        assert_eq!(h(Kind::Symbol { esi: 3 }).emit(Codec::Lt, &mut b), None);
        assert_eq!(h(Kind::Coded { set: 1 }).emit(Codec::Raptorq, &mut b), None);
    }

    #[test]
    fn malformed_raptorq_headers_are_rejected() {
        let mut b = [0u8; HEADER_BYTES];
        Header {
            packets: 3,
            message_bytes: 3000,
            msg_id: 9,
            kind: Kind::Symbol { esi: 5 },
        }
        .emit(Codec::Raptorq, &mut b)
        .unwrap();
        let with = |i: usize, v: u8| {
            let mut c = b;
            c[i] = v;
            Header::parse(Codec::Raptorq, &c)
        };
        assert_eq!(with(4, 2), Err(HeaderError::UnknownType { ty: 2 }));
        assert_eq!(with(6, 1), Err(HeaderError::NonZeroReserved));
        assert_eq!(with(8, 1), Err(HeaderError::NonZeroReserved)); // source block 1
        assert_eq!(with(4, 1), Err(HeaderError::NonZeroReserved)); // STOP with ESI 5
    }

    fn kind_strategy() -> impl Strategy<Value = (Codec, Kind)> {
        prop_oneof![
            any::<u64>().prop_map(|set| (Codec::Lt, if set == 0 { Kind::Stop } else { Kind::Coded { set } })),
            (0..=MAX_ESI).prop_map(|esi| (Codec::Raptorq, Kind::Symbol { esi })),
            Just((Codec::Raptorq, Kind::Stop)),
        ]
    }

    proptest! {
        #[test]
        fn parse_emit_round_trip(
            packets in 1u8..=64,
            size in 0u32..=MAX_MESSAGE_BYTES,
            id: u8,
            (codec, kind) in kind_strategy(),
        ) {
            let kind = match kind {
                Kind::Coded { set } if packets < 64 => {
                    let set = set & ((1u64 << packets) - 1);
                    if set == 0 { Kind::Stop } else { Kind::Coded { set } }
                }
                k => k,
            };
            let h = Header { packets, message_bytes: size, msg_id: id, kind };
            let mut b = vec![0u8; HEADER_BYTES + 3];
            prop_assert_eq!(h.emit(codec, &mut b), Some(HEADER_BYTES));
            prop_assert_eq!(Header::parse(codec, &b), Ok(h));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            for codec in [Codec::Lt, Codec::Raptorq] {
                if let Ok(h) = Header::parse(codec, &bytes) {
                    // Whatever parses re-emits to the same 12 bytes.
                    let mut b = [0u8; HEADER_BYTES];
                    prop_assert_eq!(h.emit(codec, &mut b), Some(HEADER_BYTES));
                    prop_assert_eq!(&b[..], &bytes[..HEADER_BYTES]);
                    let _ = h.check_size(1460);
                }
            }
        }

        /// Random bytes rarely look like a RaptorQ header; these are near misses of valid ones.
        #[test]
        fn mutated_raptorq_headers_never_panic(esi in 0..=MAX_ESI, at in 0usize..HEADER_BYTES, v: u8) {
            let mut b = [0u8; HEADER_BYTES];
            Header { packets: 64, message_bytes: 93_440, msg_id: 1, kind: Kind::Symbol { esi } }
                .emit(Codec::Raptorq, &mut b)
                .unwrap();
            b[at] = v;
            if let Ok(h) = Header::parse(Codec::Raptorq, &b) {
                let mut c = [0u8; HEADER_BYTES];
                prop_assert_eq!(h.emit(Codec::Raptorq, &mut c), Some(HEADER_BYTES));
                prop_assert_eq!(c, b);
            }
        }
    }
}
