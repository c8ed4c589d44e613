//! The few random draws the generators make, written out so a workload depends only on the Xoshiro stream
//! (not on how a `rand` version implements ranges or shuffles).

use rand::RngCore;
use tailcut_proto::rng::Rng;

/// Uniform in `[0, 1)` with 53 random bits.
pub fn unit_f64(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform index in `0..n` (`n > 0`) by multiply-shift; the bias is below n / 2^64.
pub fn index(rng: &mut Rng, n: usize) -> usize {
    debug_assert!(n > 0);
    ((rng.next_u64() as u128 * n as u128) >> 64) as usize
}

/// Exponential with the given mean.
pub fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    -(1.0 - unit_f64(rng)).ln() * mean
}

/// Fisher-Yates shuffle.
pub fn shuffle<T>(rng: &mut Rng, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = index(rng, i + 1);
        v.swap(i, j);
    }
}

/// A uniformly random derangement of `hosts` (no host maps to itself), by rejection of shuffles
/// (expected e tries). `hosts` must hold at least 2 distinct values. Returns the receiver of `hosts[i]`.
pub fn derangement(rng: &mut Rng, hosts: &[u32]) -> Vec<u32> {
    debug_assert!(hosts.len() >= 2);
    let mut perm = hosts.to_vec();
    loop {
        shuffle(rng, &mut perm);
        if perm.iter().zip(hosts).all(|(a, b)| a != b) {
            return perm;
        }
    }
}
