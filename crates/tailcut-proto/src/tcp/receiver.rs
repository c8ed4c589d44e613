//! The receiving half of a TCP connection: reassembly bookkeeping (no payload is stored), cumulative
//! and selective acknowledgement, delayed ACKs, ECN echo, and in-order message delivery.

use crate::engine::{AppEvent, MsgId};
use crate::packet::SackBlocks;
use crate::seq::Seq;
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// How the receiver echoes Congestion Experienced marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EcnEcho {
    Off,
    /// RFC 3168 Sec. 6.1.3: set ECE on every ACK from a CE mark until a segment with CWR arrives.
    Classic,
    /// RFC 8257 Sec. 3.2: ECE mirrors the CE state of the latest data segment.
    Dctcp,
}

/// A received range above `rcv_nxt`, `[start, end)`, with the time it last grew (for SACK order).
#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    stamp: u64,
}

/// An ACK that must go out before the current segment is accounted for (DCTCP CE-state change with a
/// delayed ACK pending): it acknowledges `ack` with ECE = `ece`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlushAck {
    pub(crate) ack: u64,
    pub(crate) ece: bool,
}

/// What one data segment did to the receive stream.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SegmentOutcome {
    pub(crate) flush: Option<FlushAck>,
    pub(crate) delivered_bytes: u64,
    pub(crate) duplicate: bool,
    pub(crate) out_of_order: bool,
}

/// What a TCP-IR coded packet can do for the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CodedOutcome {
    /// Every byte of the block is already here.
    Complete,
    /// Exactly one segment of the block is missing: the XOR rebuilds `[start, start + len)`.
    Rebuild { start: u64, len_bytes: u32 },
    /// More than one segment is missing.
    Unrecoverable,
}

pub(crate) struct Receiver {
    pub(crate) rcv_nxt: u64,
    /// Sorted, disjoint, non-adjacent ranges received above `rcv_nxt`.
    ooo: Vec<Range>,
    stamp: u64,
    window_bytes: u32,
    delayed_ack: Option<Dur>,
    mss_bytes: u64,
    /// In-order bytes received since the last ACK sent.
    unacked_bytes: u64,
    pub(crate) ack_deadline: Option<Time>,
    ack_now: bool,
    ecn: EcnEcho,
    ece_latched: bool,
    ce_state: bool,
    /// RFC 7323 TS.Recent: the peer's timestamp to echo.
    pub(crate) ts_recent: u32,
    /// Expected messages: (id, end offset), in stream order.
    msgs: VecDeque<(MsgId, u64)>,
    expected_end: u64,
}

impl Receiver {
    pub(crate) fn new(window_bytes: u32, mss_bytes: u32, delayed_ack: Option<Dur>, ecn: EcnEcho) -> Self {
        Receiver {
            rcv_nxt: 0,
            ooo: Vec::new(),
            stamp: 0,
            window_bytes,
            delayed_ack,
            mss_bytes: u64::from(mss_bytes.max(1)),
            unacked_bytes: 0,
            ack_deadline: None,
            ack_now: false,
            ecn,
            ece_latched: false,
            ce_state: false,
            ts_recent: 0,
            msgs: VecDeque::new(),
            expected_end: 0,
        }
    }

    pub(crate) fn window_bytes(&self) -> u32 {
        self.window_bytes
    }

    /// The next `len_bytes` bytes of the stream (after those already expected) are message `msg`.
    pub(crate) fn expect_message(&mut self, msg: MsgId, len_bytes: u64, events: &mut VecDeque<AppEvent>) {
        self.expected_end += len_bytes;
        if len_bytes == 0 {
            events.push_back(AppEvent::MessageReceived { msg });
            return;
        }
        self.msgs.push_back((msg, self.expected_end));
        self.deliver_messages(events);
    }

    fn deliver_messages(&mut self, events: &mut VecDeque<AppEvent>) {
        while let Some(&(msg, end)) = self.msgs.front() {
            if end > self.rcv_nxt {
                break;
            }
            events.push_back(AppEvent::MessageReceived { msg });
            self.msgs.pop_front();
        }
    }

    /// ECE for the next ACK.
    pub(crate) fn ece(&self) -> bool {
        match self.ecn {
            EcnEcho::Off => false,
            EcnEcho::Classic => self.ece_latched,
            EcnEcho::Dctcp => self.ce_state,
        }
    }

