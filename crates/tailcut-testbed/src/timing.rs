//! Whether a run kept its timing: the verdict that makes a testbed run an oracle that knows its own
//! quality. A run whose fabric fell behind its schedule, or whose agents started flows late, measured
//! the machine as much as the network; its FCTs must not pass as the kernel's.
//!
//! The rule (`docs/testbed.md`, "Timing verdict"), per scheme:
//! - the fabric's lateness p99 over every port event is at most `[testbed].max_lateness_rtt` times
//!   the base RTT (the smallest round-trip propagation delay between two hosts), and
//! - the median flow-start lateness of the agents is at most `[testbed].max_start_late`.
//!
//! Either bound exceeded makes the run invalid: its outputs say so, the command warns and exits with
//! [`EXIT_INVALID_TIMING`] unless `--allow-invalid-timing` was given.

use serde::Serialize;
use tailcut_sim::topo::{NodeKind, TopoSpec};

/// Exit code of `tailcut-testbed run` (and `tailcut testbed run`) when a scheme's run did not keep
/// its timing and `--allow-invalid-timing` was not given. Its outputs are written all the same.
pub const EXIT_INVALID_TIMING: u8 = 3;

/// The verdict on one scheme's run, as `testbed.json` records it under `timing`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimingVerdict {
    pub valid: bool,
    /// Smallest round-trip propagation delay between two hosts of the topology.
    pub base_rtt_ns: u64,
    pub lateness_p99_ns: u64,
    /// `max_lateness_rtt` x `base_rtt_ns`.
    pub max_lateness_p99_ns: u64,
    /// Median of the flows' start lateness (`None`: no flow started).
    pub start_late_p50_ns: Option<u64>,
    pub max_start_late_p50_ns: u64,
    /// One sentence per bound exceeded; empty when valid.
    pub reasons: Vec<String>,
}

/// The thresholds of the rule, from `[testbed]`.
#[derive(Clone, Copy, Debug)]
pub struct TimingBounds {
    /// Largest lateness p99 as a fraction of the base RTT.
    pub max_lateness_rtt: f64,
    pub max_start_late_ns: u64,
}

fn us(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1e3)
}

/// The start-lateness statistic of the rule: the lower median of the flows' start lateness (any
/// order), so that an even count does not invent a value no flow had; `None` without flows. The
/// net bench applies the same statistic to its Poisson calls (`tailcut net bench`, through the
/// extension).
pub fn start_late_p50(start_late_ns: &[u64]) -> Option<u64> {
    let mut late = start_late_ns.to_vec();
    late.sort_unstable();
    (!late.is_empty()).then(|| late[(late.len() - 1) / 2])
}

/// Applies the rule to a run's fabric lateness p99 and its flows' start lateness (any order).
pub fn verdict(
    lateness_p99_ns: u64,
    start_late_ns: &[u64],
    base_rtt_ns: u64,
    bounds: TimingBounds,
) -> TimingVerdict {
    let max_lateness_p99_ns = (bounds.max_lateness_rtt * base_rtt_ns as f64).min(u64::MAX as f64) as u64;
    let start_late_p50_ns = start_late_p50(start_late_ns);
    let mut reasons = Vec::new();
    if lateness_p99_ns > max_lateness_p99_ns {
        reasons.push(format!(
            "fabric lateness p99 {} > {} (testbed.max_lateness_rtt = {} of the base RTT {})",
            us(lateness_p99_ns),
            us(max_lateness_p99_ns),
            bounds.max_lateness_rtt,
            us(base_rtt_ns)
        ));
    }
    if let Some(p50) = start_late_p50_ns.filter(|&p| p > bounds.max_start_late_ns) {
        reasons.push(format!(
            "flows started a median {} late > {} (testbed.max_start_late)",
            us(p50),
            us(bounds.max_start_late_ns)
        ));
    }
    TimingVerdict {
        valid: reasons.is_empty(),
        base_rtt_ns,
        lateness_p99_ns,
        max_lateness_p99_ns,
        start_late_p50_ns,
        max_start_late_p50_ns: bounds.max_start_late_ns,
        reasons,
    }
}

