//! pFabric (Alizadeh et al., SIGCOMM'13, Sec. 4.2): packets carry a priority (`Packet::priority`, lower
//! first). The port sends the earliest packet of the flow holding the highest-priority packet; on
//! overflow the lowest-priority packet among the queued ones and the arrival is dropped.

use super::{Decision, DropCause};
use crate::arena::{PacketArena, PktId};
use std::collections::VecDeque;

pub(super) fn decide(fits: bool, fifo: &VecDeque<PktId>, arena: &PacketArena, prio: u64) -> Decision {
    if fits {
        return Decision::Admit { marked: false };
    }
    // The arrival itself goes on a tie: only a strictly worse queued packet is pushed out.
    let worst = fifo
        .iter()
        .enumerate()
        .max_by_key(|&(i, &id)| (arena.get(id).priority, i))
        .map(|(i, &id)| (i, arena.get(id).priority));
    match worst.filter(|&(_, p)| p > prio) {
        Some((i, _)) => Decision::Evict(i),
        None => Decision::Drop(DropCause::Overflow),
    }
}

/// The earliest packet of the flow holding the highest-priority packet (which avoids reordering a
/// flow's packets); ties in priority go to the earliest arrival.
pub(super) fn pick(fifo: &VecDeque<PktId>, arena: &PacketArena) -> Option<usize> {
    let best = fifo
        .iter()
        .enumerate()
        .min_by_key(|&(i, &id)| (arena.get(id).priority, i))
        .map(|(_, &id)| arena.get(id).tuple)?;
    fifo.iter().position(|&id| arena.get(id).tuple == best)
}