    /// A data segment `[start, start + len)` arrived (`len > 0`).
    pub(crate) fn on_data(
        &mut self,
        now: Time,
        start: u64,
        len_bytes: u32,
        ce: bool,
        cwr: bool,
        events: &mut VecDeque<AppEvent>,
    ) -> SegmentOutcome {
        let mut out = SegmentOutcome::default();
        match self.ecn {
            EcnEcho::Off => {}
            EcnEcho::Classic => {
                // RFC 3168 Sec. 6.1.3: CWR stops the echo; a new CE starts it again.
                if cwr {
                    self.ece_latched = false;
                }
                if ce {
                    self.ece_latched = true;
                }
            }
            EcnEcho::Dctcp => {
                // RFC 8257 Sec. 3.2: on a CE-state change, acknowledge at once what arrived under the
                // old state (with the old ECE) so the sender sees marks byte-exactly.
                if ce != self.ce_state {
                    if self.unacked_bytes > 0 {
                        out.flush = Some(FlushAck {
                            ack: self.rcv_nxt,
                            ece: self.ce_state,
                        });
                        self.unacked_bytes = 0;
                        self.ack_deadline = None;
                    }
                    self.ce_state = ce;
                }
            }
        }

        let end = start + u64::from(len_bytes);
        self.stamp += 1;
        if end <= self.rcv_nxt {
            // RFC 5681 Sec. 4.2: a duplicate segment is acknowledged at once.
            out.duplicate = true;
            self.ack_now = true;
        } else if start > self.rcv_nxt {
            // RFC 5681 Sec. 4.2: an out-of-order segment is acknowledged at once (dupACK with SACK).
            out.out_of_order = true;
            self.insert_range(start, end);
            self.ack_now = true;
        } else {
            let had_holes = !self.ooo.is_empty();
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            // Pull in the ranges the new data now touches.
            let n = self.ooo.partition_point(|r| r.start <= self.rcv_nxt);
            if n > 0 {
                self.rcv_nxt = self.rcv_nxt.max(self.ooo[n - 1].end);
                self.ooo.drain(..n);
            }
            out.delivered_bytes = self.rcv_nxt - before;
            self.deliver_messages(events);
            if had_holes {
                // RFC 5681 Sec. 4.2: a segment that fills (part of) a hole is acknowledged at once.
                self.ack_now = true;
            } else {
                self.unacked_bytes += out.delivered_bytes;
                match self.delayed_ack {
                    // RFC 1122 Sec. 4.2.3.2 / RFC 5681 Sec. 4.2: ACK at least every second
                    // full-sized segment, and within the delay. As Linux (`__tcp_ack_snd_check`):
                    // ACK once more than one MSS is unacknowledged.
                    Some(delay) if self.unacked_bytes <= self.mss_bytes => {
                        if self.ack_deadline.is_none() {
                            self.ack_deadline = Some(now + delay);
                        }
                    }
                    _ => self.ack_now = true,
                }
            }
        }
        out
    }

    /// TCP-IR (Flach et al. Sec. 4.1): which bytes of the block `[start, end)` (segments of
    /// `seg_bytes` aligned at `start`) are missing, and whether one XOR rebuilds them.
    pub(crate) fn coded_hole(&self, start: u64, end: u64, seg_bytes: u32) -> CodedOutcome {
        let seg = u64::from(seg_bytes.max(1));
        // The segment slot of every missing byte range must be the same one.
        let mut slot: Option<u64> = None;
        let mut cursor = start.max(self.rcv_nxt);
        let mut check = |lo: u64, hi: u64| -> bool {
            let (a, b) = ((lo - start) / seg, (hi - 1 - start) / seg);
            if a != b || slot.is_some_and(|s| s != a) {
                return false;
            }
            slot = Some(a);
            true
        };
        for r in &self.ooo {
            if cursor >= end {
                break;
            }
            if r.end <= cursor {
                continue;
            }
            if r.start > cursor && !check(cursor, r.start.min(end)) {
                return CodedOutcome::Unrecoverable;
            }
            cursor = cursor.max(r.end);
        }
        if cursor < end && !check(cursor, end) {
            return CodedOutcome::Unrecoverable;
        }
        match slot {
            None => CodedOutcome::Complete,
            Some(i) => {
                let lo = start + i * seg;
                let hi = (lo + seg).min(end);
                CodedOutcome::Rebuild {
                    start: lo,
                    len_bytes: (hi - lo) as u32,
                }
            }
        }
    }

