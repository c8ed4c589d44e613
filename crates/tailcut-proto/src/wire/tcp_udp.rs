//! TCP-in-UDP: a versioned encapsulation of [`TcpHeader`] (plus CP's trimmed bit) as the payload of a
//! UDP datagram, followed by the segment's payload bytes. Big endian; the layout is in `docs/net.md`.
//!
//! ```text
//!  0       1       2       3
//! +-------+-------+-------+-------+
//! |version|hdr_len| flags | bits  |   bits: 0 trimmed, 1-2 ext kind, 3-5 SACK block count, 6-7 zero
//! +-------+-------+-------+-------+
//! |              seq              |
//! |              ack              |
//! |     window (bytes, unscaled)  |
//! |          payload_len          |   the segment's length, kept when a switch cuts the payload
//! |            ts_val             |
//! |            ts_ecr             |
//! +-------------------------------+
//! | SACK blocks: count x (left u32, right u32)
//! | extension: DSS (dsn u64, data_ack u64) | XorCoded (start, len_bytes, seg_bytes: u32)
//! |            | CodedAck (end u32) | none
//! +-------------------------------+
//! | payload: payload_len bytes, or none when trimmed
//! ```
//! `hdr_len` counts 4-byte words, so a trimming element (CP) can cut the payload with
//! [`trim`] without knowing the extensions. Parsing is strict, so every datagram that parses is
//! exactly what [`build`] makes of its result: unknown versions, non-zero reserved bits, a `hdr_len`
//! that disagrees with the fields, and payloads whose length disagrees with `payload_len` are errors.
//! Nothing here panics on arbitrary bytes; every length is checked before a field is read.

use crate::packet::{SackBlocks, TcpExt, TcpFlags, TcpHeader};
use crate::seq::Seq;

/// The only version this code speaks. A receiver rejects others rather than guessing.
pub const VERSION: u8 = 1;
/// Bytes before the SACK blocks.
pub const FIXED_BYTES: usize = 28;
/// Longest header: 4 SACK blocks and a DSS.
pub const MAX_HEADER_BYTES: usize = FIXED_BYTES + SackBlocks::MAX * 8 + 16;

const TRIMMED: u8 = 0x01;
const EXT_SHIFT: u8 = 1;
const EXT_MASK: u8 = 0x03;
const SACK_SHIFT: u8 = 3;
const SACK_MASK: u8 = 0x07;
const RESERVED: u8 = 0xc0;

const EXT_NONE: u8 = 0;
const EXT_DSS: u8 = 1;
const EXT_XOR_CODED: u8 = 2;
const EXT_CODED_ACK: u8 = 3;

/// Why bytes are not an encapsulated segment, or a segment cannot be encapsulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the header needs.
    Truncated { len: usize, need: usize },
    /// A version this code does not speak.
    UnknownVersion { version: u8 },
    /// Reserved bits set, or more than four SACK blocks.
    BadBits { bits: u8 },
    /// `hdr_len` disagrees with the length the fields imply.
    HeaderLength { words: u8, expected_bytes: usize },
    /// The payload carried disagrees with `payload_len` (or a trimmed segment still carries bytes).
    PayloadLength {
        carried: usize,
        payload_len: u32,
        trimmed: bool,
    },
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Truncated { len, need } => {
                write!(f, "TCP-in-UDP: {len} bytes, the header needs {need}")
            }
            WireError::UnknownVersion { version } => {
                write!(f, "TCP-in-UDP: unknown version {version} (this build speaks {VERSION})")
            }
            WireError::BadBits { bits } => {
                write!(f, "TCP-in-UDP: reserved bits or SACK count invalid in {bits:#04x}")
            }
            WireError::HeaderLength {
                words,
                expected_bytes,
            } => write!(
                f,
                "TCP-in-UDP: hdr_len {words} words, the fields take {expected_bytes} bytes"
            ),
            WireError::PayloadLength {
                carried,
                payload_len,
                trimmed,
            } => write!(
                f,
                "TCP-in-UDP: {carried} payload bytes carried for payload_len {payload_len} (trimmed: {trimmed})"
            ),
        }
    }
}

impl std::error::Error for WireError {}

/// A parsed datagram: the header, CP's trimmed bit and the payload bytes (empty when trimmed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    pub header: TcpHeader,
    pub trimmed: bool,
    pub payload: &'a [u8],
}

fn ext_bytes(kind: u8) -> usize {
    match kind {
        EXT_DSS => 16,
        EXT_XOR_CODED => 12,
        EXT_CODED_ACK => 4,
        _ => 0,
    }
}

/// Header bytes [`build`] writes for `header`.
pub fn header_len(header: &TcpHeader) -> usize {
    FIXED_BYTES + header.sack.len() * 8 + ext_bytes(ext_kind(&header.ext))
}

fn ext_kind(ext: &TcpExt) -> u8 {
    match ext {
        TcpExt::None => EXT_NONE,
        TcpExt::Dss { .. } => EXT_DSS,
        TcpExt::XorCoded { .. } => EXT_XOR_CODED,
        TcpExt::CodedAck { .. } => EXT_CODED_ACK,
    }
}

/// Appends the datagram for a segment to `buf` (reusing its capacity). `payload` must be the segment's
/// `payload_len` bytes, or empty when `trimmed`.
pub fn build(header: &TcpHeader, trimmed: bool, payload: &[u8], buf: &mut Vec<u8>) -> Result<(), WireError> {
    build_header(header, trimmed, payload.len(), buf)?;
    buf.extend_from_slice(payload);
    Ok(())
}

