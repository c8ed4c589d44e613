//! CP, Cut Payload (Cheng et al., NSDI'14, "Switch: CP drop processing"; htsim `CutPayloadQueue`):
//! admit the whole packet below the threshold, else cut its payload and admit the header into the
//! headroom beyond the buffer, else drop. With `priority_headers` cut headers wait in a queue of their
//! own, served before all data (NDP's CompositeQueue).

use crate::arena::PktId;
use std::collections::VecDeque;

#[derive(Clone, Copy)]
pub(super) struct Trim {
    pub header_bytes: u64,
    pub threshold: Option<u64>,
    pub headroom: u64,
    pub priority_headers: bool,
    pub ecn_k: Option<u64>,
}

/// Where an arrival at a trimming class goes.
pub(super) enum TrimDecision {
    /// Whole, into the class FIFO.
    Whole {
        marked: bool,
    },
    /// As `bytes` of header (`cut`: its payload was cut; header-only packets are admitted as they are),
    /// into the header queue with `priority_headers`, else the class FIFO.
    Header {
        bytes: u64,
        cut: bool,
    },
    Drop,
}

/// The port's queue of cut headers served ahead of all data.
pub(super) struct HeaderQueue {
    pub fifo: VecDeque<PktId>,
    pub bytes: u64,
}

/// The queue occupancy a trimming decision depends on.
pub(super) struct Occupancy {
    /// Bytes in the class FIFO and its limit.
    pub class_bytes: u64,
    pub class_limit: u64,
    /// Bytes of data (everything but the header queue) in the port and the port buffer.
    pub data_bytes: u64,
    pub buffer: u64,
    /// Bytes in the header queue.
    pub header_bytes: u64,
}

impl Trim {
    pub(super) fn decide(&self, size: u64, ect: bool, has_payload: bool, o: &Occupancy) -> TrimDecision {
        let thr = self.threshold.map_or(o.class_limit, |t| t.min(o.class_limit));
        if o.data_bytes + size <= o.buffer && o.class_bytes + size <= thr {
            let marked = ect && self.ecn_k.is_some_and(|k| o.class_bytes >= k);
            return TrimDecision::Whole { marked };
        }
        // Header-only packets (ACKs, PACKs, cut packets) have nothing to cut and use the headroom as is.
        let hdr = if has_payload {
            self.header_bytes.min(size)
        } else {
            size
        };
        let room = self.headroom;
        let fits = if self.priority_headers {
            o.header_bytes + hdr <= room
        } else {
            o.data_bytes + hdr <= o.buffer + room && o.class_bytes + hdr <= o.class_limit + room
        };
        if fits {
            TrimDecision::Header {
                bytes: hdr,
                cut: has_payload,
            }
        } else {
            TrimDecision::Drop
        }
    }

    /// Admission at an empty queue of an idle port (see `Discipline::admit_idle`).
    pub(super) fn admit_idle(&self, size: u64, ect: bool) -> Option<bool> {
        if self.threshold.is_some_and(|t| size > t) {
            return None;
        }
        Some(self.ecn_k.is_some_and(|k| k == 0) && ect)
    }
}
