//! One flow's entry in the T-RACKs flow table (the state Algorithm 1 keeps per 4-tuple).

use crate::packet::Packet;
use crate::seq::Seq;
use crate::time::{Dur, Time};

/// The 4-tuple of the data direction (local sender -> remote receiver), as the shim hashes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FlowKey {
    pub(crate) src: u32,
    pub(crate) dst: u32,
    pub(crate) src_port: u16,
    pub(crate) dst_port: u16,
}

impl FlowKey {
    /// Key of an outgoing packet.
    pub(crate) fn of_egress(p: &Packet) -> FlowKey {
        FlowKey {
            src: p.tuple.src.0,
            dst: p.tuple.dst.0,
            src_port: p.tuple.src_port,
            dst_port: p.tuple.dst_port,
        }
    }
    /// Key of the flow an incoming ACK acknowledges.
    pub(crate) fn of_ingress(p: &Packet) -> FlowKey {
        FlowKey {
            src: p.tuple.dst.0,
            dst: p.tuple.src.0,
            src_port: p.tuple.dst_port,
            dst_port: p.tuple.src_port,
        }
    }
}

/// An ongoing recovery episode (Algorithm 2: `resent`, `resent_time`, `x`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Episode {
    /// When the first burst was spoofed.
    pub(crate) started: Time,
    /// The beta in force when the episode started (back-off is `beta << shift`).
    pub(crate) beta: Dur,
    /// Back-off exponent of the next extra spoofed ACK (starts at 2).
    pub(crate) shift: u32,
    /// Spoofed ACKs sent in this episode (grows the fake SACK block).
    pub(crate) spoofed: u32,
    /// The sender's last timestamp value when the episode started (unit-free Eifel check).
    pub(crate) ts_at_start: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct FlowEntry {
    /// Highest sequence sent + 1 (end of the highest data segment seen leaving).
    pub(crate) snd_end: Seq,
    /// Largest payload seen (the segment size used to align the fake SACK block).
    pub(crate) seg_bytes: u32,
    /// Last cumulative ACK seen (`None` before the first ACK).
    pub(crate) last_ack: Option<Seq>,
    /// The last real ACK, the template of the spoofed ones.
    pub(crate) ack_template: Option<Packet>,
    /// Bytes acknowledged since activation (compared with gamma).
    pub(crate) acked_bytes: u64,
    pub(crate) ack_time: Time,
    /// When the sender's retransmission timer was last (re)started, as far as the shim can tell: the
    /// last new ACK, or the first data sent with nothing outstanding (RFC 6298 Sec. 5.1, 5.3).
    pub(crate) rto_ref: Time,
    pub(crate) active_time: Time,
    /// Smoothed RTT from the timestamp echo (RFC 6298 gains).
    pub(crate) srtt: Dur,
    pub(crate) has_rtt: bool,
    /// Real duplicate ACKs since the last new ACK.
    pub(crate) dupacks: u32,
    pub(crate) long_lived: bool,
    pub(crate) episode: Option<Episode>,
    /// Gave up on the current stall (min RTO near): no new episode until a new ACK or new data.
    pub(crate) parked: bool,
    /// The segment being timed (`RttSource::SeqAck`): its end sequence and when it left.
    pub(crate) timed: Option<(Seq, Time)>,
    /// The sender's timestamp value on its latest data segment.
    pub(crate) last_ts_val: u32,
    /// The smallest MSS either SYN announced, when the shim saw it (caps the segment size used to
    /// align the fake SACK block).
    pub(crate) mss: Option<u32>,
    /// Whether both SYNs offered SACK, when the shim saw them; otherwise the configured `sack`.
    pub(crate) sack: Option<bool>,
}

impl FlowEntry {
    pub(crate) fn new(now: Time, initial_rtt: Dur, snd_start: Seq) -> FlowEntry {
        FlowEntry {
            snd_end: snd_start,
            seg_bytes: 0,
            last_ack: None,
            ack_template: None,
            acked_bytes: 0,
            ack_time: now,
            rto_ref: now,
            active_time: now,
            srtt: initial_rtt,
            has_rtt: false,
            dupacks: 0,
            long_lived: false,
            episode: None,
            parked: false,
            timed: None,
            last_ts_val: 0,
            mss: None,
            sack: None,
        }
    }

    /// The segment size the fake SACK block is aligned to: the largest payload seen, capped by the
    /// SYNs' MSS (a GSO super-packet is larger than a segment), or the MSS before any data.
    pub(crate) fn segment_bytes(&self) -> u32 {
        match self.mss {
            Some(m) if self.seg_bytes == 0 => m,
            Some(m) => self.seg_bytes.min(m),
            None => self.seg_bytes,
        }
    }

    /// Data sent and not yet acknowledged (as far as the shim can tell).
    pub(crate) fn outstanding(&self) -> bool {
        self.last_ack.is_some_and(|a| a.lt(self.snd_end))
    }

    /// RFC 6298 Sec. 2 smoothing of an RTT sample.
    pub(crate) fn on_rtt_sample(&mut self, sample: Dur) {
        if self.has_rtt {
            self.srtt = Dur((self.srtt.0 * 7 + sample.0) / 8);
        } else {
            self.srtt = sample;
            self.has_rtt = true;
        }
    }
}
