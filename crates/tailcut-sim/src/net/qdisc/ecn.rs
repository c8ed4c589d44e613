//! DCTCP marking (Alizadeh et al. 2010, Sec. 3.1): an ECN-capable arrival is CE-marked when the
//! instantaneous queue, counted in bytes before it, is at least K. Not-ECT packets pass unmarked;
//! overflow drops as drop-tail.

use super::{Decision, DropCause};

pub(super) fn decide(fits: bool, ect: bool, q_bytes: u64, k: u64) -> Decision {
    if !fits {
        return Decision::Drop(DropCause::Overflow);
    }
    Decision::Admit {
        marked: ect && q_bytes >= k,
    }
}

/// Whether an arrival at an empty queue is marked (only with K = 0).
pub(super) fn marks_empty_queue(k: u64, ect: bool) -> bool {
    k == 0 && ect
}
