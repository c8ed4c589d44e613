//! Random drop on overflow (Hashem 1989; ns-2's DropRand): when the arrival does not fit, the packet
//! dropped is chosen uniformly among the queued ones and the arrival.

use super::{Decision, DropCause};
use rand::Rng as _;
use tailcut_proto::rng::Rng;

pub(super) fn decide(fits: bool, queued: usize, rng: &mut Rng) -> Decision {
    if fits {
        return Decision::Admit { marked: false };
    }
    let pick = rng.random_range(0..=queued);
    if pick == queued {
        Decision::Drop(DropCause::Overflow)
    } else {
        Decision::Evict(pick)
    }
}
