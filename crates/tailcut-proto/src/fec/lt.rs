//! LT encoder and decoder (Luby, FOCS'02; CloudBurst Sec. III-A, Fig. 3 and Fig. 5).
//!
//! A coded packet is the XOR of the source packets named by its 64-bit coefficient vector, which the
//! header carries (Fig. 4), so the decoder needs no RNG. Decoding is incremental Gaussian elimination
//! over GF(2): each arriving vector is reduced against the rows kept so far (a degree-1 packet, or
//! one that reduces to degree 1, resolves a source packet at once, as in the peeling of Fig. 5); a
//! vector that reduces to zero is redundant. The message is recovered as soon as the received vectors
//! span all K source packets, which is the best any decoder can do with those packets.

use super::{ByteSymbol, DegreeDist, Symbol};
use crate::rng::{mix64, Rng};
use rand::{Rng as _, SeedableRng};

/// Most source packets in one message: the header's bitset is 64 bits (Sec. IV-A, n = 64).
pub const MAX_SOURCE_PACKETS: u32 = 64;

fn full_mask(k: u32) -> u64 {
    if k >= 64 {
        u64::MAX
    } else {
        (1u64 << k) - 1
    }
}

/// Cuts a message into `symbol_bytes`-byte source packets, zero padding the last (Sec. III-A). An
/// empty message is one all-zero packet.
pub fn split_message(msg: &[u8], symbol_bytes: usize) -> Vec<ByteSymbol> {
    assert!(symbol_bytes > 0, "symbol_bytes must be > 0");
    let k = msg.len().div_ceil(symbol_bytes).max(1);
    (0..k)
        .map(|i| {
            let start = (i * symbol_bytes).min(msg.len());
            let end = ((i + 1) * symbol_bytes).min(msg.len());
            let mut v = vec![0u8; symbol_bytes];
            v[..end - start].copy_from_slice(&msg[start..end]);
            ByteSymbol(v)
        })
        .collect()
}

/// Chooses coefficient vectors. The vector of coded packet `index` is a deterministic function of
/// (`seed`, `index`), so a sender can regenerate any packet.
#[derive(Clone, Debug)]
pub struct LtEncoder {
    k: u32,
    dist: DegreeDist,
    cdf: Vec<f64>,
    seed: u64,
}

impl LtEncoder {
    /// `k` in 1..=64 source packets.
    pub fn new(k: u32, dist: DegreeDist, seed: u64) -> LtEncoder {
        assert!(
            (1..=MAX_SOURCE_PACKETS).contains(&k),
            "k must be in 1..=64, got {k}"
        );
        LtEncoder {
            k,
            dist,
            cdf: dist.cdf(k),
            seed,
        }
    }

    pub fn source_packets(&self) -> u32 {
        self.k
    }

    /// The coefficient vector (bit i = source packet i) of coded packet `index`.
    pub fn mask(&self, index: u64) -> u64 {
        let k = self.k;
        if self.dist.is_systematic() && index < k as u64 {
            return 1u64 << index;
        }
        let mut rng = Rng::seed_from_u64(mix64(self.seed ^ mix64(index)));
        if self.dist == DegreeDist::SystematicRandom {
            loop {
                let m = rng.random::<u64>() & full_mask(k);
                if m != 0 {
                    return m;
                }
            }
        }
        let d = self.dist.sample(k, &self.cdf, &mut rng).clamp(1, k);
        // d distinct source packets; draw the complement when d is more than half of k.
        let (want, invert) = if 2 * d > k { (k - d, true) } else { (d, false) };
        let mut m = 0u64;
        while m.count_ones() < want {
            m |= 1u64 << rng.random_range(0..k);
        }
        if invert {
            !m & full_mask(k)
        } else {
            m
        }
    }

    /// The payload of a coded packet with coefficient vector `mask` over `sources`.
    pub fn encode<S: Symbol>(mask: u64, sources: &[S]) -> Option<S> {
        let mut bits = mask;
        let first = bits.trailing_zeros() as usize;
        let mut out = sources.get(first)?.clone();
        bits &= bits - 1;
        while bits != 0 {
            out.xor_assign(sources.get(bits.trailing_zeros() as usize)?);
            bits &= bits - 1;
        }
        Some(out)
    }
}

