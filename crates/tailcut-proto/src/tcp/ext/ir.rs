//! TCP-IR (Flach et al., "Reducing Web Latency: the Virtue of Gentle Aggression", SIGCOMM'13,
//! Sec. 4.1). Sender: new data segments are grouped into blocks, one per time bin of half an RTT (at
//! most `max_block_segments` segments); one XOR-coded packet per block goes out a quarter RTT after
//! its bin closes. Receiver: a coded packet rebuilds the single missing segment of its block, or, if
//! more are missing, is answered by an ACK telling the sender the block did not arrive whole, which
//! starts fast recovery there (the coded packet acts as a loss probe). Transport `tcp_ir`.
//!
//! Blocks hold contiguous full-sized segments only: a short segment (the stream ran dry) closes its
//! block, so segment boundaries inside a block are `start + i * seg_bytes`.

use super::Extension;
use crate::packet::{Ecn, Packet, TcpExt, TcpFlags, TcpHeader};
use crate::seq::Seq;
use crate::tcp::cc::CongestionControl;
use crate::tcp::config::TcpIrConfig;
use crate::tcp::endpoint::Conn;
use crate::tcp::receiver::Receiver;
use crate::tcp::sender::{Sender, Transmission};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// The stream range one coded packet covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CodedBlock {
    start: u64,
    end: u64,
    seg_bytes: u32,
    segments: u32,
    /// When the bin closes to new segments.
    bin_end: Time,
    /// When the coded packet is due.
    due: Time,
    closed: bool,
}

/// What a coded packet can do for the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CodedOutcome {
    /// Every byte of the block is already here.
    Complete,
    /// Exactly one segment of the block is missing: the XOR rebuilds `[start, start + len)`.
    Rebuild { start: u64, len_bytes: u32 },
    /// More than one segment is missing.
    Unrecoverable,
}

#[derive(Debug)]
pub(crate) struct TcpIr {
    cfg: TcpIrConfig,
    blocks: VecDeque<CodedBlock>,
    /// The rebuilt segment's bytes, when the connection carries bytes (reused).
    rebuilt: Vec<u8>,
}

impl TcpIr {
    pub(super) fn new(cfg: TcpIrConfig) -> Self {
        TcpIr {
            cfg,
            blocks: VecDeque::new(),
            rebuilt: Vec::new(),
        }
    }

    /// A new data segment `[start, start + len)` went out at `now`; `rtt` is the sender's SRTT
    /// (coding starts with the first RTT sample).
    fn on_new_segment(&mut self, now: Time, start: u64, len: u32, mss: u32, rtt: Option<Dur>) {
        let Some(rtt) = rtt else { return };
        let max = self.cfg.max_block_segments.max(1);
        if let Some(b) = self.blocks.back_mut() {
            if !b.closed && now < b.bin_end && b.end == start && b.segments < max {
                b.end += u64::from(len);
                b.segments += 1;
                b.closed = len < mss || b.segments >= max;
                return;
            }
            b.closed = true;
        }
        // Sec. 4.1: bins of RTT/2; the coded packet follows RTT/4 after the bin.
        let bin_end = now + Dur(rtt.0 / 2);
        self.blocks.push_back(CodedBlock {
            start,
            end: start + u64::from(len),
            seg_bytes: mss,
            segments: 1,
            bin_end,
            due: bin_end + Dur(rtt.0 / 4),
            closed: len < mss || max == 1,
        });
    }

    /// The next coded packet due at `now` whose block is not wholly acknowledged (`snd_una`); blocks
    /// acknowledged meanwhile are skipped (their coded packet would repair nothing).
    fn pop_due(&mut self, now: Time, snd_una: u64) -> Option<CodedBlock> {
        while let Some(b) = self.blocks.front() {
            if b.due > now {
                return None;
            }
            let b = self.blocks.pop_front().expect("front");
            if b.end > snd_una {
                return Some(b);
            }
        }
        None
    }

    /// Sec. 4.1: the coded packet of `b`. Its payload is one segment of XORed bytes, charged as
    /// redundant to the message owning the block's first unacknowledged byte, which also tags it.
    fn coded_packet(c: &mut Conn, now: Time, b: CodedBlock) -> (Packet, u64) {
        let seq = Seq::from_offset(c.isn, c.sender.snd_nxt);
        let mut p = c.packet(now, seq, TcpFlags::empty(), b.seg_bytes, c.data_ecn());
        if let Some(h) = p.tcp_mut() {
            h.ext = TcpExt::XorCoded {
                start: Seq::from_offset(c.isn, b.start),
                len_bytes: (b.end - b.start) as u32,
                seg_bytes: b.seg_bytes,
            };
        }
        let first = b.start.max(c.sender.snd_una);
        c.sender.ledger.charge_redundant_at(first, u64::from(b.seg_bytes));
        let st = &mut c.sender.stats;
        st.coded_packets_sent += 1;
        st.data_segments_sent += 1;
        st.payload_bytes_sent += u64::from(b.seg_bytes);
        (p, first)
    }

