//! Cumulative per-connection counters.

use super::receiver::SegmentOutcome;

/// Counters of one endpoint, both directions. Cumulative since construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnStats {
    /// Every packet sent: data, pure ACKs and handshake segments.
    pub segments_sent: u64,
    /// Packets carrying payload (first transmissions and retransmissions).
    pub data_segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub payload_bytes_sent: u64,
    /// Pure ACKs sent.
    pub acks_sent: u64,
    /// Data segments sent again by loss recovery.
    pub retransmits: u64,
    pub retransmitted_bytes: u64,
    /// Retransmission timeouts of data (handshake timeouts are `syn_retransmits` here; the
    /// per-message `MessageStats::timeouts` counts both).
    pub timeouts: u64,
    /// Fast retransmit / fast recovery episodes entered (dupACK, SACK or early retransmit).
    pub fast_retransmits: u64,
    /// SYN or SYN-ACK retransmissions.
    pub syn_retransmits: u64,
    /// Tail loss probes sent (TLP).
    pub tlp_probes: u64,
    /// Probe timeouts (PTO, of `tlp` or RACK-TLP) that fired. The probe itself goes out at the next
    /// transmission opportunity, after the timer's handling, so a tracer reading the counters right
    /// after the timer needs this count to tell the PTO from another timer (`tailcut trace`'s `tlp`).
    pub probe_timeouts: u64,
    /// RACK's reordering timer expiries (RFC 8985 Sec. 6.3): the loss detection re-run, which may
    /// retransmit. Counted for a tracer, as `probe_timeouts` (`tailcut trace`'s `rack`).
    pub reorder_timeouts: u64,
    /// TCP-IR coded packets sent.
    pub coded_packets_sent: u64,
    /// Receive side: segments rebuilt from a TCP-IR coded packet instead of retransmitted.
    pub coded_recoveries: u64,
    /// Window reductions in response to ECN-Echo.
    pub ecn_reductions: u64,
    /// Receive side: bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// Receive side: data segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// Receive side: data segments wholly below `rcv_nxt` (spurious retransmissions).
    pub duplicate_segments: u64,
    /// CP receive side: payload-cut data segments that arrived (each answered by one PACK).
    pub cut_segments_received: u64,
    /// CP: PACKs sent.
    pub packs_sent: u64,
    /// CP: PACKs received (every one, also those ignored as stale).
    pub packs_received: u64,
    /// CP: segments retransmitted because a PACK named them.
    pub precise_retransmits: u64,
    /// Cumulative ACKs that stopped at a SACKed segment (SACK reneging suspected, RFC 2018 Sec. 8).
    pub sack_renegings: u64,
    /// Window reductions undone because D-SACKs showed every retransmission spurious (Linux
    /// `TCPDSACKUndo`, `TCPFullUndo`, `TCPLossUndo` together).
    pub spurious_undos: u64,
    /// Window reductions because a loss probe repaired a loss (Linux `TCPLossProbeRecovery`).
    pub tlp_loss_reductions: u64,
}

impl ConnStats {
    /// Count what a received data segment did.
    pub(crate) fn count_segment(&mut self, out: &SegmentOutcome) {
        self.bytes_delivered += out.delivered_bytes;
        self.duplicate_segments += u64::from(out.duplicate);
        self.out_of_order_segments += u64::from(out.out_of_order);
    }
}
