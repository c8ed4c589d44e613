//! Lateness of the real-time loop: how long after its scheduled time an event (a port's line
//! freeing, a packet reaching a node) was actually handled. A fixed log-linear histogram (8 linear
//! sub-buckets per power of two, so quantiles are within 12.5%), updated without allocation.

use serde::Serialize;

const SUB: usize = 8;
const BUCKETS: usize = 64 * SUB;

#[derive(Clone)]
pub struct Lateness {
    counts: Box<[u64; BUCKETS]>,
    n: u64,
    sum_ns: u128,
    max_ns: u64,
}

/// Lateness quantiles in nanoseconds (upper bounds of their histogram buckets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatenessSummary {
    pub events: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            counts: Box::new([0; BUCKETS]),
            n: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros() as usize; // >= 3
    let sub = ((ns >> (exp - 3)) & (SUB as u64 - 1)) as usize;
    (exp - 2) * SUB + sub
}

/// The largest value that falls in bucket `b`.
fn upper(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let exp = b / SUB + 2;
    let sub = (b % SUB) as u64;
    ((SUB as u64 + sub + 1) << (exp - 3)) - 1
}

impl Lateness {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
        self.n += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, o: &Lateness) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    /// The `per_mille` percentile by nearest rank (`tailcut_proto::stats::rank`, `docs/metrics.md`):
    /// the upper end of the bucket that holds that rank, at most the largest value; 0 without events.
    fn percentile(&self, per_mille: u64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = tailcut_proto::stats::rank(self.n, per_mille);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper(b).min(self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            events: self.n,
            mean_ns: if self.n == 0 {
                0
            } else {
                (self.sum_ns / u128::from(self.n)) as u64
            },
            p50_ns: self.percentile(500),
            p99_ns: self.percentile(990),
            max_ns: self.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_value_lies_in_its_bucket_within_an_eighth(ns in 0u64..u64::MAX / 4) {
            let b = bucket(ns);
            prop_assert!(ns <= upper(b));
            prop_assert!(b == 0 || ns > upper(b - 1));
            prop_assert!(upper(b) - ns <= ns / 8 + 1);
        }
    }

    #[test]
    fn quantiles_of_a_known_spread() {
        let mut l = Lateness::default();
        for ns in 1..=1000 {
            l.record(ns * 1000);
        }
        let s = l.summary();
        assert!((500_000..=570_000).contains(&s.p50_ns), "{s:?}");
        assert!((990_000..=1_000_000).contains(&s.p99_ns), "{s:?}");
        assert_eq!(s.max_ns, 1_000_000);
    }
}
