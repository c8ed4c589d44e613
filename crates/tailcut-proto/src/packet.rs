//! The packet every engine, shim and network element exchanges.
//!
//! A `Packet` is a fixed-size, `Copy` record of the headers that matter to transport and switches; the
//! payload is represented by its length only (the simulator does not carry bytes). Engines whose wire
//! format is real bytes (QUIC, CloudBurst on sockets) carry them out of band through the driver. Keeping
//! the record fixed-size is what lets the simulator keep packets in an arena with no per-packet heap
//! allocation.

use crate::macros::bitflags_lite;
use crate::seq::Seq;

/// A network address: one NIC of one host. Multi-homed hosts have several.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Addr(pub u32);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Proto {
    #[default]
    Tcp,
    Udp,
}

/// The ECN field of the IP header (RFC 3168).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect0,
    Ce,
}

/// The 5-tuple, as switches hash it for ECMP and hosts demultiplex on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    pub src: Addr,
    pub dst: Addr,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: Proto,
}

impl FiveTuple {
    pub fn reversed(&self) -> FiveTuple {
        FiveTuple {
            src: self.dst,
            dst: self.src,
            src_port: self.dst_port,
            dst_port: self.src_port,
            proto: self.proto,
        }
    }
}

/// A source-chosen path (XPath-like). The label is decoded in mixed radix along the way: each switch
/// with `n` equal-cost next hops takes `label % n` and forwards `label / n`, so labels `0..P` name `P`
/// distinct paths in a Clos fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Route {
    /// Per-switch ECMP on the 5-tuple.
    #[default]
    Ecmp,
    /// Explicit path; the value is the label still to be decoded.
    Path(u32),
}

bitflags_lite! {
    /// TCP header flags.
    pub struct TcpFlags: u8 {
        FIN = 0x01,
        SYN = 0x02,
        RST = 0x04,
        PSH = 0x08,
        ACK = 0x10,
        ECE = 0x40,
        CWR = 0x80,
    }
}

/// Up to four SACK blocks (RFC 2018: 4 fit in the option space without timestamps, 3 with).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    blocks: [(Seq, Seq); SackBlocks::MAX],
    len: u8,
}

impl SackBlocks {
    pub const MAX: usize = 4;

    /// Appends a block `[left, right)`; silently ignores blocks past the option space.
    pub fn push(&mut self, left: Seq, right: Seq) {
        if (self.len as usize) < Self::MAX {
            self.blocks[self.len as usize] = (left, right);
            self.len += 1;
        }
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn iter(&self) -> impl Iterator<Item = (Seq, Seq)> + Clone + '_ {
        self.blocks[..self.len as usize].iter().copied()
    }
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

/// Extension options carried by TCP segments of the schemes built on TCP. Kept as one enum so the packet
/// stays fixed-size; a segment carries at most one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TcpExt {
    #[default]
    None,
    /// MPTCP Data Sequence Signal (RFC 8684 Sec. 3.3): data-level sequence of this segment's payload
    /// and the data-level cumulative ACK.
    Dss { dsn: u64, data_ack: u64 },
    /// TCP-IR coded packet (Flach et al., SIGCOMM'13, Sec. 4.1): the XOR of the data segments of
    /// send-stream bytes `[start, start + len_bytes)`, which are segments of `seg_bytes` aligned at
    /// `start` (the last may be shorter). The packet's own payload is the coded bytes.
    XorCoded {
        start: Seq,
        len_bytes: u32,
        seg_bytes: u32,
    },
    /// TCP-IR: the receiver got the coded packet covering the stream up to `end` but could not
    /// recover the block (more than one segment missing); the sender treats the bytes below `end`
    /// it has no SACK for as lost.
    CodedAck { end: Seq },
}

/// The TCP header fields the engines use. Sequence numbers wrap on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    pub seq: Seq,
    pub ack: Seq,
    pub flags: TcpFlags,
    /// Advertised receive window, in bytes (window scaling is implicit).
    pub window: u32,
    pub payload_len: u32,
    pub sack: SackBlocks,
    /// RFC 7323 timestamps, in microseconds of the sender's clock.
    pub ts_val: u32,
    pub ts_ecr: u32,
    pub ext: TcpExt,
}

/// Transport header of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Header {
    #[default]
    None,
    Tcp(TcpHeader),
    /// A datagram whose payload bytes, if any, travel out of band (QUIC, CloudBurst).
    Datagram {
        payload_len: u32,
    },
}

/// A packet on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    pub tuple: FiveTuple,
    /// Size on the wire (IP packet: headers plus payload), which is what links serialise and queues
    /// count. A payload-cut packet keeps its header size only.
    pub size_bytes: u32,
    pub ecn: Ecn,
    /// Traffic class (DSCP-like) that selects a switch queue.
    pub class: u8,
    /// Scheduling priority for priority queues (pFabric): lower is served first.
    pub priority: u64,
    pub route: Route,
    /// Set by a trimming switch (CP) that cut the payload.
    pub trimmed: bool,
    pub header: Header,
}

impl Packet {
    pub fn tcp(&self) -> Option<&TcpHeader> {
        match &self.header {
            Header::Tcp(h) => Some(h),
            _ => None,
        }
    }
    pub fn tcp_mut(&mut self) -> Option<&mut TcpHeader> {
        match &mut self.header {
            Header::Tcp(h) => Some(h),
            _ => None,
        }
    }
    /// Payload bytes carried (zero for a pure ACK or a cut packet).
    pub fn payload_len(&self) -> u32 {
        if self.trimmed {
            return 0;
        }
        match &self.header {
            Header::Tcp(h) => h.payload_len,
            Header::Datagram { payload_len } => *payload_len,
            Header::None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_stays_small_enough_to_copy_cheaply() {
        assert!(
            std::mem::size_of::<Packet>() <= 160,
            "{}",
            std::mem::size_of::<Packet>()
        );
    }

    #[test]
    fn sack_blocks_cap_at_four() {
        let mut s = SackBlocks::default();
        for i in 0..6 {
            s.push(Seq(i), Seq(i + 1));
        }
        assert_eq!(s.len(), 4);
    }
}
