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
//!
//! Messages of more than one block (our extension, `multi_block`, see `docs/cloudburst.md`,
//! "Messages of any size"): every packet carries a fourth word after either layout, and the first
//! word then describes the packet's block, not the whole message:
//!
//! ```text
//! +-------------------------------+-------------------------------+
//! |         block index           |       last block index        |
//! +-------------------------------+-------------------------------+
//! ```
//! Every block but the last is full ([`Header::check_size`]), so the receiver learns the message's
//! length from its last block. Fig. 4 has no room for this word, so the layout is a function of the
//! configuration ([`Layout`]), as the codec already is.

use super::Codec;

/// Header bytes on the wire (Fig. 4).
pub const HEADER_BYTES: usize = 12;
/// Header bytes on the wire with the block word.
pub const BLOCK_HEADER_BYTES: usize = 16;
/// Largest RaptorQ encoding symbol id (24 bits, RFC 6330 Sec. 3.2).
pub const MAX_ESI: u32 = (1 << 24) - 1;
/// Largest message size the 18-bit field holds.
pub const MAX_MESSAGE_BYTES: u32 = (1 << 18) - 1;

/// The wire layout both ends agree on through their configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub codec: Codec,
    /// The block word follows the 12 bytes of Fig. 4.
    pub blocks: bool,
}

impl Layout {
    pub fn header_bytes(self) -> usize {
        if self.blocks {
            BLOCK_HEADER_BYTES
        } else {
            HEADER_BYTES
        }
    }
}

/// Fig. 4 without the block word.
impl From<Codec> for Layout {
    fn from(codec: Codec) -> Layout {
        Layout { codec, blocks: false }
    }
}

/// Which block of its message a packet belongs to; both zero for a single-block message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Block {
    pub index: u16,
    pub last: u16,
}

impl Block {
    /// The only block of a message (what Fig. 4 describes).
    pub const ONLY: Block = Block { index: 0, last: 0 };
}

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
    /// Source packets in the message (or in this block of it), 1..=64.
    pub packets: u8,
    /// Message (or block) size in bytes, < 2^18.
    pub message_bytes: u32,
    pub msg_id: u8,
    pub kind: Kind,
    /// [`Block::ONLY`] in Fig. 4's layout.
    pub block: Block,
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
    /// The block word names a block after the last one.
    BlockBeyondLast { index: u16, last: u16 },
    /// A block before the last is not full (checked by [`Header::check_size`]).
    ShortBlock,
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
            HeaderError::BlockBeyondLast { index, last } => {
                write!(f, "block {index} after the last block {last}")
            }
            HeaderError::ShortBlock => write!(f, "a block before the last is not full"),
        }
    }
}

impl std::error::Error for HeaderError {}

impl Header {
    /// Parses the header at the start of `buf` (trailing bytes are the symbol) in `layout` (a
    /// [`Codec`] alone means Fig. 4). Never panics.
    pub fn parse(layout: impl Into<Layout>, buf: &[u8]) -> Result<Header, HeaderError> {
        let layout = layout.into();
        let codec = layout.codec;
        let Some(b) = buf.get(..layout.header_bytes()) else {
            return Err(HeaderError::Truncated { len: buf.len() });
        };
        let block = if layout.blocks {
            let index = u16::from_be_bytes([b[12], b[13]]);
            let last = u16::from_be_bytes([b[14], b[15]]);
            if index > last {
                return Err(HeaderError::BlockBeyondLast { index, last });
            }
            Block { index, last }
        } else {
            Block::ONLY
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
            block,
        })
    }

    /// Writes the header in `layout` at the start of `buf`; returns the bytes written, or None if
    /// `buf` is too short or the header has no place in that layout (a set under RaptorQ, an ESI
    /// under LT, a block other than the only one without the block word). Fields out of range are
    /// masked to their width (callers validate).
    pub fn emit(&self, layout: impl Into<Layout>, buf: &mut [u8]) -> Option<usize> {
        let layout = layout.into();
        let codec = layout.codec;
        let len = layout.header_bytes();
        let b = buf.get_mut(..len)?;
        if layout.blocks {
            b[12..14].copy_from_slice(&self.block.index.to_be_bytes());
            b[14..16].copy_from_slice(&self.block.last.to_be_bytes());
        } else if self.block != Block::ONLY {
            return None;
        }
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
        b[4..12].copy_from_slice(&tail);
        Some(len)
    }

    /// Appends the header to `out`; panics if the header has no place in `layout`.
    pub fn emit_to_vec(&self, layout: impl Into<Layout>, out: &mut Vec<u8>) {
        let layout = layout.into();
        let at = out.len();
        out.resize(at + layout.header_bytes(), 0);
        self.emit(layout, &mut out[at..])
            .expect("header matches the layout");
    }

    /// Checks that `message_bytes` needs exactly `packets` symbols of `symbol_bytes`, and that a
    /// block before the last is full ([`full_block_packets`] symbols).
    pub fn check_size(&self, symbol_bytes: u32) -> Result<(), HeaderError> {
        let need = (self.message_bytes as u64)
            .div_ceil(symbol_bytes.max(1) as u64)
            .max(1);
        if need != self.packets as u64 {
            return Err(HeaderError::SizeMismatch);
        }
        let full = full_block_packets(symbol_bytes);
        if self.block.index < self.block.last
            && (self.packets as u32 != full || self.message_bytes != full * symbol_bytes)
        {
            return Err(HeaderError::ShortBlock);
        }
        Ok(())
    }
}

