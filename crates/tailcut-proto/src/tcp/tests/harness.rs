//! The TCP tests' harness: the generic two-endpoint harness ([`crate::testing`]) with a [`TcpProbe`]
//! that tells the fault scripts each packet's stream offset, copy count and per-kind index
//! ([`TcpInfo`]), logs every arrival with its ACK as a stream offset, logs side 0's congestion state
//! around each delivery, and checks after each one that an endpoint delivered every byte exactly once.
//! The link has a 10 us one-way delay and 10 Gb/s per direction; a step limit turns a livelock into
//! a failure.

use crate::packet::{Addr, FiveTuple, Packet, TcpExt, TcpFlags};
use crate::seq::Seq;
use crate::tcp::{Role, TcpConfig, TcpEndpoint};
use crate::testing::{self, Probe};
use crate::time::{Dur, Time};
use std::collections::BTreeMap;

pub use crate::testing::Fate;

pub const ISN: [Seq; 2] = [Seq(0xffff_f000), Seq(77)];

/// What the fault scripts see, and the log keeps, about a TCP packet entering the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpInfo {
    /// Index among the data packets this side has sent (retransmissions included), 0-based.
    pub data_index: u64,
    /// Index among the payload-less packets this side has sent, 0-based.
    pub ctl_index: u64,
    /// Send-stream offset of the first payload byte (data packets only).
    pub offset: Option<u64>,
    /// How many times this offset was sent before (0 = first transmission).
    pub copy: u64,
    /// Cumulative ACK as a stream offset of the peer's send stream.
    pub ack: Option<u64>,
}

/// One packet put on the wire, with what the wire did to it.
pub type Sent = testing::Sent<TcpInfo>;

/// One packet handed to an endpoint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    pub time: Time,
    pub to: usize,
    pub ack: Option<u64>,
    pub pkt: Packet,
}

/// Side 0's congestion state around one delivered packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CwndObs {
    pub time: Time,
    pub cwnd_before: u64,
    pub cwnd_after: u64,
    pub ecn_reductions_before: u64,
    pub ecn_reductions_after: u64,
    pub alpha_after: Option<f64>,
}

/// TCP's knowledge of its packets, for the generic harness.
#[derive(Default)]
pub struct TcpProbe {
    data_count: [u64; 2],
    ctl_count: [u64; 2],
    copies: [BTreeMap<u64, u64>; 2],
    pub arrivals: Vec<Arrival>,
    pub cwnd_log: Vec<CwndObs>,
    /// Side 0's (cwnd, ECN reductions) before the delivery under way.
    before: (u64, u64),
}

impl TcpProbe {
    fn stream_offset(side: usize, seq: Seq) -> Option<u64> {
        seq.unwrap_near(ISN[side], 0)
    }

    fn ack_offset(to_side: usize, pkt: &Packet) -> Option<u64> {
        let h = pkt.tcp()?;
        if !h.flags.contains(TcpFlags::ACK) {
            return None;
        }
        // The ACK acknowledges the receiver's (`to_side`'s) stream; unwrap near a small offset,
        // which is exact for the transfers these tests run (< 2 GB).
        h.ack.unwrap_near(ISN[to_side], 0)
    }
}

impl Probe<TcpEndpoint> for TcpProbe {
    type Info = TcpInfo;

    fn on_link(&mut self, from: usize, pkt: &Packet) -> TcpInfo {
        let h = *pkt.tcp().expect("tcp packet");
        // TCP-IR coded packets carry payload but no stream bytes of their own.
        let is_data = pkt.payload_len() > 0 && !matches!(h.ext, TcpExt::XorCoded { .. });
        let offset = if is_data {
            Self::stream_offset(from, h.seq)
        } else {
            None
        };
        let copy = match offset {
            Some(o) => {
                let c = self.copies[from].entry(o).or_insert(0);
                *c += 1;
                *c - 1
            }
            None => 0,
        };
        let info = TcpInfo {
            data_index: self.data_count[from],
            ctl_index: self.ctl_count[from],
            offset,
            copy,
            ack: Self::ack_offset(1 - from, pkt),
        };
        if is_data {
            self.data_count[from] += 1;
        } else {
            self.ctl_count[from] += 1;
        }
        info
    }

