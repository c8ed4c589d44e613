//! The sender's record of every segment in flight and the SACK scoreboard (RFC 6675 Sec. 2-4).
//!
//! One [`SegRecord`] per transmitted segment, in stream order, from `snd_una` to `snd_nxt`.
//! Retransmissions reuse the original segment boundaries, so a segment is acknowledged, SACKed or lost
//! as a whole. Byte counters (SACKed, lost, retransmitted-in-flight) are kept incrementally so that
//! `pipe` (RFC 6675 Sec. 4) is O(1). Loss marking walks forward from a frontier that only advances,
//! so it costs amortised O(1) per segment. Applying a SACK block visits the segments it covers, which
//! only happens while the receiver reports holes (i.e. around a loss), and is bounded by the window.

use super::rack::Delivery;
use crate::time::Time;
use std::collections::VecDeque;

/// One transmitted segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegRecord {
    /// Stream offset of the first payload byte.
    pub(crate) start: u64,
    pub(crate) len_bytes: u32,
    /// Time of the latest (re)transmission.
    pub(crate) sent_at: Time,
    pub(crate) sacked: bool,
    /// Presumed lost (RFC 6675 IsLost, a timeout, or an explicit request).
    pub(crate) lost: bool,
    /// Retransmitted since it was last presumed lost; counts in `pipe` again (RFC 6675 Sec. 4,
    /// "S1 <= HighRxt").
    pub(crate) rtx_in_flight: bool,
    /// Ever retransmitted: Karn's algorithm takes no RTT sample from it (RFC 6298 Sec. 3).
    pub(crate) retransmitted: bool,
    /// Free for schemes built on TCP (e.g. an MPTCP data sequence number or a path id); plain TCP
    /// leaves it 0.
    pub(crate) tag: u64,
}

impl SegRecord {
    pub(crate) fn end(&self) -> u64 {
        self.start + u64::from(self.len_bytes)
    }
}

/// What a cumulative ACK removed from the scoreboard.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckedSegments {
    /// Latest (re)transmission time among the fully acknowledged segments: what the timestamp echo
    /// of the ACK carries (the receiver echoes the segment that advanced its cumulative ACK, RFC
    /// 7323 Sec. 4.3), so the RTT sample Linux takes from it.
    pub(crate) newest_sent_at: Option<Time>,
    /// Some acknowledged segment was retransmitted: its sequence-based RTT is ambiguous (Karn).
    pub(crate) any_retransmitted: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<SegRecord>,
    sacked_bytes: u64,
    /// Bytes presumed lost and not SACKed.
    lost_bytes: u64,
    /// Bytes retransmitted since presumed lost and not SACKed.
    rtx_bytes: u64,
    /// Every unSACKed segment ending at or below this offset is marked lost; it only advances.
    lost_frontier: u64,
    /// SACKed bytes of the segments ending at or below `lost_frontier`.
    sacked_below_frontier: u64,
    /// Lowest offset that may hold a lost segment not yet retransmitted.
    rtx_cursor: u64,
    /// What the ACK being processed delivered, for RACK (`rack.rs`).
    pub(crate) delivery: Delivery,
}

impl Scoreboard {
    pub(crate) fn len(&self) -> usize {
        self.segs.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Gives back the capacity beyond the segments still held.
    pub(crate) fn shrink(&mut self) {
        self.segs.shrink_to_fit();
    }

    pub(crate) fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// Bytes retransmitted and still in flight (Linux `retrans_out`, in bytes).
    pub(crate) fn rtx_bytes(&self) -> u64 {
        self.rtx_bytes
    }

    pub(crate) fn seg(&self, idx: usize) -> &SegRecord {
        &self.segs[idx]
    }

    /// Set the scheme-owned tag of segment `idx` (e.g. an MPTCP data sequence number).
    pub(crate) fn set_tag(&mut self, idx: usize, tag: u64) {
        self.segs[idx].tag = tag;
    }

    /// The segments from `snd_una` up, in stream order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &SegRecord> + '_ {
        self.segs.iter()
    }

    /// RFC 6675 Sec. 4 SetPipe, kept incrementally: outstanding bytes, minus SACKed, minus presumed
    /// lost, plus retransmissions still in flight.
    pub(crate) fn pipe_bytes(&self, outstanding_bytes: u64) -> u64 {
        (outstanding_bytes + self.rtx_bytes).saturating_sub(self.sacked_bytes + self.lost_bytes)
    }

