//! A two-endpoint harness: endpoints 0 and 1 joined by a wire with a fixed one-way delay and a
//! serialisation rate per direction. A fault script decides each packet's fate (deliver, drop,
//! CE-mark, extra delay for reordering). A step limit turns a livelock into a failure.

use crate::engine::{AppEvent, Direction, Engine, Shim, Verdict};
use crate::packet::{Addr, Ecn, FiveTuple, Packet, TcpExt, TcpFlags};
use crate::seq::Seq;
use crate::tcp::{Role, TcpConfig, TcpEndpoint};
use crate::time::{serialization_time, Dur, Time};
use std::collections::BTreeMap;

pub const ISN: [Seq; 2] = [Seq(0xffff_f000), Seq(77)];

/// What the fault script sees about a packet about to enter the wire.
#[derive(Clone, Copy, Debug)]
pub struct WireCtx {
    pub from: usize,
    /// Index among the data packets this side has sent (retransmissions included), 0-based.
    pub data_index: u64,
    /// Index among the payload-less packets this side has sent, 0-based.
    pub ctl_index: u64,
    /// Send-stream offset of the first payload byte (data packets only).
    pub offset: Option<u64>,
    /// How many times this offset was sent before (0 = first transmission).
    pub copy: u64,
    pub pkt: Packet,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fate {
    Deliver,
    Drop,
    Ce,
    Delay(Dur),
    /// Cut the payload as a CP switch does: the header (66 bytes) arrives with `trimmed` set.
    Cut,
}

/// One packet put on the wire, with what the wire did to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sent {
    pub time: Time,
    pub from: usize,
    pub offset: Option<u64>,
    /// Cumulative ACK as a stream offset of the peer's send stream.
    pub ack: Option<u64>,
    pub copy: u64,
    pub fate: Fate,
    pub pkt: Packet,
}

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

type FaultFn = Box<dyn FnMut(&WireCtx) -> Fate>;

pub struct Harness {
    pub eps: [TcpEndpoint; 2],
    pub now: Time,
    pub one_way: Dur,
    pub rate_bps: u64,
    busy_until: [Time; 2],
    wire: BTreeMap<(Time, u64), (usize, Packet)>,
    wire_seq: u64,
    data_count: [u64; 2],
    ctl_count: [u64; 2],
    copies: [BTreeMap<u64, u64>; 2],
    fault: FaultFn,
    pub sent: Vec<Sent>,
    pub arrivals: Vec<Arrival>,
    pub events: Vec<(Time, usize, AppEvent)>,
    pub cwnd_log: Vec<CwndObs>,
    pub steps: u64,
    pub step_limit: u64,
    /// Call `handle_timeout` on both endpoints at every step, deadline due or not (engines must
    /// ignore early calls).
    pub early_timer_calls: bool,
    /// A host shim at side 0 (between its endpoint and the wire), as the simulator installs one.
    pub shim: Option<Box<dyn Shim>>,
    started: bool,
}

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

impl Harness {
    pub fn new(cfg: TcpConfig) -> Harness {
        let mk =
            |side: usize, role| TcpEndpoint::new(cfg.clone(), tuple(side), role, ISN[side], ISN[1 - side]);
        Harness {
            eps: [mk(0, Role::Client), mk(1, Role::Server)],
            now: Time::ZERO,
            one_way: Dur::from_micros(10),
            rate_bps: 10_000_000_000,
            busy_until: [Time::ZERO; 2],
            wire: BTreeMap::new(),
            wire_seq: 0,
            data_count: [0; 2],
            ctl_count: [0; 2],
            copies: [BTreeMap::new(), BTreeMap::new()],
            fault: Box::new(|_| Fate::Deliver),
            sent: Vec::new(),
            arrivals: Vec::new(),
            events: Vec::new(),
            cwnd_log: Vec::new(),
            steps: 0,
            step_limit: 1_000_000,
            early_timer_calls: false,
            shim: None,
            started: false,
        }
    }

