//! The one percentile rule (`docs/metrics.md`), for every crate that reports one: the simulator's
//! summaries (`tailcut_sim::summary`), the testbed's `testbed.json` and lateness, the UDP runtime's
//! benchmark and the examples. Python's `tailcut.summary.percentile` is the same rule.
//!
//! Nearest rank: of `n` values the `per_mille` percentile is the value of rank `ceil(per_mille * n /
//! 1000)` (at least 1) in ascending order, with flows that did not finish counted as infinitely late.
//! Ranks are integers (`per_mille` in thousandths: 500, 990, 999) because `0.999 * 1000` is
//! 999.0000000000001 in floating point and would pick the 1000th of 1000 values.

/// The rank (from 1) of the `per_mille` percentile among `n` values: `ceil(per_mille * n / 1000)`, at
/// least 1. For a histogram's walk; sorted values have [`percentile`] and [`sample_percentile`].
pub fn rank(n: u64, per_mille: u64) -> u64 {
    (per_mille * n).div_ceil(1000).max(1)
}

/// The `per_mille` percentile by nearest rank of `n` completion times, the `sorted` finished ones and
/// `unfinished` more that count as infinitely late: the value of rank `ceil(per_mille * n / 1000)`.
/// Infinite when that rank falls among the unfinished flows, NaN without any flow.
pub fn percentile(sorted: &[u64], unfinished: u64, per_mille: u64) -> f64 {
    let n = sorted.len() as u64 + unfinished;
    if n == 0 {
        return f64::NAN;
    }
    sorted
        .get(rank(n, per_mille) as usize - 1)
        .map_or(f64::INFINITY, |&v| v as f64)
}

/// The `per_mille` percentile by nearest rank of samples that all completed (latencies, round-trip
/// times; ascending): [`percentile`] without unfinished ones, in the samples' own type. `None` without
/// samples. `per_mille = 1000` is the largest.
pub fn sample_percentile<T: Copy>(sorted: &[T], per_mille: u64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    sorted
        .get(rank(sorted.len() as u64, per_mille) as usize - 1)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_with_unfinished_flows_infinitely_late() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 0, 500), 500.0);
        assert_eq!(percentile(&v, 0, 990), 990.0);
        // 999 thousandths of 1000 is rank 999 exactly, not 1000.
        assert_eq!(percentile(&v, 0, 999), 999.0);
        assert_eq!(percentile(&v[..990], 10, 990), 990.0);
        assert_eq!(percentile(&v[..989], 11, 990), f64::INFINITY);
        assert!(percentile(&[], 0, 500).is_nan());
        assert_eq!(percentile(&[], 1, 500), f64::INFINITY);
        // Rank at least 1.
        assert_eq!(percentile(&[7], 0, 0), 7.0);
    }

    #[test]
    fn samples_share_the_rule() {
        let v: Vec<u64> = (1..=1000).collect();
        for q in [0, 1, 500, 950, 990, 999, 1000] {
            assert_eq!(
                sample_percentile(&v, q).map(|x| x as f64),
                Some(percentile(&v, 0, q))
            );
        }
        assert_eq!(sample_percentile(&[1.5, 2.5], 500), Some(1.5));
        assert_eq!(sample_percentile(&[1.5, 2.5], 1000), Some(2.5));
        assert_eq!(sample_percentile::<u64>(&[], 500), None);
        assert_eq!(rank(3, 500), 2);
    }
}
