//! Wrapping 32-bit TCP sequence numbers (RFC 793 / RFC 1982 serial arithmetic).
//!
//! On the wire sequence numbers wrap; engines keep 64-bit stream offsets internally and convert at the
//! edge with [`Seq::unwrap_near`], which picks the 64-bit value closest to a known reference.

use std::fmt;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Seq(pub u32);

impl Seq {
    /// The wire sequence number of 64-bit stream offset `offset` for a connection with initial sequence
    /// number `isn` (the SYN consumes `isn` itself, so data offset 0 is `isn + 1`).
    pub fn from_offset(isn: Seq, offset: u64) -> Seq {
        Seq(isn.0.wrapping_add(1).wrapping_add(offset as u32))
    }

    /// The 64-bit stream offset this wire value denotes, chosen nearest to `reference` (an offset the
    /// receiver of the value already knows, e.g. `snd_una` or `rcv_nxt`). Returns `None` when the value
    /// would lie before the stream start.
    pub fn unwrap_near(self, isn: Seq, reference: u64) -> Option<u64> {
        let rel = self.0.wrapping_sub(isn.0.wrapping_add(1));
        let ref_lo = reference as u32;
        let delta = rel.wrapping_sub(ref_lo) as i32 as i64;
        let v = reference as i64 + delta;
        (v >= 0).then_some(v as u64)
    }

    pub fn wrapping_add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }

    /// Serial-number comparison: true when `self` is before `other` (RFC 1982).
    pub fn lt(self, other: Seq) -> bool {
        (self.0.wrapping_sub(other.0) as i32) < 0
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn offsets_round_trip_across_wraps(isn in any::<u32>(), off in 0u64..(1u64 << 40), jitter in -(1i64 << 30)..(1i64 << 30)) {
            let isn = Seq(isn);
            let s = Seq::from_offset(isn, off);
            let reference = (off as i64 + jitter).max(0) as u64;
            prop_assert_eq!(s.unwrap_near(isn, reference), Some(off));
        }
    }

    #[test]
    fn serial_comparison_wraps() {
        assert!(Seq(u32::MAX).lt(Seq(3)));
        assert!(!Seq(3).lt(Seq(u32::MAX)));
    }
}
