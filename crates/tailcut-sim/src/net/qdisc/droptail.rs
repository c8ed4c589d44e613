//! Drop-tail: an arrival that does not fit is dropped.

use super::{Decision, DropCause};

pub(super) fn decide(fits: bool) -> Decision {
    if fits {
        Decision::Admit { marked: false }
    } else {
        Decision::Drop(DropCause::Overflow)
    }
}
