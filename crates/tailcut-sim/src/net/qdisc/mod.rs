//! Queue disciplines: what happens to a packet arriving at a port's queue (admit, CE-mark, cut, drop,
//! push another out) and which queued packet leaves next. One module per discipline; a port's queue
//! ([`PortQueue`], `classes.rs`) holds one discipline per traffic class and dispatches on an enum, which
//! keeps the per-packet path free of virtual calls.

mod classes;
mod droptail;
mod ecn;
mod pfabric;
mod random_drop;
mod red;
mod trim;

pub use classes::PortQueue;

use super::aqm::AqmConfig;
use crate::arena::{PacketArena, PktId};
use std::collections::VecDeque;
use tailcut_proto::rng::Rng;
use tailcut_proto::{Ecn, Packet};

/// Why a packet was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    Overflow,
    Aqm,
}

/// What happened to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Queued (possibly CE-marked).
    Queued {
        marked: bool,
    },
    /// Payload cut (CP): the header alone was queued.
    Trimmed,
    /// Queued, but another packet was pushed out (random drop, pFabric).
    QueuedEvicting(PktId),
    Dropped(DropCause),
    /// A queued packet was pushed out and the arrival still did not fit: both are lost.
    DroppedEvicting(PktId),
}

/// A discipline's verdict on an arrival at its class queue (trimming decides on its own terms, see
/// `trim.rs`).
enum Decision {
    Admit {
        marked: bool,
    },
    Drop(DropCause),
    /// Push out the queued packet at this index of the class FIFO, then admit the arrival if it fits.
    Evict(usize),
}

/// The discipline of one traffic class, with its running state.
enum Discipline {
    DropTail,
    Ecn { k: u64 },
    Red(red::Red),
    RandomDrop,
    Pfabric,
    Trim(trim::Trim),
}

impl Discipline {
    fn new(cfg: &AqmConfig) -> Discipline {
        match *cfg {
            AqmConfig::DropTail => Discipline::DropTail,
            AqmConfig::Ecn { k } => Discipline::Ecn { k: k.0 },
            AqmConfig::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                mark,
            } => Discipline::Red(red::Red::new(min_th.0, max_th.0, max_p, w_q, mark)),
            AqmConfig::RandomDrop => Discipline::RandomDrop,
            AqmConfig::Pfabric => Discipline::Pfabric,
            AqmConfig::Trim {
                header_bytes,
                threshold,
                header_headroom,
                priority_headers,
                ecn_k,
            } => Discipline::Trim(trim::Trim {
                header_bytes: header_bytes.0,
                threshold: threshold.map(|t| t.0),
                headroom: header_headroom.0,
                priority_headers,
                ecn_k: ecn_k.map(|k| k.0),
            }),
        }
    }

    /// The verdict on `pkt` arriving at a class queue holding `fifo` (`q_bytes` bytes); `fits` says
    /// whether it fits both the class limit and the port buffer.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn decide(
        &mut self,
        pkt: &Packet,
        fits: bool,
        fifo: &VecDeque<PktId>,
        q_bytes: u64,
        arena: &PacketArena,
        now_ns: u64,
        typical_tx_ns: u64,
        rng: &mut Rng,
    ) -> Decision {
        let ect = pkt.ecn != Ecn::NotEct;
        match self {
            Discipline::DropTail => droptail::decide(fits),
            Discipline::Ecn { k } => ecn::decide(fits, ect, q_bytes, *k),
            Discipline::Red(r) => r.decide(fits, ect, q_bytes, now_ns, typical_tx_ns, rng),
            Discipline::RandomDrop => random_drop::decide(fits, fifo.len(), rng),
            Discipline::Pfabric => pfabric::decide(fits, fifo, arena, pkt.priority),
            Discipline::Trim(_) => unreachable!("trimming classes admit through PortQueue::enqueue_trim"),
        }
    }

    /// Admission of `pkt` at an empty queue of an idle port, where it will not wait: `Some(marked)`,
    /// or `None` when the discipline needs the full path (RED keeps an average, random drop and
    /// pFabric need the queue, a packet above the cut threshold is cut).
    fn admit_idle(&self, pkt: &Packet) -> Option<bool> {
        let ect = pkt.ecn != Ecn::NotEct;
        match self {
            Discipline::DropTail => Some(false),
            Discipline::Ecn { k } => Some(ecn::marks_empty_queue(*k, ect)),
            Discipline::Trim(t) => t.admit_idle(pkt.size_bytes as u64, ect),
            Discipline::Red(_) | Discipline::RandomDrop | Discipline::Pfabric => None,
        }
    }

    /// The class queue just went empty.
    fn went_idle(&mut self, now_ns: u64) {
        if let Discipline::Red(r) = self {
            r.went_idle(now_ns);
        }
    }
}

#[cfg(test)]
mod tests;