    pub(crate) fn push(&mut self, start: u64, len_bytes: u32, now: Time, tag: u64) {
        debug_assert!(self.segs.back().is_none_or(|s| s.end() == start));
        self.segs.push_back(SegRecord {
            start,
            len_bytes,
            sent_at: now,
            sacked: false,
            lost: false,
            rtx_in_flight: false,
            retransmitted: false,
            tag,
        });
    }

    /// Index of the segment holding stream offset `offset`.
    pub(crate) fn find(&self, offset: u64) -> Option<usize> {
        let idx = self.segs.partition_point(|s| s.end() <= offset);
        (idx < self.segs.len() && self.segs[idx].start <= offset).then_some(idx)
    }

    fn uncount(&mut self, idx: usize) {
        let s = self.segs[idx];
        let n = u64::from(s.len_bytes);
        if s.sacked {
            self.sacked_bytes -= n;
        } else {
            if s.lost {
                self.lost_bytes -= n;
            }
            if s.rtx_in_flight {
                self.rtx_bytes -= n;
            }
        }
    }

    fn count(&mut self, idx: usize) {
        let s = self.segs[idx];
        let n = u64::from(s.len_bytes);
        if s.sacked {
            self.sacked_bytes += n;
        } else {
            if s.lost {
                self.lost_bytes += n;
            }
            if s.rtx_in_flight {
                self.rtx_bytes += n;
            }
        }
    }

    /// Remove everything below the cumulative ACK `una`. Amortised O(1) per segment.
    pub(crate) fn ack_to(&mut self, una: u64) -> AckedSegments {
        let mut out = AckedSegments::default();
        while let Some(front) = self.segs.front().copied() {
            if front.sacked && front.end() <= self.lost_frontier {
                self.sacked_below_frontier -= u64::from(front.len_bytes);
            }
            if front.end() <= una {
                self.uncount(0);
                self.segs.pop_front();
                if !front.sacked {
                    self.delivery
                        .on_delivered(front.sent_at, front.end(), front.retransmitted);
                }
                out.any_retransmitted |= front.retransmitted;
                if out.newest_sent_at.is_none_or(|t| front.sent_at > t) {
                    out.newest_sent_at = Some(front.sent_at);
                }
            } else {
                if front.start < una {
                    // A partial acknowledgement of one segment (the peer re-segmented): keep the rest.
                    self.uncount(0);
                    let f = &mut self.segs[0];
                    f.len_bytes = (f.end() - una) as u32;
                    f.start = una;
                    self.count(0);
                }
                let f = self.segs[0];
                if f.sacked && f.end() <= self.lost_frontier {
                    self.sacked_below_frontier += u64::from(f.len_bytes);
                }
                break;
            }
        }
        if una > self.lost_frontier {
            self.lost_frontier = una;
            self.sacked_below_frontier = 0;
        }
        self.rtx_cursor = self.rtx_cursor.max(una);
        out
    }

    /// RFC 6675 Sec. 4 Update(): mark every segment wholly inside the SACK block `[left, right)`.
    /// Cost is the number of segments in the block (only while the receiver reports holes).
    pub(crate) fn sack(&mut self, left: u64, right: u64) -> u64 {
        let mut newly = 0;
        let mut idx = self.segs.partition_point(|s| s.end() <= left);
        while idx < self.segs.len() && self.segs[idx].start < right {
            let s = self.segs[idx];
            if !s.sacked && s.start >= left && s.end() <= right {
                self.uncount(idx);
                self.segs[idx].sacked = true;
                self.count(idx);
                self.delivery.on_delivered(s.sent_at, s.end(), s.retransmitted);
                newly += u64::from(s.len_bytes);
                if s.end() <= self.lost_frontier {
                    self.sacked_below_frontier += u64::from(s.len_bytes);
                }
            }
            idx += 1;
        }
        newly
    }

