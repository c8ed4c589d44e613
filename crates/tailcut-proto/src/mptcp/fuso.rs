//! FUSO's choice of the worst and the best sub-flow (Sec. 3.2.1), as pure functions of what the
//! sender knows about each sub-flow, so every tie rule is testable on its own.

use crate::rng::Rng;
use crate::time::Dur;
use rand::Rng as _;

/// One sub-flow as FUSO sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct PathView {
    /// C_l; `None` = infinity (the sub-flow has transmitted nothing yet).
    pub(super) cost: Option<f64>,
    /// Measured (smoothed) RTT; 0 before the first sample.
    pub(super) rtt: Dur,
    /// Worst: has an un-ACKed packet not yet protected. Best: has a spare cwnd slot.
    pub(super) eligible: bool,
}

/// "The worst sub-flow is picked among those which have at least one un-ACKed packet, and with the
/// largest C_l. [...] If all sub-flows' C_l equals zero, FUSO picks the one with the largest measured
/// RTT." Equal non-zero C_l are broken the same way (largest RTT); then the lowest index.
pub(super) fn worst(paths: &[PathView]) -> Option<usize> {
    let mut pick: Option<usize> = None;
    for (i, p) in paths.iter().enumerate() {
        if !p.eligible {
            continue;
        }
        let better = match pick {
            None => true,
            Some(j) => {
                let (c, cj) = (p.cost.unwrap_or(0.0), paths[j].cost.unwrap_or(0.0));
                c > cj || (c == cj && p.rtt > paths[j].rtt)
            }
        };
        if better {
            pick = Some(i);
        }
    }
    pick
}

/// "The best sub-flow is picked among those which have spare cwnd, and with the smallest C_l."
/// Zero (never retransmitted) beats any positive C_l; infinity (never transmitted) is last. Equal C_l
/// (in particular several zeros) go to the smallest measured RTT, then the lowest index. "If all
/// sub-flows' C_l equal infinity, FUSO randomly picks one."
pub(super) fn best(paths: &[PathView], rng: &mut Rng) -> Option<usize> {
    let mut pick: Option<usize> = None;
    let mut infinite = 0u32;
    for (i, p) in paths.iter().enumerate() {
        if !p.eligible {
            continue;
        }
        let Some(c) = p.cost else {
            infinite += 1;
            continue;
        };
        let better = match pick {
            None => true,
            Some(j) => {
                let cj = paths[j].cost.unwrap_or(f64::INFINITY);
                c < cj || (c == cj && p.rtt < paths[j].rtt)
            }
        };
        if better {
            pick = Some(i);
        }
    }
    if pick.is_some() || infinite == 0 {
        return pick;
    }
    let k = rng.random_range(0..infinite);
    paths
        .iter()
        .enumerate()
        .filter(|(_, p)| p.eligible)
        .nth(k as usize)
        .map(|(i, _)| i)
}
