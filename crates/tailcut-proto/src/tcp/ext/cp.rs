//! CP (Cheng et al., "Catch the Whole Lot in an Action", NSDI'14): a switch cuts the payload of a
//! packet it would drop; the receiver answers the cut segment with a PACK (precise loss
//! notification) and the sender retransmits exactly that segment. Transports `cp`, `cp_dctcp`, and
//! every MPTCP sub-flow with `cp = true`, which uses [`pack`] and [`Cp::on_packs`] directly.

use super::{Extension, Step};
use crate::packet::{Packet, SackBlocks, TcpHeader};
use crate::seq::Seq;
use crate::tcp::cc::CongestionControl;
use crate::tcp::endpoint::Conn;
use crate::tcp::sender::Sender;
use crate::time::Time;
use std::collections::VecDeque;

/// CP's sender state.
#[derive(Default)]
pub(crate) struct Cp {
    /// Segments named by PACKs after the first of a recovery, retransmitted as the window allows.
    pack_rtx: VecDeque<u64>,
}

impl Cp {
    /// Every SACK-format block of `h` with right < left is a PACK naming the cut range
    /// `[right, left)` of the stream the sender `s` (initial sequence number `isn`) sends. Returns
    /// the start of the segment whose PACK opened a fast recovery, if one did.
    pub(crate) fn on_packs<C: CongestionControl>(
        &mut self,
        s: &mut Sender<C>,
        h: &TcpHeader,
        isn: Seq,
    ) -> Option<u64> {
        let mut opened = None;
        for (l, r) in h.sack.iter() {
            let (Some(left), Some(right)) = (l.unwrap_near(isn, s.snd_una), r.unwrap_near(isn, s.snd_una))
            else {
                continue;
            };
            if right < left {
                opened = opened.or(self.on_pack(s, right, h.ts_ecr));
            }
        }
        opened
    }

    /// "Sender: reaction to PACK": the PACK names the cut segment holding `offset`, whose
    /// transmission carried timestamp `echo_us` (the PACK echoes it). Step 1: which segment; step 2:
    /// is it still outstanding, unSACKed, and not already sent again since the cut transmission (a
    /// later (re)transmission makes the PACK stale); step 3: fast retransmit it at once. The first
    /// PACK outside recovery enters fast recovery (one window reduction per recovery, RFC 6675 / RFC
    /// 6582: ssthresh = FlightSize / 2) and its segment goes out at once, regardless of cwnd, as a
    /// fast retransmit does; its start is returned. Later PACKs in the same recovery mark their
    /// segment lost (it leaves `pipe`) and queue it; it goes out as soon as pipe < cwnd (RFC 6675
    /// Sec. 5 step (C)), ahead of new data. So the ACK clock is kept and a window of cut packets is
    /// not resent in one burst.
    fn on_pack<C: CongestionControl>(&mut self, s: &mut Sender<C>, offset: u64, echo_us: u32) -> Option<u64> {
        s.stats.packs_received += 1;
        if offset < s.snd_una || offset >= s.snd_nxt {
            return None;
        }
        let idx = s.scoreboard.find(offset)?;
        let seg = *s.scoreboard.seg(idx);
        let sent_us = (seg.sent_at.as_nanos() / 1_000) as u32;
        if seg.sacked || (sent_us.wrapping_sub(echo_us) as i32) > 0 {
            return None;
        }
        s.scoreboard.mark_cut(idx);
        s.stats.precise_retransmits += 1;
        if s.recovery.is_some() {
            self.pack_rtx.push_back(seg.start);
            return None;
        }
        let ss = s.begin_fast_recovery();
        s.cc.set_cwnd_bytes(ss);
        s.fast_retransmit(seg.start);
        Some(seg.start)
    }
}

/// "Receiver: packet-loss feedback": step 1, parse the payload-cut segment `h`; step 2, build the
/// PACK from `ack`, a pure ACK of the connection (receive stream at `rcv_nxt`, peer's initial
/// sequence number `peer_isn`): its first SACK-format block holds the cut range with its edges
/// swapped (right edge first, so right < left), then up to three of the ordinary SACK blocks; step 3
/// is the caller's: send it at once, ahead of anything else. A SACK-only parser discards the
/// inverted block as invalid (RFC 2018 blocks have left < right), so a PACK reads as an ordinary ACK
/// there. The PACK echoes the cut segment's own timestamp (not TS.Recent), which tells the sender
/// which transmission was cut. `None` when every byte of the cut segment already arrived.
pub(crate) fn pack(h: &TcpHeader, rcv_nxt: u64, peer_isn: Seq, mut ack: Packet) -> Option<Packet> {
    let start = h.seq.unwrap_near(peer_isn, rcv_nxt)?;
    let end = start + u64::from(h.payload_len);
    if end <= rcv_nxt {
        return None;
    }
    if let Some(ph) = ack.tcp_mut() {
        let mut blocks = SackBlocks::default();
        blocks.push(Seq::from_offset(peer_isn, end), Seq::from_offset(peer_isn, start));
        for (l, r) in ph.sack.iter().take(SackBlocks::MAX - 1) {
            blocks.push(l, r);
        }
        ph.sack = blocks;
        ph.ts_ecr = h.ts_val;
    }
    Some(ack)
}

impl Extension for Cp {
    fn on_rto(&mut self, _consecutive: u32) -> bool {
        self.pack_rtx.clear();
        false
    }

    /// The queued PACKed segments, as the window allows; they go before recovery and new data, and
    /// while one does not fit nothing else goes.
    fn after_retransmissions<C: CongestionControl>(&mut self, s: &mut Sender<C>, now: Time) -> Step {
        let used = s.used_window_bytes();
        let cwnd = s.cc.cwnd_bytes();
        while let Some(&off) = self.pack_rtx.front() {
            let idx = s.scoreboard.find(off);
            let Some(idx) = idx.filter(|&i| {
                let seg = s.scoreboard.seg(i);
                !seg.sacked && !seg.rtx_in_flight
            }) else {
                // Acknowledged, SACKed or already sent again meanwhile.
                self.pack_rtx.pop_front();
                continue;
            };
            let len = u64::from(s.scoreboard.seg(idx).len_bytes);
            if used + len <= cwnd || used == 0 {
                self.pack_rtx.pop_front();
                return Step::Send(s.retransmit(idx, now));
            }
            return Step::Hold;
        }
        Step::Pass
    }

    fn on_ack_received(&mut self, c: &mut Conn, _now: Time, h: &TcpHeader) {
        self.on_packs(&mut c.sender, h, c.isn);
    }

    fn on_cut_segment(&mut self, c: &mut Conn, now: Time, h: &TcpHeader) {
        c.sender.stats.cut_segments_received += 1;
        if let Some(p) = pack(h, c.receiver.rcv_nxt, c.peer_isn, c.pure_ack(now)) {
            c.sender.stats.packs_sent += 1;
            c.control.push_back(p);
        }
    }
}