    /// Whether the oldest outstanding segment is SACKed. Right after a cumulative ACK this is evidence
    /// of reneging (RFC 2018 Sec. 8): an honest receiver's cumulative ACK covers every byte it holds
    /// contiguously, so it can stop at a SACKed segment only if that data was discarded, or was
    /// never there (a middlebox's SACK block, e.g. a T-RACKs fake block, claimed it).
    pub(crate) fn head_sacked(&self) -> bool {
        self.segs.front().is_some_and(|s| s.sacked)
    }

    /// A timeout with reneging suspected (RFC 2018 Sec. 8: "after a retransmit timeout the data
    /// sender SHOULD turn off all of the SACKed bits"; Linux `tcp_timeout_mark_lost` does so when the
    /// head is SACKed): forget every SACK mark, then presume everything lost as `mark_all_lost`.
    pub(crate) fn mark_all_lost_forgetting_sacks(&mut self) {
        for i in 0..self.segs.len() {
            if self.segs[i].sacked {
                self.uncount(i);
                self.segs[i].sacked = false;
                self.count(i);
            }
        }
        self.mark_all_lost();
    }

    /// CP: a PACK reported the latest transmission of segment `idx` cut. It is lost and, if it was a
    /// retransmission, no longer in flight (it leaves `pipe`).
    pub(crate) fn mark_cut(&mut self, idx: usize) {
        let s = self.segs[idx];
        if s.sacked {
            return;
        }
        self.uncount(idx);
        self.segs[idx].lost = true;
        self.segs[idx].rtx_in_flight = false;
        self.count(idx);
        self.rtx_cursor = self.rtx_cursor.min(s.start);
    }

    /// RACK (RFC 8985 Sec. 6.2 step 5): segment `idx` is lost, and if it was a retransmission in
    /// flight, that retransmission is lost too and leaves `pipe`. True if anything changed.
    pub(crate) fn mark_lost_again(&mut self, idx: usize) -> bool {
        let s = self.segs[idx];
        if s.sacked || (s.lost && !s.rtx_in_flight) {
            return false;
        }
        self.uncount(idx);
        self.segs[idx].lost = true;
        self.segs[idx].rtx_in_flight = false;
        self.count(idx);
        self.rtx_cursor = self.rtx_cursor.min(s.start);
        true
    }

    fn mark_lost_idx(&mut self, idx: usize) -> bool {
        let s = self.segs[idx];
        if s.sacked || s.lost {
            return false;
        }
        self.uncount(idx);
        self.segs[idx].lost = true;
        self.count(idx);
        self.rtx_cursor = self.rtx_cursor.min(s.start);
        true
    }

    /// RFC 6675 Sec. 4 IsLost(): a segment is lost when more than `threshold_bytes`
    /// (`(DupThresh - 1) * SMSS`) above it are SACKed. SACKed bytes above a segment are the total
    /// minus those below it, so one forward walk from the frontier marks every lost segment; the
    /// frontier moves past SACKed and newly lost segments and never back.
    pub(crate) fn mark_lost_by_sack(&mut self, threshold_bytes: u64) -> bool {
        let mut any = false;
        let mut idx = self.segs.partition_point(|s| s.end() <= self.lost_frontier);
        while idx < self.segs.len() {
            let s = self.segs[idx];
            if s.sacked {
                self.sacked_below_frontier += u64::from(s.len_bytes);
            } else if self.sacked_bytes - self.sacked_below_frontier > threshold_bytes {
                any |= self.mark_lost_idx(idx);
            } else {
                break;
            }
            self.lost_frontier = s.end();
            idx += 1;
        }
        any
    }

    /// Presume lost every unSACKed segment that ends at or below `end` (a probe or coded packet sent
    /// after them arrived first). Moves the frontier as `mark_lost_by_sack` does.
    pub(crate) fn mark_lost_up_to(&mut self, end: u64) -> bool {
        let mut any = false;
        let mut idx = self.segs.partition_point(|s| s.end() <= self.lost_frontier);
        while idx < self.segs.len() && self.segs[idx].end() <= end {
            let s = self.segs[idx];
            if s.sacked {
                self.sacked_below_frontier += u64::from(s.len_bytes);
            } else {
                any |= self.mark_lost_idx(idx);
            }
            self.lost_frontier = s.end();
            idx += 1;
        }
        any
    }