/// What one received packet did to a decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// New information; not decoded yet.
    Innovative,
    /// Linearly dependent on what was received: no new information.
    Redundant,
    /// This packet completed the message.
    Decoded,
    /// The message was already decoded before this packet.
    AlreadyDecoded,
    /// Zero vector or bits beyond K: not a valid coded packet of this message.
    Invalid,
}

/// Incremental GF(2) elimination over at most 64 source packets.
#[derive(Clone, Debug)]
pub struct LtDecoder<S> {
    k: u32,
    /// Row with pivot (lowest set bit) i, if any.
    rows: Vec<Option<(u64, S)>>,
    rank: u32,
    received: u32,
    xors: u64,
    decoded: bool,
}

impl<S: Symbol> LtDecoder<S> {
    /// `k` in 1..=64 source packets.
    pub fn new(k: u32) -> LtDecoder<S> {
        assert!(
            (1..=MAX_SOURCE_PACKETS).contains(&k),
            "k must be in 1..=64, got {k}"
        );
        LtDecoder {
            k,
            rows: (0..k).map(|_| None).collect(),
            rank: 0,
            received: 0,
            xors: 0,
            decoded: false,
        }
    }

    pub fn source_packets(&self) -> u32 {
        self.k
    }
    /// Coded packets offered so far (valid ones).
    pub fn received(&self) -> u32 {
        self.received
    }
    /// Source packets' worth of information received (the rank of the received vectors).
    pub fn rank(&self) -> u32 {
        self.rank
    }
    /// Symbol XORs performed so far (the paper's computation overhead, Fig. 7(a)).
    pub fn xor_ops(&self) -> u64 {
        self.xors
    }
    pub fn is_decoded(&self) -> bool {
        self.decoded
    }

    /// Offers one coded packet.
    pub fn add(&mut self, mask: u64, mut sym: S) -> Progress {
        if mask == 0 || mask & !full_mask(self.k) != 0 {
            return Progress::Invalid;
        }
        if self.decoded {
            return Progress::AlreadyDecoded;
        }
        self.received += 1;
        let mut m = mask;
        loop {
            let p = m.trailing_zeros() as usize;
            match &self.rows[p] {
                Some((rm, rs)) => {
                    m ^= *rm;
                    sym.xor_assign(rs);
                    self.xors += 1;
                    if m == 0 {
                        return Progress::Redundant;
                    }
                }
                None => {
                    self.rows[p] = Some((m, sym));
                    self.rank += 1;
                    break;
                }
            }
        }
        if self.rank < self.k {
            return Progress::Innovative;
        }
        // Back substitution: row p has pivot p and higher bits only; rows above p are unit already.
        for p in (0..self.k as usize).rev() {
            let (lo, hi) = self.rows.split_at_mut(p + 1);
            let (rm, rs) = lo[p].as_mut().expect("full rank");
            let mut bits = *rm & !(1u64 << p);
            while bits != 0 {
                let q = bits.trailing_zeros() as usize;
                let (_, qs) = hi[q - p - 1].as_ref().expect("full rank");
                rs.xor_assign(qs);
                self.xors += 1;
                bits &= bits - 1;
            }
            *rm = 1u64 << p;
        }
        self.decoded = true;
        Progress::Decoded
    }

    /// The K source symbols, once decoded.
    pub fn into_symbols(self) -> Option<Vec<S>> {
        if !self.decoded {
            return None;
        }
        self.rows
            .into_iter()
            .map(|r| r.map(|(_, s)| s))
            .collect::<Option<Vec<S>>>()
    }
}

impl LtDecoder<ByteSymbol> {
    /// The message's `len_bytes` bytes, once decoded.
    pub fn into_message(self, len_bytes: usize) -> Option<Vec<u8>> {
        let symbols = self.into_symbols()?;
        if symbols.iter().map(|s| s.0.len()).sum::<usize>() < len_bytes {
            return None;
        }
        // One copy per symbol: collecting a byte iterator cost ~7% of a 100 KB call's CPU.
        let mut out = Vec::with_capacity(len_bytes);
        for s in &symbols {
            let take = (len_bytes - out.len()).min(s.0.len());
            out.extend_from_slice(&s.0[..take]);
        }
        Some(out)
    }
}