    /// Insert `[start, end)` (above `rcv_nxt`) into the sorted range set, merging neighbours.
    fn insert_range(&mut self, start: u64, end: u64) {
        let stamp = self.stamp;
        // First range that ends at or after `start` (could merge).
        let i = self.ooo.partition_point(|r| r.end < start);
        // Ranges [i, j) overlap or touch [start, end).
        let j = self.ooo.partition_point(|r| r.start <= end);
        if i == j {
            self.ooo.insert(i, Range { start, end, stamp });
            return;
        }
        let merged = Range {
            start: start.min(self.ooo[i].start),
            end: end.max(self.ooo[j - 1].end),
            stamp,
        };
        self.ooo[i] = merged;
        self.ooo.drain(i + 1..j);
    }

    /// RFC 2018 Sec. 4: the first block holds the most recently received segment, the rest are the
    /// most recently changed other blocks. Cost O(blocks * holes); holes are few.
    pub(crate) fn sack_blocks(&self, isn: Seq) -> SackBlocks {
        let mut out = SackBlocks::default();
        let mut last_taken = u64::MAX;
        for _ in 0..SackBlocks::MAX {
            let best = self
                .ooo
                .iter()
                .filter(|r| r.stamp < last_taken)
                .max_by_key(|r| r.stamp);
            match best {
                Some(r) => {
                    out.push(Seq::from_offset(isn, r.start), Seq::from_offset(isn, r.end));
                    last_taken = r.stamp;
                }
                None => break,
            }
        }
        out
    }

    /// Is an ACK due now (immediate ACK requested, or the delayed-ACK timer expired)?
    pub(crate) fn ack_due(&self, now: Time) -> bool {
        self.ack_now || self.ack_deadline.is_some_and(|d| d <= now)
    }

    /// An ACK (pure or piggybacked) carrying `rcv_nxt` went out.
    pub(crate) fn on_ack_sent(&mut self) {
        self.ack_now = false;
        self.unacked_bytes = 0;
        self.ack_deadline = None;
    }

    /// Ask for an immediate ACK (e.g. a duplicate SYN-ACK).
    pub(crate) fn request_ack(&mut self) {
        self.ack_now = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coded_hole_finds_one_missing_segment() {
        let mut ev = VecDeque::new();
        let mut r = Receiver::new(1 << 20, 10, None, EcnEcho::Off);
        for s in [0, 10, 30, 40] {
            r.on_data(Time(0), s, 10, false, false, &mut ev);
        }
        assert_eq!(
            r.coded_hole(0, 45, 10),
            CodedOutcome::Rebuild {
                start: 20,
                len_bytes: 10
            }
        );
        assert_eq!(r.coded_hole(0, 20, 10), CodedOutcome::Complete);
        // Two slots missing: [20, 30) and [50, 55).
        assert_eq!(r.coded_hole(0, 55, 10), CodedOutcome::Unrecoverable);
        // The missing tail of a block.
        assert_eq!(
            r.coded_hole(30, 55, 10),
            CodedOutcome::Rebuild {
                start: 50,
                len_bytes: 5
            }
        );
    }

    #[test]
    fn ranges_merge_and_sack_order() {
        let mut ev = VecDeque::new();
        let mut r = Receiver::new(1 << 20, 10, None, EcnEcho::Off);
        r.on_data(Time(0), 0, 10, false, false, &mut ev);
        r.on_data(Time(0), 20, 10, false, false, &mut ev);
        r.on_data(Time(0), 40, 10, false, false, &mut ev);
        r.on_data(Time(0), 30, 10, false, false, &mut ev);
        let isn = Seq(0);
        let b: Vec<_> = r.sack_blocks(isn).iter().collect();
        assert_eq!(b, vec![(Seq(21), Seq(51))]);
        r.on_data(Time(0), 60, 10, false, false, &mut ev);
        r.on_data(Time(0), 10, 10, false, false, &mut ev);
        assert_eq!(r.rcv_nxt, 50);
        let b: Vec<_> = r.sack_blocks(isn).iter().collect();
        assert_eq!(b, vec![(Seq(61), Seq(71))]);
    }
}