/// [`build`] without the payload: appends the bytes that go before a payload of `carried` bytes,
/// which the caller places right after them (a sender that writes the payload in place, then the
/// header in front of it, copies the payload once). Fails as [`build`] does when `carried` disagrees
/// with the header.
pub fn build_header(
    header: &TcpHeader,
    trimmed: bool,
    carried: usize,
    buf: &mut Vec<u8>,
) -> Result<(), WireError> {
    let want = if trimmed { 0 } else { header.payload_len as usize };
    if carried != want {
        return Err(WireError::PayloadLength {
            carried,
            payload_len: header.payload_len,
            trimmed,
        });
    }
    let kind = ext_kind(&header.ext);
    let len = header_len(header);
    let bits = u8::from(trimmed) | (kind << EXT_SHIFT) | ((header.sack.len() as u8) << SACK_SHIFT);
    buf.reserve(len + carried);
    buf.extend_from_slice(&[VERSION, (len / 4) as u8, header.flags.0, bits]);
    for v in [
        header.seq.0,
        header.ack.0,
        header.window,
        header.payload_len,
        header.ts_val,
        header.ts_ecr,
    ] {
        buf.extend_from_slice(&v.to_be_bytes());
    }
    for (l, r) in header.sack.iter() {
        buf.extend_from_slice(&l.0.to_be_bytes());
        buf.extend_from_slice(&r.0.to_be_bytes());
    }
    match header.ext {
        TcpExt::None => {}
        TcpExt::Dss { dsn, data_ack } => {
            buf.extend_from_slice(&dsn.to_be_bytes());
            buf.extend_from_slice(&data_ack.to_be_bytes());
        }
        TcpExt::XorCoded {
            start,
            len_bytes,
            seg_bytes,
        } => {
            for v in [start.0, len_bytes, seg_bytes] {
                buf.extend_from_slice(&v.to_be_bytes());
            }
        }
        TcpExt::CodedAck { end } => buf.extend_from_slice(&end.0.to_be_bytes()),
    }
    Ok(())
}

/// Reads a big-endian u32 at `at`; callers check the length first.
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    (u64::from(u32_at(b, at)) << 32) | u64::from(u32_at(b, at + 4))
}

/// Parses one datagram. Never panics: every read is behind a length check.
pub fn parse(bytes: &[u8]) -> Result<Segment<'_>, WireError> {
    if bytes.len() < FIXED_BYTES {
        return Err(WireError::Truncated {
            len: bytes.len(),
            need: FIXED_BYTES,
        });
    }
    if bytes[0] != VERSION {
        return Err(WireError::UnknownVersion { version: bytes[0] });
    }
    let (words, flags, bits) = (bytes[1], bytes[2], bytes[3]);
    let sacks = ((bits >> SACK_SHIFT) & SACK_MASK) as usize;
    if bits & RESERVED != 0 || sacks > SackBlocks::MAX {
        return Err(WireError::BadBits { bits });
    }
    let kind = (bits >> EXT_SHIFT) & EXT_MASK;
    let len = FIXED_BYTES + sacks * 8 + ext_bytes(kind);
    if usize::from(words) * 4 != len {
        return Err(WireError::HeaderLength {
            words,
            expected_bytes: len,
        });
    }
    if bytes.len() < len {
        return Err(WireError::Truncated {
            len: bytes.len(),
            need: len,
        });
    }
    let trimmed = bits & TRIMMED != 0;
    let mut header = TcpHeader {
        seq: Seq(u32_at(bytes, 4)),
        ack: Seq(u32_at(bytes, 8)),
        flags: TcpFlags(flags),
        window: u32_at(bytes, 12),
        payload_len: u32_at(bytes, 16),
        sack: SackBlocks::default(),
        ts_val: u32_at(bytes, 20),
        ts_ecr: u32_at(bytes, 24),
        ext: TcpExt::None,
    };
    let mut at = FIXED_BYTES;
    for _ in 0..sacks {
        header
            .sack
            .push(Seq(u32_at(bytes, at)), Seq(u32_at(bytes, at + 4)));
        at += 8;
    }
    header.ext = match kind {
        EXT_DSS => TcpExt::Dss {
            dsn: u64_at(bytes, at),
            data_ack: u64_at(bytes, at + 8),
        },
        EXT_XOR_CODED => TcpExt::XorCoded {
            start: Seq(u32_at(bytes, at)),
            len_bytes: u32_at(bytes, at + 4),
            seg_bytes: u32_at(bytes, at + 8),
        },
        EXT_CODED_ACK => TcpExt::CodedAck {
            end: Seq(u32_at(bytes, at)),
        },
        _ => TcpExt::None,
    };
    let payload = &bytes[len..];
    let want = if trimmed { 0 } else { header.payload_len as usize };
    if payload.len() != want {
        return Err(WireError::PayloadLength {
            carried: payload.len(),
            payload_len: header.payload_len,
            trimmed,
        });
    }
    Ok(Segment {
        header,
        trimmed,
        payload,
    })
}

/// What a trimming switch (CP) does to a datagram: cut the payload, keep the header, set the trimmed
/// bit. Returns false (and leaves `datagram` alone) when it is not a valid segment.
pub fn trim(datagram: &mut Vec<u8>) -> bool {
    trim_from(datagram, 0)
}

/// [`trim`] for a segment that starts at `start` of `buf` (after the headers in front of it); false
/// (and `buf` left alone) when there is no valid segment there.
pub fn trim_from(buf: &mut Vec<u8>, start: usize) -> bool {
    let Some(Ok(seg)) = buf.get(start..).map(parse) else {
        return false;
    };
    let keep = header_len(&seg.header);
    buf.truncate(start + keep);
    buf[start + 3] |= TRIMMED;
    true
}

#[cfg(test)]
mod tests;
