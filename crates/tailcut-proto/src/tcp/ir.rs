//! TCP-IR's encoder (Flach et al., "Reducing Web Latency: the Virtue of Gentle Aggression",
//! SIGCOMM'13, Sec. 4.1): new data segments are grouped into blocks, one per time bin of half an RTT
//! (at most `max_block_segments` segments); one XOR-coded packet per block goes out a quarter RTT after
//! its bin closes. Receivers rebuild a single missing segment of a block (`Receiver::coded_hole`).
//!
//! Blocks hold contiguous full-sized segments only: a short segment (the stream ran dry) closes its
//! block, so segment boundaries inside a block are `start + i * seg_bytes`.

use super::config::TcpIrConfig;
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// The stream range one coded packet covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CodedBlock {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) seg_bytes: u32,
    segments: u32,
    /// When the bin closes to new segments.
    bin_end: Time,
    /// When the coded packet is due.
    due: Time,
    closed: bool,
}

#[derive(Debug)]
pub(crate) struct IrEncoder {
    cfg: TcpIrConfig,
    blocks: VecDeque<CodedBlock>,
}

impl IrEncoder {
    pub(crate) fn new(cfg: TcpIrConfig) -> Self {
        IrEncoder {
            cfg,
            blocks: VecDeque::new(),
        }
    }

    /// A new data segment `[start, start + len)` went out at `now`; `rtt` is the sender's SRTT
    /// (coding starts with the first RTT sample).
    pub(crate) fn on_new_segment(&mut self, now: Time, start: u64, len: u32, mss: u32, rtt: Option<Dur>) {
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

    /// The next coded packet's due time.
    pub(crate) fn deadline(&self) -> Option<Time> {
        self.blocks.front().map(|b| b.due)
    }

    /// The next coded packet due at `now` whose block is not wholly acknowledged (`snd_una`); blocks
    /// acknowledged meanwhile are skipped (their coded packet would repair nothing).
    pub(crate) fn pop_due(&mut self, now: Time, snd_una: u64) -> Option<CodedBlock> {
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

    /// A timeout: blocks not yet coded are abandoned (go-back-N retransmits them anyway).
    pub(crate) fn clear(&mut self) {
        self.blocks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_half_rtt_bins_and_the_size_cap() {
        let rtt = Some(Dur::from_micros(100));
        let mut e = IrEncoder::new(TcpIrConfig {
            max_block_segments: 3,
        });
        for i in 0..4 {
            e.on_new_segment(Time(i * 1_000), i * 10, 10, 10, rtt);
        }
        // A new bin after 50 us.
        e.on_new_segment(Time(60_000), 40, 10, 10, rtt);
        assert_eq!(e.deadline(), Some(Time(75_000)));
        assert_eq!(e.pop_due(Time(74_999), 0), None);
        let b = e.pop_due(Time(75_000), 0).expect("first block");
        assert_eq!((b.start, b.end), (0, 30));
        let b = e.pop_due(Time(200_000), 0).expect("second block");
        assert_eq!((b.start, b.end), (30, 40));
        let b = e.pop_due(Time(200_000), 0).expect("third block");
        assert_eq!((b.start, b.end, b.due), (40, 50, Time(60_000 + 75_000)));
    }
}