    fn before_delivery(&mut self, eps: &[TcpEndpoint; 2], now: Time, to: usize, pkt: &Packet) {
        self.arrivals.push(Arrival {
            time: now,
            to,
            ack: Self::ack_offset(to, pkt),
            pkt: *pkt,
        });
        self.before = (eps[0].cwnd_bytes(), eps[0].stats().ecn_reductions);
    }

    fn after_delivery(&mut self, eps: &[TcpEndpoint; 2], now: Time, to: usize, _pkt: &Packet) {
        // Each byte is delivered once: the delivered count is exactly the in-order frontier.
        assert_eq!(eps[to].stats().bytes_delivered, eps[to].rcv_nxt());
        if to == 0 {
            self.cwnd_log.push(CwndObs {
                time: now,
                cwnd_before: self.before.0,
                cwnd_after: eps[0].cwnd_bytes(),
                ecn_reductions_before: self.before.1,
                ecn_reductions_after: eps[0].stats().ecn_reductions,
                alpha_after: eps[0].dctcp_alpha(),
            });
        }
    }
}

pub type Harness = testing::Harness<TcpEndpoint, TcpProbe>;

pub fn tuple(side: usize) -> FiveTuple {
    let t = FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 1000,
        dst_port: 80,
        ..Default::default()
    };
    if side == 0 {
        t
    } else {
        t.reversed()
    }
}

/// The configuration most tests start from: 1000-byte MSS, 5 ms minimum RTO, 100 ms initial RTO.
pub fn test_cfg() -> TcpConfig {
    TcpConfig {
        mss_bytes: 1000,
        min_rto: Dur::from_millis(5),
        max_rto: Dur::from_millis(1_000),
        initial_rto: Dur::from_millis(100),
        ..TcpConfig::default()
    }
}

impl testing::Harness<TcpEndpoint, TcpProbe> {
    /// A client (side 0) and a server (side 1) with `cfg`, on a 10 us, 10 Gb/s wire.
    pub fn tcp(cfg: TcpConfig) -> Harness {
        let mk =
            |side: usize, role| TcpEndpoint::new(cfg.clone(), tuple(side), role, ISN[side], ISN[1 - side]);
        let mut h =
            testing::Harness::with_probe(mk(0, Role::Client), mk(1, Role::Server), TcpProbe::default());
        h.rate_bps = 10_000_000_000;
        h
    }

    /// Data packets side `from` put on the wire.
    pub fn data_from(&self, from: usize) -> impl Iterator<Item = &Sent> + '_ {
        self.sent
            .iter()
            .filter(move |s| s.from == from && s.info.offset.is_some())
    }

    /// Retransmissions (copies after the first) side `from` put on the wire.
    pub fn retransmissions(&self, from: usize) -> Vec<Sent> {
        self.data_from(from)
            .filter(|s| s.info.copy > 0)
            .cloned()
            .collect()
    }

    /// Arrival times at `to` of pure ACKs acknowledging `ack` (duplicates of one another).
    pub fn acks_arriving(&self, to: usize, ack: u64) -> Vec<Time> {
        self.probe
            .arrivals
            .iter()
            .filter(|a| a.to == to && a.pkt.payload_len() == 0 && a.ack == Some(ack))
            .map(|a| a.time)
            .collect()
    }
}

pub const MSS: u64 = 1000;

/// Drop the first transmission of the segments starting at `offsets` (side 0's stream).
pub fn drop_first_copies(h: &mut Harness, offsets: &'static [u64]) {
    h.set_fault(move |c| {
        if c.from == 0 && c.info.copy == 0 && c.info.offset.is_some_and(|o| offsets.contains(&o)) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
}

/// The time the last ACK that advanced side 0's snd_una arrived before `t`.
pub fn last_new_ack_before(h: &Harness, t: Time) -> Time {
    let mut best = (0, Time::ZERO);
    for a in h.probe.arrivals.iter().filter(|a| a.to == 0 && a.time <= t) {
        if let Some(ack) = a.ack {
            if ack > best.0 {
                best = (ack, a.time);
            }
        }
    }
    best.1
}
