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

/// Header bytes on the wire.
pub const HEADER_BYTES: usize = 12;
/// Largest message size the 18-bit field holds.
pub const MAX_MESSAGE_BYTES: u32 = (1 << 18) - 1;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A coded packet; the set is its coefficient vector (non-empty, within `packets`).
    Coded { set: u64 },
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
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::Truncated { len } => write!(f, "truncated header: {len} bytes"),
            HeaderError::SetBeyondCount { packets, set } => {
                write!(f, "set {set:#x} names packets beyond the count {packets}")
            }
            HeaderError::SizeMismatch => write!(f, "message size does not match the packet count"),
        }
    }
}

impl std::error::Error for HeaderError {}

impl Header {
    /// Parses the first [`HEADER_BYTES`] bytes of `buf` (trailing bytes are the symbol). Never panics.
    pub fn parse(buf: &[u8]) -> Result<Header, HeaderError> {
        let Some(b) = buf.get(..HEADER_BYTES) else {
            return Err(HeaderError::Truncated { len: buf.len() });
        };
        let w = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let set = u64::from_be_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
        let packets = ((w >> 26) as u8) + 1;
        let message_bytes = (w >> 8) & MAX_MESSAGE_BYTES;
        let msg_id = w as u8;
        if packets < 64 && set >> packets != 0 {
            return Err(HeaderError::SetBeyondCount { packets, set });
        }
        let kind = if set == 0 { Kind::Stop } else { Kind::Coded { set } };
        Ok(Header {
            packets,
            message_bytes,
            msg_id,
            kind,
        })
    }

    /// Writes the header into the first [`HEADER_BYTES`] bytes of `buf`; returns the bytes written, or
    /// None if `buf` is too short. Fields out of range are masked to their width (callers validate).
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let b = buf.get_mut(..HEADER_BYTES)?;
        let count = (self.packets.clamp(1, 64) - 1) as u32;
        let w = (count << 26) | ((self.message_bytes & MAX_MESSAGE_BYTES) << 8) | self.msg_id as u32;
        let set = match self.kind {
            Kind::Coded { set } => set,
            Kind::Stop => 0,
        };
        b[..4].copy_from_slice(&w.to_be_bytes());
        b[4..].copy_from_slice(&set.to_be_bytes());
        Some(HEADER_BYTES)
    }

    /// Appends the header to `out`.
    pub fn emit_to_vec(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + HEADER_BYTES, 0);
        self.emit(&mut out[at..]).expect("sized");
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
        for kind in [Kind::Stop, Kind::Coded { set: 0b1011 }] {
            let h = Header {
                packets: 4,
                message_bytes: 5000,
                msg_id: 7,
                kind,
            };
            let mut b = [0u8; HEADER_BYTES];
            assert_eq!(h.emit(&mut b), Some(HEADER_BYTES));
            assert_eq!(Header::parse(&b), Ok(h));
            assert_eq!(h.check_size(1460), Ok(()));
        }
        assert_eq!(Header::parse(&[0; 11]), Err(HeaderError::Truncated { len: 11 }));
        assert!(Header {
            packets: 1,
            message_bytes: 0,
            msg_id: 0,
            kind: Kind::Stop
        }
        .emit(&mut [0u8; 5])
        .is_none());
    }

    proptest! {
        #[test]
        fn parse_emit_round_trip(packets in 1u8..=64, size in 0u32..=MAX_MESSAGE_BYTES, id: u8, set: u64) {
            let set = if packets == 64 { set } else { set & ((1u64 << packets) - 1) };
            let kind = if set == 0 { Kind::Stop } else { Kind::Coded { set } };
            let h = Header { packets, message_bytes: size, msg_id: id, kind };
            let mut b = vec![0u8; HEADER_BYTES + 3];
            h.emit(&mut b).unwrap();
            prop_assert_eq!(Header::parse(&b), Ok(h));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(h) = Header::parse(&bytes) {
                // Whatever parses re-emits to the same 12 bytes.
                let mut b = [0u8; HEADER_BYTES];
                h.emit(&mut b).unwrap();
                prop_assert_eq!(&b[..], &bytes[..HEADER_BYTES]);
                let _ = h.check_size(1460);
            }
        }
    }
}