/// Source packets in a full block: 64, fewer when 64 symbols would not fit the 18-bit size field.
pub fn full_block_packets(symbol_bytes: u32) -> u32 {
    (MAX_MESSAGE_BYTES / symbol_bytes.max(1)).clamp(1, 64)
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
                block: Block::ONLY,
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
            kind: Kind::Stop,
            block: Block::ONLY,
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
            block: Block::ONLY,
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
            block: Block::ONLY,
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

    #[test]
    fn the_block_word_follows_fig_4_and_is_checked() {
        let layout = Layout {
            codec: Codec::Lt,
            blocks: true,
        };
        let full = full_block_packets(1456);
        let h = Header {
            packets: full as u8,
            message_bytes: full * 1456,
            msg_id: 3,
            kind: Kind::Coded { set: 1 },
            block: Block { index: 2, last: 5 },
        };
        let mut b = [0u8; BLOCK_HEADER_BYTES];
        assert_eq!(h.emit(layout, &mut b), Some(BLOCK_HEADER_BYTES));
        assert_eq!(&b[12..], &[0, 2, 0, 5]);
        assert_eq!(Header::parse(layout, &b), Ok(h));
        assert_eq!(h.check_size(1456), Ok(()));
        // Only the last block may be short.
        let short = Header {
            packets: 2,
            message_bytes: 2000,
            ..h
        };
        assert_eq!(short.check_size(1456), Err(HeaderError::ShortBlock));
        let last = Header {
            block: Block { index: 5, last: 5 },
            ..short
        };
        assert_eq!(last.check_size(1456), Ok(()));
        b[13] = 6;
        assert_eq!(
            Header::parse(layout, &b),
            Err(HeaderError::BlockBeyondLast { index: 6, last: 5 })
        );
        assert_eq!(
            Header::parse(layout, &b[..HEADER_BYTES]),
            Err(HeaderError::Truncated { len: HEADER_BYTES })
        );
        // Fig. 4 has no place for a block other than the only one.
        assert_eq!(h.emit(Codec::Lt, &mut [0u8; HEADER_BYTES]), None);
        assert_eq!(full_block_packets(1460), 64);
        assert_eq!(full_block_packets(8960), 29); // 29 x 8960 < 2^18 <= 30 x 8960
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
            index: u16,
            last: u16,
        ) {
            let kind = match kind {
                Kind::Coded { set } if packets < 64 => {
                    let set = set & ((1u64 << packets) - 1);
                    if set == 0 { Kind::Stop } else { Kind::Coded { set } }
                }
                k => k,
            };
            let h = Header { packets, message_bytes: size, msg_id: id, kind, block: Block::ONLY };
            let mut b = vec![0u8; HEADER_BYTES + 3];
            prop_assert_eq!(h.emit(codec, &mut b), Some(HEADER_BYTES));
            prop_assert_eq!(Header::parse(codec, &b), Ok(h));
            let block = Block { index: index.min(last), last };
            let h = Header { block, ..h };
            let layout = Layout { codec, blocks: true };
            let mut b = vec![0u8; BLOCK_HEADER_BYTES + 3];
            prop_assert_eq!(h.emit(layout, &mut b), Some(BLOCK_HEADER_BYTES));
            prop_assert_eq!(Header::parse(layout, &b), Ok(h));
            // The first 12 bytes are Fig. 4's, whatever the block.
            let mut fig4 = [0u8; HEADER_BYTES];
            Header { block: Block::ONLY, ..h }.emit(codec, &mut fig4).unwrap();
            prop_assert_eq!(&b[..HEADER_BYTES], &fig4[..]);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            for codec in [Codec::Lt, Codec::Raptorq] {
                for blocks in [false, true] {
                    let layout = Layout { codec, blocks };
                    if let Ok(h) = Header::parse(layout, &bytes) {
                        // Whatever parses re-emits to the same bytes.
                        let n = layout.header_bytes();
                        let mut b = [0u8; BLOCK_HEADER_BYTES];
                        prop_assert_eq!(h.emit(layout, &mut b), Some(n));
                        prop_assert_eq!(&b[..n], &bytes[..n]);
                        prop_assert!(h.block.index <= h.block.last);
                        let _ = h.check_size(1460);
                    }
                }
            }
        }

        /// Random bytes rarely look like a RaptorQ header; these are near misses of valid ones.
        #[test]
        fn mutated_raptorq_headers_never_panic(esi in 0..=MAX_ESI, at in 0usize..HEADER_BYTES, v: u8) {
            let mut b = [0u8; HEADER_BYTES];
            Header { packets: 64, message_bytes: 93_440, msg_id: 1, kind: Kind::Symbol { esi }, block: Block::ONLY }
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
