//! The engine's view of the two codecs: one encoder per outgoing message, one decoder per incoming
//! one, each either carrying real symbol bytes or not (simulation).
//!
//! Without bytes, LT decodes coefficient vectors only (`LtDecoder<NoBytes>`: the very elimination of
//! the byte decoder). RaptorQ has no coefficient-only mode in the crate, so it runs on tiny symbols
//! ([`SIM_RAPTORQ_SYMBOL_BYTES`]) of content both ends derive from the header
//! ([`synthetic_message`]): the same `RaptorqDecoder` as real use decides when the message is
//! decoded, and the receiver checks the bytes it recovered.

use super::{CloudBurstConfig, Codec};
use crate::fec::{
    split_message, ByteSymbol, LtDecoder, LtEncoder, NoBytes, Progress, RaptorqDecoder, RaptorqEncoder,
};
use crate::rng::mix64;

/// RaptorQ symbol size when the engine carries no real bytes.
pub const SIM_RAPTORQ_SYMBOL_BYTES: u16 = 8;

/// The content of a simulated RaptorQ message (or block): `k` symbols of
/// [`SIM_RAPTORQ_SYMBOL_BYTES`], a function of the header's fields so the receiver can check what
/// it decoded.
pub fn synthetic_message(k: u32, message_bytes: u32, wire_id: u8, block: u16) -> Vec<u8> {
    let s = SIM_RAPTORQ_SYMBOL_BYTES as usize;
    let seed = mix64(((block as u64) << 32) | ((message_bytes as u64) << 8) | wire_id as u64);
    (0..k as usize * s)
        .map(|i| (mix64(seed ^ (i as u64 / 8)) >> ((i % 8) * 8)) as u8)
        .collect()
}

/// How a packet names its content: the LT coefficient vector or the RaptorQ symbol id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    Set(u64),
    Esi(u32),
}

/// One outgoing message's encoder.
pub enum OutCode {
    /// LT; `sources` holds the source packets when the engine carries bytes.
    Lt {
        enc: LtEncoder,
        sources: Option<Vec<ByteSymbol>>,
    },
    Raptorq(Box<RaptorqEncoder>),
}

impl std::fmt::Debug for OutCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutCode::Lt { enc, sources } => f
                .debug_struct("Lt")
                .field("enc", enc)
                .field("bytes", &sources.is_some())
                .finish(),
            OutCode::Raptorq(e) => write!(f, "Raptorq(k = {})", e.source_packets()),
        }
    }
}

impl OutCode {
    /// `data` is the message when the engine carries bytes, else None (its length is `len_bytes`).
    pub fn new(
        cfg: &CloudBurstConfig,
        k: u32,
        seed: u64,
        data: Option<&[u8]>,
        len_bytes: u32,
        wire_id: u8,
        block: u16,
    ) -> OutCode {
        match cfg.codec {
            Codec::Lt => OutCode::Lt {
                enc: LtEncoder::new(k, cfg.degree, seed),
                sources: data.map(|d| split_message(d, cfg.symbol_bytes as usize)),
            },
            Codec::Raptorq => OutCode::Raptorq(Box::new(match data {
                Some(d) => RaptorqEncoder::new(d, cfg.symbol_bytes as u16),
                None => RaptorqEncoder::new(
                    &synthetic_message(k, len_bytes, wire_id, block),
                    SIM_RAPTORQ_SYMBOL_BYTES,
                ),
            })),
        }
    }

    /// Appends the symbol of the `index`-th packet to `out` (nothing for byte-less LT) and returns
    /// its name. Writes in place: no allocation for LT; RaptorQ repair symbols are built by the crate.
    pub fn next(&self, index: u64, out: &mut Vec<u8>) -> Name {
        match self {
            OutCode::Lt { enc, sources } => {
                let set = enc.mask(index);
                if let Some(src) = sources {
                    let at = out.len();
                    let mut bits = set;
                    out.extend_from_slice(&src[bits.trailing_zeros() as usize].0);
                    bits &= bits - 1;
                    while bits != 0 {
                        let s = &src[bits.trailing_zeros() as usize].0;
                        for (x, y) in out[at..].iter_mut().zip(s) {
                            *x ^= *y;
                        }
                        bits &= bits - 1;
                    }
                }
                Name::Set(set)
            }
            OutCode::Raptorq(e) => Name::Esi(e.symbol_into(index as u32, out)),
        }
    }
}

