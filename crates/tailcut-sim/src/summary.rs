//! The one definition of the figures every report publishes (`docs/metrics.md`): size classes, the
//! percentile rule, the timeout fraction, extra bytes, and how unfinished flows count. Python's
//! `tailcut.summary` implements the same rules; `tests/metrics/cases.json` holds flow records with the
//! figures both implementations must give for them.

use crate::metrics::FlowRecord;

/// Flows below this size (bytes; 100 KB) are small.
pub const SMALL_MAX_BYTES: u64 = 100_000;
/// Flows of at least this size (bytes; 1 MB) are large; the others are medium.
pub const LARGE_MIN_BYTES: u64 = 1_000_000;

/// The percentiles every summary reports, as (name, thousandths): integer ranks need no float rounding.
pub const PERCENTILES: [(&str, u64); 4] = [("p50", 500), ("p95", 950), ("p99", 990), ("p999", 999)];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeClass {
    Small,
    Medium,
    Large,
}

impl SizeClass {
    /// The class of a flow of `size_bytes` (the response size; a request does not change the class).
    pub fn of(size_bytes: u64) -> SizeClass {
        if size_bytes < SMALL_MAX_BYTES {
            SizeClass::Small
        } else if size_bytes < LARGE_MIN_BYTES {
            SizeClass::Medium
        } else {
            SizeClass::Large
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SizeClass::Small => "small",
            SizeClass::Medium => "medium",
            SizeClass::Large => "large",
        }
    }
}

/// The percentile rule, shared with the testbed and the UDP runtime (`tailcut_proto::stats`).
pub use tailcut_proto::stats::percentile;

/// The headline figures of a group of flows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub flows: u64,
    pub completed: u64,
    pub unfinished: u64,
    /// Over completed flows only (an infinite mean would say nothing); `unfinished` stands beside it.
    pub mean_fct_ns: f64,
    /// Nearest-rank percentiles with unfinished flows infinitely late (see [`percentile`]).
    pub p50_fct_ns: f64,
    pub p95_fct_ns: f64,
    pub p99_fct_ns: f64,
    pub p999_fct_ns: f64,
    /// Fraction of all flows, finished or not, with at least one retransmission timeout.
    pub timeout_fraction: f64,
    /// Payload bytes every flow sent (finished or not, all copies, retransmissions and coded packets)
    /// beyond the payload of the completed flows, over that payload: an unfinished flow's bytes
    /// delivered no message, so they all count as extra and a black hole never reads as a saving.
    pub extra_bytes_ratio: f64,
    /// Redundant bytes (proactive copies, coded packets, replicas) of every flow over the payload of
    /// the completed flows.
    pub redundant_bytes_ratio: f64,
}

impl Summary {
    /// Summarises the flows of `scheme`.
    pub fn of(records: &[FlowRecord], scheme: &str) -> Summary {
        Summary::over(records.iter().filter(|r| r.scheme == scheme))
    }

    /// Summarises the flows of `scheme` that `keep` selects (e.g. one size class).
    pub fn of_where(records: &[FlowRecord], scheme: &str, keep: impl Fn(&FlowRecord) -> bool) -> Summary {
        Summary::over(records.iter().filter(|r| r.scheme == scheme && keep(r)))
    }

    /// Summarises the given flows. A flow's payload is its response and its request.
    pub fn over<'a>(records: impl IntoIterator<Item = &'a FlowRecord>) -> Summary {
        let mut fcts = Vec::new();
        let (mut flows, mut timeouts, mut sent, mut redundant, mut delivered) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        for r in records {
            flows += 1;
            timeouts += u64::from(r.stats.timeouts > 0);
            sent += r.stats.sent_bytes;
            redundant += r.stats.redundant_bytes;
            if let Some(fct) = r.fct_ns() {
                fcts.push(fct);
                delivered += r.size_bytes + r.request_bytes;
            }
        }
        fcts.sort_unstable();
        let completed = fcts.len() as u64;
        let unfinished = flows - completed;
        let ratio = |x: u64, of: u64| if of == 0 { f64::NAN } else { x as f64 / of as f64 };
        let [p50, p95, p99, p999] = PERCENTILES.map(|(_, q)| percentile(&fcts, unfinished, q));
        Summary {
            flows,
            completed,
            unfinished,
            mean_fct_ns: ratio(fcts.iter().sum(), completed),
            p50_fct_ns: p50,
            p95_fct_ns: p95,
            p99_fct_ns: p99,
            p999_fct_ns: p999,
            timeout_fraction: ratio(timeouts, flows),
            extra_bytes_ratio: ratio(sent, delivered) - 1.0,
            redundant_bytes_ratio: ratio(redundant, delivered),
        }
    }
}

#[cfg(test)]
mod tests;
