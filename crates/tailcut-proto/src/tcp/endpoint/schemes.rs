//! The baselines' parts of the endpoint: PIAS class and pFabric priority tagging, and TCP-IR's coded
//! packets (sending and receiving). A child of `endpoint.rs`, so it works on the endpoint's state.

use super::TcpEndpoint;
use crate::packet::{Ecn, Packet, TcpExt, TcpFlags};
use crate::seq::Seq;
use crate::tcp::ir::CodedBlock;
use crate::tcp::receiver::CodedOutcome;
use crate::time::Time;

impl TcpEndpoint {
    /// PIAS (Bai et al. Sec. 3.1) tags the class by the bytes of the message sent before this packet;
    /// pFabric (Alizadeh et al. Sec. 4.1) sets the priority to the bytes of the message not yet
    /// acknowledged. `offset` is the packet's first stream byte.
    pub(super) fn tag(&self, p: &mut Packet, offset: u64) {
        if self.cfg.pias.is_none() && !self.cfg.pfabric_priority {
            return;
        }
        let Some((start, end)) = self.sender.ledger.bounds(offset) else {
            return;
        };
        if let Some(pias) = &self.cfg.pias {
            p.class = pias.level(offset - start);
        }
        if self.cfg.pfabric_priority {
            p.priority = end - start.max(self.sender.snd_una);
        }
    }

    /// TCP-IR (Flach et al. Sec. 4.1): the coded packet of `b`. Its payload is one segment of XORed
    /// bytes, charged as redundant to the message owning the block's first unacknowledged byte.
    pub(super) fn coded_packet(&mut self, now: Time, b: CodedBlock) -> Packet {
        let ecn = if self.cfg.ecn { Ecn::Ect0 } else { Ecn::NotEct };
        let seq = Seq::from_offset(self.isn, self.sender.snd_nxt);
        let mut p = self.packet(now, seq, TcpFlags::empty(), b.seg_bytes, ecn);
        if let Some(h) = p.tcp_mut() {
            h.ext = TcpExt::XorCoded {
                start: Seq::from_offset(self.isn, b.start),
                len_bytes: (b.end - b.start) as u32,
                seg_bytes: b.seg_bytes,
            };
        }
        let first = b.start.max(self.sender.snd_una);
        self.tag(&mut p, first);
        self.sender
            .ledger
            .charge_redundant_at(first, u64::from(b.seg_bytes));
        let st = &mut self.sender.stats;
        st.coded_packets_sent += 1;
        st.data_segments_sent += 1;
        st.payload_bytes_sent += u64::from(b.seg_bytes);
        p
    }

    /// TCP-IR receiver (Flach et al. Sec. 4.1): rebuild the single missing segment of the block, or,
    /// if more are missing, answer at once with an ACK that tells the sender the block did not
    /// arrive whole (the coded packet then acts as a loss probe). A block that arrived whole is
    /// acknowledged at once too.
    pub(super) fn on_coded(&mut self, now: Time, pkt: &Packet, start: Seq, len_bytes: u32, seg_bytes: u32) {
        let Some(start) = start.unwrap_near(self.peer_isn, self.receiver.rcv_nxt) else {
            return;
        };
        let end = start + u64::from(len_bytes);
        match self.receiver.coded_hole(start, end, seg_bytes) {
            // Acknowledged like any arriving segment: if the ACKs of the block were lost, this one
            // spares the sender a timeout.
            CodedOutcome::Complete => self.receiver.request_ack(),
            CodedOutcome::Rebuild { start, len_bytes } => {
                self.sender.stats.coded_recoveries += 1;
                let out =
                    self.receiver
                        .on_data(now, start, len_bytes, pkt.ecn == Ecn::Ce, false, &mut self.events);
                self.after_data(now, out);
                self.receiver.request_ack();
            }
            CodedOutcome::Unrecoverable => {
                let mut p = self.pure_ack(now);
                if let Some(h) = p.tcp_mut() {
                    h.ext = TcpExt::CodedAck {
                        end: Seq::from_offset(self.peer_isn, end),
                    };
                }
                self.control.push_back(p);
            }
        }
    }
}