    /// RFC 6675 Sec. 5.1: after a timeout every unSACKed segment is presumed lost, including
    /// retransmissions in flight, so recovery goes back to `snd_una`.
    pub(crate) fn mark_all_lost(&mut self) {
        for i in 0..self.segs.len() {
            self.uncount(i);
            let s = &mut self.segs[i];
            if !s.sacked {
                s.lost = true;
                s.rtx_in_flight = false;
            }
            self.count(i);
        }
        if let Some(back) = self.segs.back() {
            self.lost_frontier = back.end();
            self.sacked_below_frontier = self.sacked_bytes;
        }
        if let Some(front) = self.segs.front() {
            self.rtx_cursor = front.start;
        }
    }

    /// Linux `tcp_undo_cwnd_reduction(sk, true)`: a timeout proved spurious, so the segments it
    /// presumed lost are not. Retransmissions still in flight stay marked (this board counts such a
    /// segment once in `pipe`; Linux counts the original and its retransmission). The frontier
    /// goes back to `snd_una`, so the next SACK-based marking walks the window once more.
    pub(crate) fn unmark_lost(&mut self) {
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if s.lost && !s.sacked && !s.rtx_in_flight {
                self.uncount(i);
                self.segs[i].lost = false;
                self.count(i);
            }
        }
        if let Some(front) = self.segs.front() {
            self.lost_frontier = front.start;
            self.rtx_cursor = front.start;
        }
        self.sacked_below_frontier = 0;
    }

    /// RFC 6675 Sec. 4 NextSeg() rule (1): the first segment presumed lost and not yet retransmitted.
    pub(crate) fn next_lost(&mut self) -> Option<usize> {
        let mut idx = self.segs.partition_point(|s| s.end() <= self.rtx_cursor);
        while idx < self.segs.len() {
            let s = self.segs[idx];
            if s.lost && !s.sacked && !s.rtx_in_flight {
                self.rtx_cursor = s.start;
                return Some(idx);
            }
            if !s.lost && !s.sacked {
                self.rtx_cursor = s.start;
                return None;
            }
            idx += 1;
        }
        self.rtx_cursor = self.segs.back().map_or(self.rtx_cursor, |s| s.end());
        None
    }

    /// Record a retransmission of segment `idx` at `now`.
    pub(crate) fn on_retransmit(&mut self, idx: usize, now: Time) {
        self.uncount(idx);
        let s = &mut self.segs[idx];
        s.lost = true;
        s.rtx_in_flight = true;
        s.retransmitted = true;
        s.sent_at = now;
        self.count(idx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(i * 100, 100, Time(i), 0);
        }
        b
    }

    #[test]
    fn sack_marks_holes_lost_and_pipe_follows() {
        let mut b = board(6);
        assert_eq!(b.pipe_bytes(600), 600);
        b.sack(200, 500);
        assert_eq!(b.sacked_bytes(), 300);
        assert!(b.mark_lost_by_sack(200));
        // Segments 0 and 1 are lost; 5 is unknown.
        assert_eq!(b.pipe_bytes(600), 100);
        assert_eq!(b.next_lost(), Some(0));
        b.on_retransmit(0, Time(9));
        assert_eq!(b.next_lost(), Some(1));
        assert_eq!(b.pipe_bytes(600), 200);
        b.ack_to(100);
        assert_eq!(b.pipe_bytes(500), 100);
    }

    #[test]
    fn shrinking_gives_back_capacity_and_keeps_what_is_held() {
        let mut b = board(200);
        b.ack_to(19_800);
        b.shrink();
        assert_eq!(b.len(), 2);
        assert!(b.segs.capacity() < 200);
        assert_eq!(b.seg(0).start, 19_800);
        b.ack_to(20_000);
        b.shrink();
        assert_eq!(b.segs.capacity(), 0);
        // It grows again when sending resumes.
        b.push(20_000, 100, Time(300), 0);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn timeout_marks_everything_unsacked() {
        let mut b = board(4);
        b.sack(200, 300);
        b.mark_all_lost();
        assert_eq!(b.pipe_bytes(400), 0);
        assert_eq!(b.next_lost(), Some(0));
    }

    #[test]
    fn forgetting_sacks_after_reneging_lets_a_timeout_resend_everything() {
        // Segments 1-3 SACKed, then a cumulative ACK of segment 0 stops at SACKed segment 1.
        let mut b = board(4);
        b.sack(100, 400);
        b.ack_to(100);
        assert!(b.head_sacked());
        b.mark_all_lost();
        // Without forgetting, the SACKed segments would never be sent again.
        assert_eq!(b.next_lost(), None);
        b.mark_all_lost_forgetting_sacks();
        assert_eq!(b.sacked_bytes(), 0);
        assert_eq!(b.pipe_bytes(300), 0);
        assert_eq!(b.next_lost(), Some(0));
        assert_eq!(b.seg(0).start, 100);
        check(&b);
    }

    /// Recompute every incremental counter from the records and check the invariants.
    fn check(b: &Scoreboard) {
        let (mut sacked, mut lost, mut rtx, mut below) = (0, 0, 0, 0);
        for s in &b.segs {
            let n = u64::from(s.len_bytes);
            assert!(!s.rtx_in_flight || s.lost || s.sacked, "{s:?}");
            if s.sacked {
                sacked += n;
                if s.end() <= b.lost_frontier {
                    below += n;
                }
            } else {
                lost += if s.lost { n } else { 0 };
                rtx += if s.rtx_in_flight { n } else { 0 };
                assert!(
                    s.end() > b.lost_frontier || s.lost,
                    "unsacked below frontier: {s:?}"
                );
            }
        }
        assert_eq!(
            (b.sacked_bytes, b.lost_bytes, b.rtx_bytes, b.sacked_below_frontier),
            (sacked, lost, rtx, below)
        );
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push(u32),
        Sack(u8, u8),
        Ack(u8),
        MarkLost(u8),
        Timeout,
        Retransmit,
        Renege,
        Unmark,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u32..200).prop_map(Op::Push),
            4 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Op::Sack(a, b)),
            2 => any::<u8>().prop_map(Op::Ack),
            2 => (0u8..4).prop_map(Op::MarkLost),
            1 => Just(Op::Timeout),
            3 => Just(Op::Retransmit),
            1 => Just(Op::Renege),
            1 => Just(Op::Unmark),
        ]
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn counters_match_a_recount(ops in prop::collection::vec(op(), 1..80)) {
            let mut b = Scoreboard::default();
            let (mut una, mut nxt) = (0u64, 0u64);
            for (i, o) in ops.into_iter().enumerate() {
                let now = Time(i as u64);
                match o {
                    Op::Push(n) => {
                        b.push(nxt, n, now, 0);
                        nxt += u64::from(n);
                    }
                    Op::Sack(x, y) => {
                        let span = nxt - una + 1;
                        let l = una + u64::from(x) * span / 256;
                        let r = (l + u64::from(y) * span / 128).min(nxt);
                        if l < r {
                            b.sack(l, r);
                        }
                    }
                    Op::Ack(x) => {
                        una += u64::from(x) * (nxt - una) / 255;
                        b.ack_to(una);
                    }
                    Op::MarkLost(dt) => {
                        let t = u64::from(dt) * 100;
                        b.mark_lost_by_sack(t);
                        // IsLost holds for every unSACKed segment with more than t SACKed above.
                        let mut above = 0;
                        for s in b.segs.iter().rev() {
                            if s.sacked {
                                above += u64::from(s.len_bytes);
                            } else if above > t {
                                prop_assert!(s.lost, "{s:?} has {above} SACKed above");
                            }
                        }
                    }
                    Op::Timeout => b.mark_all_lost(),
                    Op::Unmark => {
                        b.unmark_lost();
                        // Only retransmissions in flight stay presumed lost.
                        prop_assert!(b.segs.iter().all(|s| !s.lost || s.sacked || s.rtx_in_flight));
                    }
                    Op::Renege => {
                        b.mark_all_lost_forgetting_sacks();
                        prop_assert_eq!(b.sacked_bytes(), 0);
                        prop_assert_eq!(b.pipe_bytes(nxt - una), 0);
                    }
                    Op::Retransmit => {
                        match b.next_lost() {
                            Some(idx) => b.on_retransmit(idx, now),
                            None => prop_assert!(
                                b.segs.iter().all(|s| !s.lost || s.sacked || s.rtx_in_flight),
                                "a lost segment was skipped"
                            ),
                        }
                    }
                }
                check(&b);
                prop_assert!(b.pipe_bytes(nxt - una) <= nxt - una);
            }
        }
    }
}
