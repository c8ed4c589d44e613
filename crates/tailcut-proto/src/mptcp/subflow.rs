//! One MPTCP sub-flow: a TCP sender and receiver on their own 5-tuple, plus what the data level and
//! FUSO need to know about it.

use super::lia::Lia;
use crate::packet::{Ecn, FiveTuple, Header, Packet, Route, SackBlocks, TcpExt, TcpFlags, TcpHeader};
use crate::seq::Seq;
use crate::tcp::cc::Algorithm;
use crate::tcp::ext::Extensions;
use crate::tcp::receiver::Receiver;
use crate::tcp::sender::Sender;
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// Scoreboard tag bits of a sub-flow segment: the data sequence number it carries, and FUSO's marks.
pub(super) const DSN_MASK: u64 = (1 << 62) - 1;
/// The segment is a FUSO recovery copy: never protected again.
pub(super) const RECOVERY: u64 = 1 << 63;
/// A FUSO recovery copy of this segment has been sent (each packet is protected at most once).
pub(super) const PROTECTED: u64 = 1 << 62;

pub(super) struct Subflow {
    pub(super) tuple: FiveTuple,
    pub(super) isn: Seq,
    pub(super) peer_isn: Seq,
    pub(super) sender: Sender<Lia<Algorithm>>,
    /// The TCP extensions a sub-flow runs (CP, when configured).
    pub(super) ext: Extensions,
    pub(super) receiver: Receiver,
    /// ACKs that must go out before anything else (DCTCP CE-state flush).
    pub(super) control: VecDeque<Packet>,
    /// The one data chunk queued on the sender and not yet wholly sent: the tag of its unsent part
    /// and that part's length. A peer window smaller than the chunk makes the sub-flow send it in
    /// pieces; each piece carries its own DSN, and no other chunk joins it meanwhile.
    pub(super) queued: Option<(u64, u64)>,
    /// Segments received out of sequence at sub-flow level and not yet handed to the data level:
    /// (sub-flow start, sub-flow end, data sequence number). Unused with `ofo_to_data_level`.
    pub(super) held: Vec<(u64, u64, u64)>,
    /// Packets transmitted since, and including, the last retransmission; 0 before the first.
    pub(super) since_last_rtx: u64,
    /// Deemed dead after consecutive timeouts (Linux's "potentially failed"); cleared on progress.
    pub(super) dead: bool,
    /// When opportunistic retransmission last halved this sub-flow's window.
    pub(super) last_penalized: Option<Time>,
}

impl Subflow {
    pub(super) fn srtt(&self) -> Option<Dur> {
        self.sender.rtt.srtt()
    }

    /// RTT for tie-breaks: a sub-flow without a sample counts as 0 (Linux's `srtt_us` starts at 0).
    pub(super) fn rtt_or_zero(&self) -> Dur {
        self.srtt().unwrap_or(Dur::ZERO)
    }

    /// Room in the congestion window for one more full-sized segment (so any retransmission the
    /// sub-flow owes fits too).
    pub(super) fn has_room(&self, mss: u64) -> bool {
        self.sender.used_window_bytes() + mss <= self.sender.cc.cwnd_bytes()
    }

    /// In RTO recovery (Linux TCP_CA_Loss): Linux's scheduler gives such a sub-flow no new data.
    pub(super) fn in_timeout_recovery(&self) -> bool {
        matches!(
            self.sender.recovery,
            Some(r) if r.kind == crate::tcp::sender::RecoveryKind::Timeout
        )
    }

    /// FUSO's C_l (Sec. 3.2.1): `None` = infinity (nothing transmitted yet); 0 before the first
    /// retransmission; else alpha * retransmitted / transmitted + beta / packets since the last
    /// retransmission. Recovery copies count as new transmissions of the carrier.
    pub(super) fn loss_cost(&self, alpha: f64, beta: f64) -> Option<f64> {
        let st = &self.sender.stats;
        if st.data_segments_sent == 0 {
            return None;
        }
        if st.retransmits == 0 || self.since_last_rtx == 0 {
            return Some(0.0);
        }
        let lossrate = st.retransmits as f64 / st.data_segments_sent as f64;
        let last = 1.0 / self.since_last_rtx as f64;
        Some(alpha * lossrate + beta * last)
    }

    /// The oldest segment FUSO may protect: un-ACKed, not SACKed, neither a recovery copy nor
    /// already protected, and still needed at data level. Returns (sub-flow offset, DSN, length).
    pub(super) fn protectable(&self, data_una: u64) -> Option<(u64, u64, u32)> {
        self.sender
            .scoreboard
            .iter()
            .find(|s| {
                !s.sacked
                    && s.tag & (RECOVERY | PROTECTED) == 0
                    && (s.tag & DSN_MASK) + u64::from(s.len_bytes) > data_una
            })
            .map(|s| (s.start, s.tag & DSN_MASK, s.len_bytes))
    }

    /// A segment with every field this sub-flow stamps.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn packet(
        &self,
        now: Time,
        header_bytes: u32,
        class: u8,
        sack: bool,
        window: u32,
        seq: Seq,
        flags: TcpFlags,
        payload_len: u32,
        ecn: Ecn,
        ext: TcpExt,
    ) -> Packet {
        let mut flags = flags | TcpFlags::ACK;
        if self.receiver.ece() {
            flags.insert(TcpFlags::ECE);
        }
        let sack = if sack {
            self.receiver.sack_blocks(self.peer_isn)
        } else {
            SackBlocks::default()
        };
        Packet {
            tuple: self.tuple,
            size_bytes: header_bytes + payload_len,
            ecn,
            class,
            priority: 0,
            route: Route::Ecmp,
            trimmed: false,
            header: Header::Tcp(TcpHeader {
                seq,
                ack: Seq::from_offset(self.peer_isn, self.receiver.rcv_nxt),
                flags,
                window,
                payload_len,
                sack,
                ts_val: (now.as_nanos() / 1_000) as u32,
                ts_ecr: self.receiver.ts_recent,
                ext,
            }),
        }
    }
}