    /// The receiver's side: rebuild the single missing segment of the block, or, if more are
    /// missing, answer at once with an ACK that tells the sender the block did not arrive whole. A
    /// block that arrived whole is acknowledged at once too.
    fn on_coded(&mut self, c: &mut Conn, now: Time, pkt: &Packet, coded: Coded<'_>) {
        let Coded {
            start,
            len_bytes,
            seg_bytes,
            payload,
        } = coded;
        let Some(start) = start.unwrap_near(c.peer_isn, c.receiver.rcv_nxt) else {
            return;
        };
        let end = start + u64::from(len_bytes);
        match coded_hole(&c.receiver, start, end, seg_bytes) {
            // Acknowledged like any arriving segment: if the ACKs of the block were lost, this one
            // spares the sender a timeout.
            CodedOutcome::Complete => c.receiver.request_ack(),
            CodedOutcome::Rebuild {
                start: lo,
                len_bytes: n,
            } => {
                if c.receiver.carries_bytes() && !self.rebuild_bytes(c, start, end, seg_bytes, lo, n, payload)
                {
                    return;
                }
                let (start, len_bytes) = (lo, n);
                c.sender.stats.coded_recoveries += 1;
                let out = c
                    .receiver
                    .on_data(now, start, len_bytes, pkt.ecn == Ecn::Ce, false, &mut c.events);
                c.after_data(now, out);
                c.receiver.request_ack();
            }
            CodedOutcome::Unrecoverable => {
                let mut p = c.pure_ack(now);
                if let Some(h) = p.tcp_mut() {
                    h.ext = TcpExt::CodedAck {
                        end: Seq::from_offset(c.peer_isn, end),
                    };
                }
                c.control.push_back(p);
            }
        }
    }
}

/// A coded packet as it arrived.
struct Coded<'a> {
    start: Seq,
    len_bytes: u32,
    seg_bytes: u32,
    payload: &'a [u8],
}

impl TcpIr {
    /// With bytes: the missing segment `[lo, lo + n)` of block `[start, end)` is the coded payload
    /// XOR every other segment of the block, some in order already (the receiver's history), some
    /// above its cumulative ACK. Stores it; false if the coded packet cannot rebuild it (a payload
    /// whose length is not the segment size, or a block longer than the history kept).
    #[allow(clippy::too_many_arguments)]
    fn rebuild_bytes(
        &mut self,
        c: &mut Conn,
        start: u64,
        end: u64,
        seg_bytes: u32,
        lo: u64,
        n: u32,
        payload: &[u8],
    ) -> bool {
        let Some(bytes) = c.receiver.bytes() else {
            return false;
        };
        let seg = u64::from(seg_bytes.max(1));
        let history = self.cfg.max_block_segments as u64 * seg;
        if seg_bytes == 0 || payload.len() != seg_bytes as usize || n > seg_bytes || end - start > history {
            return false;
        }
        self.rebuilt.clear();
        self.rebuilt.extend_from_slice(&payload[..seg_bytes as usize]);
        let mut at = start;
        while at < end {
            let k = (end - at).min(seg) as usize;
            if at != lo {
                bytes.xor_into(at, &mut self.rebuilt[..k]);
            }
            at += seg;
        }
        let rebuilt = &self.rebuilt[..n as usize];
        c.receiver.accept_bytes(lo, n, rebuilt)
    }
}

