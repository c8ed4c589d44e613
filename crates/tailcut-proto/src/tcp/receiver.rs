//! The receiving half of a TCP connection: reassembly bookkeeping, cumulative and selective
//! acknowledgement, delayed ACKs, ECN echo, and in-order message delivery. Payload bytes are kept
//! only when the driver carries them (`bytes.rs`); the bookkeeping never reads them.

use super::bytes::RecvBytes;
use crate::engine::{AppEvent, MsgId};
use crate::packet::{Ecn, Packet, SackBlocks, TcpFlags, TcpHeader};
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

impl FlushAck {
    /// Make `p`, a pure ACK of the connection whose peer's initial sequence number is `peer_isn`,
    /// this flush ACK.
    pub(crate) fn stamp(self, p: &mut Packet, peer_isn: Seq) {
        if let Some(ph) = p.tcp_mut() {
            ph.ack = Seq::from_offset(peer_isn, self.ack);
            if self.ece {
                ph.flags.insert(TcpFlags::ECE);
            } else {
                ph.flags.remove(TcpFlags::ECE);
            }
        }
    }
}

/// What one data segment did to the receive stream.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SegmentOutcome {
    pub(crate) flush: Option<FlushAck>,
    pub(crate) delivered_bytes: u64,
    pub(crate) duplicate: bool,
    pub(crate) out_of_order: bool,
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
    /// The payload bytes, when the driver carries them.
    bytes: Option<RecvBytes>,
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
            bytes: None,
        }
    }

    /// Keep payload bytes and hand each message's over (`take_bytes`); `history` in-order bytes
    /// stay for TCP-IR's rebuild of a lost segment.
    pub(crate) fn carry_bytes(&mut self, history: usize) {
        let mut b = RecvBytes::new(self.window_bytes);
        b.keep_history(history);
        self.bytes = Some(b);
    }

    pub(crate) fn carries_bytes(&self) -> bool {
        self.bytes.is_some()
    }

    /// Stores the payload of a data segment at stream offset `start` whose header says `len` bytes.
    /// False (the segment is to be dropped unseen) when the receiver carries bytes and the payload
    /// is not `len` bytes long or lies beyond its buffer; always true without bytes.
    pub(crate) fn accept_bytes(&mut self, start: u64, len: u32, payload: &[u8]) -> bool {
        let Some(b) = self.bytes.as_mut() else {
            return true;
        };
        if payload.len() != len as usize || !b.acceptable(start + u64::from(len), self.expected_end) {
            return false;
        }
        b.store(start, payload);
        true
    }

    /// The bytes of received message `msg`, once.
    pub(crate) fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        self.bytes.as_mut()?.take(msg)
    }

    /// The receiver's bytes, when it carries them.
    pub(crate) fn bytes(&self) -> Option<&RecvBytes> {
        self.bytes.as_ref()
    }

    pub(crate) fn window_bytes(&self) -> u32 {
        self.window_bytes
    }

    /// The next `len_bytes` bytes of the stream (after those already expected) are message `msg`.
    pub(crate) fn expect_message(&mut self, msg: MsgId, len_bytes: u64, events: &mut VecDeque<AppEvent>) {
        self.expected_end += len_bytes;
        if len_bytes == 0 {
            if let Some(b) = self.bytes.as_mut() {
                b.finish_empty(msg);
            }
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
            if let Some(b) = self.bytes.as_mut() {
                b.finish(msg, end);
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
            if let Some(b) = self.bytes.as_mut() {
                b.advance(self.rcv_nxt);
            }
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

    /// The stream offset of segment `h` from a peer with initial sequence number `peer_isn`, if it is
    /// near the window. RFC 7323 Sec. 4.3: remember the timestamp of a segment that leaves no hole.
    pub(crate) fn arrival(&mut self, h: &TcpHeader, peer_isn: Seq) -> Option<u64> {
        let start = h.seq.unwrap_near(peer_isn, self.rcv_nxt)?;
        if start <= self.rcv_nxt {
            self.ts_recent = h.ts_val;
        }
        Some(start)
    }

    /// Data segment `pkt` (header `h`) arrived at stream offset `start`.
    pub(crate) fn on_segment(
        &mut self,
        now: Time,
        start: u64,
        pkt: &Packet,
        h: &TcpHeader,
        events: &mut VecDeque<AppEvent>,
    ) -> SegmentOutcome {
        let ce = pkt.ecn == Ecn::Ce;
        let cwr = h.flags.contains(TcpFlags::CWR);
        self.on_data(now, start, pkt.payload_len(), ce, cwr, events)
    }

    /// The byte ranges of `[start, end)` not received yet, in order.
    pub(crate) fn holes(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut cursor = start.max(self.rcv_nxt);
        let mut ranges = self.ooo.iter();
        std::iter::from_fn(move || {
            while cursor < end {
                let Some(r) = ranges.next() else {
                    let hole = (cursor, end);
                    cursor = end;
                    return Some(hole);
                };
                if r.end <= cursor {
                    continue;
                }
                let hole = (r.start > cursor).then(|| (cursor, r.start.min(end)));
                cursor = cursor.max(r.end);
                if hole.is_some() {
                    return hole;
                }
            }
            None
        })
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
    /// Most segments go out with nothing out of order to report: that test is inlined into every
    /// segment's header (the call alone cost 5 instructions per packet-hop on benchmark (a)).
    #[inline(always)]
    pub(crate) fn sack_blocks(&self, isn: Seq) -> SackBlocks {
        if self.ooo.is_empty() {
            return SackBlocks::default();
        }
        self.sack_blocks_of_holes(isn)
    }

    #[inline(never)]
    fn sack_blocks_of_holes(&self, isn: Seq) -> SackBlocks {
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
