//! Forward error correction for CloudBurst (Sec. III-A): an LT code over at most 64 source packets whose
//! coefficient vector is a `u64` bitset (the header's "set of included packets", Fig. 4).
//!
//! Standalone: no simulator types. The decoder is generic over [`Symbol`], so the simulator runs the
//! same elimination on coefficient vectors alone ([`NoBytes`]) while real use carries bytes
//! ([`ByteSymbol`]).

mod degree;
mod lt;
mod raptorq;

pub use self::raptorq::{RaptorqDecoder, RaptorqEncoder};
pub use degree::{DegreeDist, SYSTEMATIC_MAX_DEGREE};
pub use lt::{split_message, LtDecoder, LtEncoder, Progress, MAX_SOURCE_PACKETS};

/// What a coded packet carries besides its coefficients: something that XORs.
pub trait Symbol: Clone {
    /// `self ^= other`.
    fn xor_assign(&mut self, other: &Self);
}

/// A symbol with no bytes: the decoder tracks coefficient vectors only (simulation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoBytes;

impl Symbol for NoBytes {
    fn xor_assign(&mut self, _other: &Self) {}
}

/// A symbol of real bytes. All symbols of one message have the same length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByteSymbol(pub Vec<u8>);

impl Symbol for ByteSymbol {
    fn xor_assign(&mut self, other: &Self) {
        // Eight bytes at a time; the compiler vectorises this loop.
        let (a, b) = (&mut self.0, &other.0);
        let n = a.len().min(b.len());
        let (a8, a_rest) = a[..n].split_at_mut(n / 8 * 8);
        let (b8, b_rest) = b[..n].split_at(n / 8 * 8);
        for (x, y) in a8.chunks_exact_mut(8).zip(b8.chunks_exact(8)) {
            let v = u64::from_ne_bytes(x[..].try_into().expect("8"))
                ^ u64::from_ne_bytes(y.try_into().expect("8"));
            x.copy_from_slice(&v.to_ne_bytes());
        }
        for (x, y) in a_rest.iter_mut().zip(b_rest) {
            *x ^= *y;
        }
    }
}

#[cfg(test)]
mod tests;