    /// Drain the endpoints' construction-time output (e.g. a SYN) once the fault script is in place.
    fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.drain(0);
            self.drain(1);
        }
    }

    pub fn set_fault(&mut self, f: impl FnMut(&WireCtx) -> Fate + 'static) {
        self.fault = Box::new(f);
    }

    /// Side `from` sends a message of `len` bytes; the other side expects it.
    pub fn send(&mut self, from: usize, msg: u64, len: u64) {
        self.start();
        self.eps[1 - from].expect_message(msg, len);
        self.eps[from].send_message(self.now, msg, len);
        self.drain(1 - from);
        self.drain(from);
    }

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

    pub fn drain(&mut self, side: usize) {
        let mut scratch = Vec::new();
        while let Some(pkt) = self.eps[side].poll_transmit(self.now, &mut scratch) {
            self.put_on_wire(side, pkt);
        }
        while let Some(ev) = self.eps[side].poll_event() {
            self.events.push((self.now, side, ev));
        }
    }

    fn put_on_wire(&mut self, from: usize, mut pkt: Packet) {
        if from == 0 {
            if let Some(shim) = self.shim.as_mut() {
                if shim.on_egress(self.now, &mut pkt) == Verdict::Drop {
                    return;
                }
            }
        }
        self.put_on_wire_past_shim(from, pkt);
    }

    fn put_on_wire_past_shim(&mut self, from: usize, mut pkt: Packet) {
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
        let ctx = WireCtx {
            from,
            data_index: self.data_count[from],
            ctl_index: self.ctl_count[from],
            offset,
            copy,
            pkt,
        };
        if is_data {
            self.data_count[from] += 1;
        } else {
            self.ctl_count[from] += 1;
        }
        let fate = (self.fault)(&ctx);
        self.sent.push(Sent {
            time: self.now,
            from,
            offset,
            ack: Self::ack_offset(1 - from, &pkt),
            copy,
            fate,
            pkt,
        });
        let depart = self.now.max(self.busy_until[from])
            + serialization_time(u64::from(pkt.size_bytes), self.rate_bps);
        self.busy_until[from] = depart;
        let mut arrive = depart + self.one_way;
        match fate {
            Fate::Drop => return,
            Fate::Ce => {
                if pkt.ecn != Ecn::NotEct {
                    pkt.ecn = Ecn::Ce;
                }
            }
            Fate::Delay(d) => arrive += d,
            Fate::Cut => {
                if pkt.payload_len() > 0 {
                    pkt.trimmed = true;
                    pkt.size_bytes = 66;
                }
            }
            Fate::Deliver => {}
        }
        self.wire.insert((arrive, self.wire_seq), (1 - from, pkt));
        self.wire_seq += 1;
    }

    /// The next instant something happens, if anything is pending.
    fn next_time(&self) -> Option<Time> {
        let w = self.wire.keys().next().map(|k| k.0);
        let shim = self.shim.as_ref().and_then(|s| s.poll_timeout());
        [w, self.eps[0].poll_timeout(), self.eps[1].poll_timeout(), shim]
            .into_iter()
            .flatten()
            .min()
    }

    /// Advance to the next event and process everything due then. False when nothing is pending.
    pub fn step(&mut self) -> bool {
        self.start();
        self.steps += 1;
        assert!(
            self.steps <= self.step_limit,
            "step limit {} reached at {}: livelock?",
            self.step_limit,
            self.now
        );
        let Some(t) = self.next_time() else {
            return false;
        };
        self.now = self.now.max(t);
        // Packets first, then timers, each in a fixed order.
        if let Some((&key, _)) = self.wire.iter().next() {
            if key.0 <= self.now {
                let (to, pkt) = self.wire.remove(&key).expect("present");
                self.deliver(to, pkt);
                if self.early_timer_calls {
                    for side in 0..2 {
                        self.eps[side].handle_timeout(self.now);
                        self.drain(side);
                    }
                }
                return true;
            }
        }
        if let Some(mut shim) = self.shim.take() {
            if shim.poll_timeout().is_some_and(|d| d <= self.now) {
                shim.handle_timeout(self.now);
            }
            let mut injected = Vec::new();
            while let Some(x) = shim.poll_inject(self.now) {
                injected.push(x);
            }
            self.shim = Some(shim);
            for (dir, pkt) in injected {
                match dir {
                    Direction::ToHost => self.deliver_past_shim(0, pkt),
                    Direction::ToNetwork => self.put_on_wire_past_shim(0, pkt),
                }
            }
        }
        for side in 0..2 {
            let due = self.eps[side].poll_timeout().is_some_and(|d| d <= self.now);
            if due || self.early_timer_calls {
                self.eps[side].handle_timeout(self.now);
                self.drain(side);
            }
        }
        true
    }

    fn deliver(&mut self, to: usize, mut pkt: Packet) {
        if to == 0 {
            if let Some(shim) = self.shim.as_mut() {
                if shim.on_ingress(self.now, &mut pkt) == Verdict::Drop {
                    return;
                }
            }
        }
        self.deliver_past_shim(to, pkt);
    }

    fn deliver_past_shim(&mut self, to: usize, pkt: Packet) {
        self.arrivals.push(Arrival {
            time: self.now,
            to,
            ack: Self::ack_offset(to, &pkt),
            pkt,
        });
        let before = (self.eps[0].cwnd_bytes(), self.eps[0].stats().ecn_reductions);
        self.eps[to].handle_packet(self.now, &pkt, &[]);
        // Each byte is delivered once: the delivered count is exactly the in-order frontier.
        assert_eq!(self.eps[to].stats().bytes_delivered, self.eps[to].rcv_nxt());
        if to == 0 {
            self.cwnd_log.push(CwndObs {
                time: self.now,
                cwnd_before: before.0,
                cwnd_after: self.eps[0].cwnd_bytes(),
                ecn_reductions_before: before.1,
                ecn_reductions_after: self.eps[0].stats().ecn_reductions,
                alpha_after: self.eps[0].dctcp_alpha(),
            });
        }
        self.drain(to);
    }

    /// Run until nothing is pending (all data acknowledged, no timers).
    pub fn run(&mut self) {
        while self.step() {}
    }

    /// Run until `t` (processing everything due at or before it), then set the clock to `t`.
    pub fn run_until(&mut self, t: Time) {
        while self.next_time().is_some_and(|n| n <= t) {
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// Data packets side `from` put on the wire.
    pub fn data_from(&self, from: usize) -> impl Iterator<Item = &Sent> + '_ {
        self.sent
            .iter()
            .filter(move |s| s.from == from && s.offset.is_some())
    }

    /// Retransmissions (copies after the first) side `from` put on the wire.
    pub fn retransmissions(&self, from: usize) -> Vec<Sent> {
        self.data_from(from).filter(|s| s.copy > 0).copied().collect()
    }

    /// Arrival times at `to` of pure ACKs acknowledging `ack` (duplicates of one another).
    pub fn acks_arriving(&self, to: usize, ack: u64) -> Vec<Time> {
        self.arrivals
            .iter()
            .filter(|a| a.to == to && a.pkt.payload_len() == 0 && a.ack == Some(ack))
            .map(|a| a.time)
            .collect()
    }

    pub fn events_of(&self, side: usize) -> Vec<AppEvent> {
        self.events.iter().filter(|e| e.1 == side).map(|e| e.2).collect()
    }
}

pub const MSS: u64 = 1000;

/// Drop the first transmission of the segments starting at `offsets` (side 0's stream).
pub fn drop_first_copies(h: &mut Harness, offsets: &'static [u64]) {
    h.set_fault(move |c| {
        if c.from == 0 && c.copy == 0 && c.offset.is_some_and(|o| offsets.contains(&o)) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
}

/// The time the last ACK that advanced side 0's snd_una arrived before `t`.
pub fn last_new_ack_before(h: &Harness, t: Time) -> Time {
    let mut best = (0, Time::ZERO);
    for a in h.arrivals.iter().filter(|a| a.to == 0 && a.time <= t) {
        if let Some(ack) = a.ack {
            if ack > best.0 {
                best = (ack, a.time);
            }
        }
    }
    best.1
}