/// What one packet did to an incoming message.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Pending,
    /// Decoded; the message bytes when the engine carries them.
    Decoded(Option<Vec<u8>>),
    /// The packet does not belong to this codec or its symbol has the wrong length.
    Invalid,
    /// Simulated RaptorQ decoded bytes other than the sender's (a codec bug; counted).
    Corrupt,
}

/// One incoming message's decoder.
pub enum InCode {
    Lt(LtDecoder<NoBytes>),
    LtBytes(LtDecoder<ByteSymbol>),
    Raptorq(Box<RaptorqDecoder>),
}

impl std::fmt::Debug for InCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InCode::Lt(d) => write!(f, "Lt(rank {})", d.rank()),
            InCode::LtBytes(d) => write!(f, "LtBytes(rank {})", d.rank()),
            InCode::Raptorq(_) => write!(f, "Raptorq"),
        }
    }
}

/// Symbol bytes a coded packet carries after its header.
pub fn symbol_len(codec: Codec, carry_bytes: bool, symbol_bytes: u32) -> usize {
    match (codec, carry_bytes) {
        (_, true) => symbol_bytes as usize,
        (Codec::Lt, false) => 0,
        (Codec::Raptorq, false) => SIM_RAPTORQ_SYMBOL_BYTES as usize,
    }
}

impl InCode {
    pub fn new(codec: Codec, carry_bytes: bool, symbol_bytes: u32, k: u32, message_bytes: u32) -> InCode {
        match (codec, carry_bytes) {
            (Codec::Lt, false) => InCode::Lt(LtDecoder::new(k)),
            (Codec::Lt, true) => InCode::LtBytes(LtDecoder::new(k)),
            (Codec::Raptorq, true) => InCode::Raptorq(Box::new(RaptorqDecoder::new(
                message_bytes as usize,
                symbol_bytes as u16,
            ))),
            (Codec::Raptorq, false) => InCode::Raptorq(Box::new(RaptorqDecoder::new(
                k as usize * SIM_RAPTORQ_SYMBOL_BYTES as usize,
                SIM_RAPTORQ_SYMBOL_BYTES,
            ))),
        }
    }

    /// Offers one packet; `symbol` is what follows the header, already checked to be
    /// [`symbol_len`] bytes long.
    pub fn add(
        &mut self,
        name: Name,
        symbol: &[u8],
        message_bytes: u32,
        wire_id: u8,
        block: u16,
        carry_bytes: bool,
    ) -> Outcome {
        match (self, name) {
            (InCode::Lt(d), Name::Set(set)) => match d.add(set, NoBytes) {
                Progress::Decoded => Outcome::Decoded(None),
                Progress::Invalid => Outcome::Invalid,
                _ => Outcome::Pending,
            },
            (InCode::LtBytes(d), Name::Set(set)) => match d.add(set, ByteSymbol(symbol.to_vec())) {
                Progress::Decoded => {
                    let done = std::mem::replace(d, LtDecoder::new(1));
                    Outcome::Decoded(done.into_message(message_bytes as usize))
                }
                Progress::Invalid => Outcome::Invalid,
                _ => Outcome::Pending,
            },
            (InCode::Raptorq(d), Name::Esi(esi)) => match d.add(esi, symbol.to_vec()) {
                None => Outcome::Pending,
                Some(m) if carry_bytes => Outcome::Decoded(Some(m.to_vec())),
                Some(m) => {
                    let k = m.len() / SIM_RAPTORQ_SYMBOL_BYTES as usize;
                    if m == synthetic_message(k as u32, message_bytes, wire_id, block) {
                        Outcome::Decoded(None)
                    } else {
                        Outcome::Corrupt
                    }
                }
            },
            _ => Outcome::Invalid,
        }
    }
}