/// The smallest round-trip propagation delay between two distinct hosts (twice the one-way delay of
/// the quickest path, by the links' delays); 0 with fewer than two connected hosts.
pub fn base_rtt_ns(spec: &TopoSpec) -> u64 {
    let n = spec.nodes.len();
    let mut adj: Vec<Vec<(usize, u64)>> = vec![Vec::new(); n];
    for l in &spec.links {
        adj[l.a as usize].push((l.b as usize, l.delay.0));
        adj[l.b as usize].push((l.a as usize, l.delay.0));
    }
    let mut best = u64::MAX;
    for src in (0..n).filter(|&i| spec.nodes[i].kind == NodeKind::Host) {
        // Dijkstra by delay; topologies here have at most a few hundred nodes.
        let mut dist = vec![u64::MAX; n];
        let mut heap = std::collections::BinaryHeap::new();
        dist[src] = 0;
        heap.push(std::cmp::Reverse((0u64, src)));
        while let Some(std::cmp::Reverse((d, u))) = heap.pop() {
            if d > dist[u] {
                continue;
            }
            if u != src && spec.nodes[u].kind == NodeKind::Host {
                best = best.min(d);
                continue; // a path through a host is no path between hosts
            }
            for &(v, w) in &adj[u] {
                let nd = d.saturating_add(w);
                if nd < dist[v] {
                    dist[v] = nd;
                    heap.push(std::cmp::Reverse((nd, v)));
                }
            }
        }
    }
    if best == u64::MAX {
        0
    } else {
        best.saturating_mul(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: TimingBounds = TimingBounds {
        max_lateness_rtt: 0.1,
        max_start_late_ns: 1_000_000,
    };

    #[test]
    fn on_time_is_valid() {
        let v = verdict(9_000, &[10_000, 500_000, 2_000_000], 100_000, B);
        assert!(v.valid, "{v:?}");
        assert_eq!(v.max_lateness_p99_ns, 10_000);
        assert_eq!(v.start_late_p50_ns, Some(500_000));
        assert!(v.reasons.is_empty());
    }

    #[test]
    fn a_bound_is_inclusive() {
        assert!(verdict(10_000, &[1_000_000], 100_000, B).valid);
    }

    #[test]
    fn late_fabric_is_invalid() {
        // Issue #44's idle-machine figure: p99 1.3 ms on a 100 us RTT.
        let v = verdict(1_310_000, &[100_000], 100_000, B);
        assert!(!v.valid);
        assert_eq!(v.reasons.len(), 1);
        assert!(v.reasons[0].contains("fabric lateness p99"), "{v:?}");
    }

    #[test]
    fn late_starts_are_invalid() {
        // Issue #43: flows started 266 ms late at the median.
        let v = verdict(5_000, &[266_000_000, 266_000_000, 1_000], 100_000, B);
        assert!(!v.valid);
        assert!(v.reasons[0].contains("started a median"), "{v:?}");
    }

    #[test]
    fn both_bounds_give_two_reasons() {
        let v = verdict(18_900_000, &[266_000_000], 100_000, B);
        assert_eq!(v.reasons.len(), 2, "{v:?}");
    }

    #[test]
    fn the_median_is_the_lower_one_and_order_free() {
        let v = verdict(0, &[4, 1, 3, 2], 100_000, B);
        assert_eq!(v.start_late_p50_ns, Some(2));
    }

    #[test]
    fn no_flow_leaves_only_the_fabric_bound() {
        let v = verdict(0, &[], 100_000, B);
        assert!(v.valid);
        assert_eq!(v.start_late_p50_ns, None);
    }

    #[test]
    fn zero_bounds_refuse_any_lateness_and_huge_ones_accept_all() {
        let zero = TimingBounds {
            max_lateness_rtt: 0.0,
            max_start_late_ns: 0,
        };
        assert!(!verdict(1, &[0], 100_000, zero).valid);
        assert!(!verdict(0, &[1], 100_000, zero).valid);
        let huge = TimingBounds {
            max_lateness_rtt: 1e12,
            max_start_late_ns: u64::MAX,
        };
        assert!(verdict(1_000_000_000_000, &[u64::MAX], 100_000, huge).valid);
    }

    #[test]
    fn base_rtt_of_a_star_is_two_links_each_way() {
        let spec = tailcut_sim::topo::build(
            &tailcut_sim::topo::TopologyConfig::Star(tailcut_sim::topo::Star {
                hosts: 3,
                host_rate: tailcut_proto::units::Rate(100_000_000),
                link_delay: tailcut_proto::Dur::from_micros(25),
            }),
            &tailcut_sim::topo::SwitchQueues::default(),
        )
        .expect("a star builds");
        assert_eq!(base_rtt_ns(&spec), 100_000);
    }
}