/// Which bytes of the block `[start, end)` (segments of `seg_bytes` aligned at `start`) are missing at
/// receiver `r`, and whether one XOR rebuilds them.
fn coded_hole(r: &Receiver, start: u64, end: u64, seg_bytes: u32) -> CodedOutcome {
    let seg = u64::from(seg_bytes.max(1));
    // The segment slot of every missing byte range must be the same one.
    let mut slot: Option<u64> = None;
    for (lo, hi) in r.holes(start, end) {
        let (a, b) = ((lo - start) / seg, (hi - 1 - start) / seg);
        if a != b || slot.is_some_and(|s| s != a) {
            return CodedOutcome::Unrecoverable;
        }
        slot = Some(a);
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

impl Extension for TcpIr {
    fn deadline<C: CongestionControl>(&self, _s: &Sender<C>) -> Option<Time> {
        self.blocks.front().map(|b| b.due)
    }

    /// A wholly acknowledged block still waiting for its due time will never be coded (`pop_due`
    /// skips it), so it holds nothing: the last ACK of a stream may arrive before that time.
    fn hold_from(&self, snd_una: u64) -> Option<u64> {
        self.blocks.iter().find(|b| b.end > snd_una).map(|b| b.start)
    }

    /// Blocks not yet coded are abandoned (go-back-N retransmits them anyway).
    fn on_rto(&mut self, _consecutive: u32) -> bool {
        self.blocks.clear();
        false
    }

    fn on_data_packet(&mut self, c: &mut Conn, now: Time, tx: &Transmission, _p: &mut Packet) {
        if !tx.retransmit {
            let srtt = c.sender.rtt.srtt();
            self.on_new_segment(now, tx.start, tx.len_bytes, c.cfg.mss_bytes, srtt);
        }
    }

    fn poll_transmit(&mut self, c: &mut Conn, now: Time) -> Option<(Packet, Option<u64>)> {
        let b = self.pop_due(now, c.sender.snd_una)?;
        let (p, first) = Self::coded_packet(c, now, b);
        c.receiver.on_ack_sent();
        Some((p, Some(first)))
    }

    fn on_segment(&mut self, c: &mut Conn, now: Time, pkt: &Packet, h: &TcpHeader, payload: &[u8]) -> bool {
        match h.ext {
            TcpExt::XorCoded {
                start,
                len_bytes,
                seg_bytes,
            } => {
                let coded = Coded {
                    start,
                    len_bytes,
                    seg_bytes,
                    payload,
                };
                self.on_coded(c, now, pkt, coded);
                true
            }
            TcpExt::CodedAck { end } => {
                if let Some(end) = end.unwrap_near(c.isn, c.sender.snd_una) {
                    c.sender.enter_fast_recovery_up_to(end);
                }
                false
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::receiver::EcnEcho;

    #[test]
    fn blocks_follow_half_rtt_bins_and_the_size_cap() {
        let rtt = Some(Dur::from_micros(100));
        let mut e = TcpIr::new(TcpIrConfig {
            max_block_segments: 3,
        });
        for i in 0..4 {
            e.on_new_segment(Time(i * 1_000), i * 10, 10, 10, rtt);
        }
        // A new bin after 50 us.
        e.on_new_segment(Time(60_000), 40, 10, 10, rtt);
        assert_eq!(e.blocks.front().map(|b| b.due), Some(Time(75_000)));
        assert_eq!(e.pop_due(Time(74_999), 0), None);
        let b = e.pop_due(Time(75_000), 0).expect("first block");
        assert_eq!((b.start, b.end), (0, 30));
        let b = e.pop_due(Time(200_000), 0).expect("second block");
        assert_eq!((b.start, b.end), (30, 40));
        let b = e.pop_due(Time(200_000), 0).expect("third block");
        assert_eq!((b.start, b.end, b.due), (40, 50, Time(60_000 + 75_000)));
    }

    #[test]
    fn an_acknowledged_block_not_yet_due_holds_no_bytes() {
        let rtt = Some(Dur::from_micros(100));
        let mut e = TcpIr::new(TcpIrConfig {
            max_block_segments: 2,
        });
        for i in 0..3 {
            e.on_new_segment(Time(i * 1_000), i * 10, 10, 10, rtt);
        }
        // Blocks [0, 20) and [20, 30), neither due before 75 us.
        assert_eq!(e.hold_from(0), Some(0));
        assert_eq!(e.hold_from(15), Some(0));
        assert_eq!(e.hold_from(20), Some(20));
        // Everything acknowledged before any block is due: nothing is held.
        assert_eq!(e.hold_from(30), None);
    }

    #[test]
    fn coded_hole_finds_one_missing_segment() {
        let mut ev = VecDeque::new();
        let mut r = Receiver::new(1 << 20, 10, None, EcnEcho::Off);
        for s in [0, 10, 30, 40] {
            r.on_data(Time(0), s, 10, false, false, &mut ev);
        }
        assert_eq!(
            coded_hole(&r, 0, 45, 10),
            CodedOutcome::Rebuild {
                start: 20,
                len_bytes: 10
            }
        );
        assert_eq!(coded_hole(&r, 0, 20, 10), CodedOutcome::Complete);
        // Two slots missing: [20, 30) and [50, 55).
        assert_eq!(coded_hole(&r, 0, 55, 10), CodedOutcome::Unrecoverable);
        // The missing tail of a block.
        assert_eq!(
            coded_hole(&r, 30, 55, 10),
            CodedOutcome::Rebuild {
                start: 50,
                len_bytes: 5
            }
        );
    }
}
