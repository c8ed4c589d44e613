//! A port: the egress of one direction of a link. It owns its queue, its counters and its transmitter:
//! offered a packet at `now` it admits, marks, cuts or drops it and, when the line is free, starts
//! serialising the next one and says when that one reaches the peer and when the line frees again.
//! It knows nothing of events or clocks beyond the `now` it is handed, so the simulator's event loop
//! and a real-time emulator (wall-clock `now`) drive the same code.

use super::link::{LossConfig, LossModel};
use super::qdisc::{Admit, DropCause, PortQueue};
use crate::arena::{PacketArena, PktId};
use crate::event::{NodeId, PortId};
use tailcut_proto::rng::Rng;
use tailcut_proto::time::serialization_time;
use tailcut_proto::{Dur, Time};

/// Per-port counters, reported in `ports.parquet` (and by the testbed, under the same names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortCounters {
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    pub dropped_overflow: u64,
    pub dropped_aqm: u64,
    pub dropped_link_loss: u64,
    pub dropped_link_down: u64,
    pub ecn_marked: u64,
    pub trimmed: u64,
    pub max_occupancy_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

impl PortCounters {
    /// Packets this port lost: dropped at admission or lost on its link.
    pub fn dropped(&self) -> u64 {
        self.dropped_overflow + self.dropped_aqm + self.dropped_link_loss + self.dropped_link_down
    }
}

/// A packet that started serialisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    pub id: PktId,
    /// When it reaches the peer (end of serialisation plus propagation), or `None` if the link lost it
    /// (counted: the driver frees it).
    pub arrives: Option<Time>,
}

/// What the driver of a port has to do after offering it a packet or waking it. The port's entry
/// points are inlined into their caller so that this record never goes through memory: returned out
/// of line it cost 9% more instructions per packet-hop on the benchmark.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Service {
    /// Packets the port dropped at admission (one pushed out of the queue, the arrival, or both): the
    /// driver frees them. The first is set whenever the second is.
    pub dropped: [Option<PktId>; 2],
    /// The packet put on the wire now, if any.
    pub sent: Option<Departure>,
    /// Packets wait behind the one on the wire: call [`Port::wake`] at this time. Given once per
    /// busy period; a port offered packets meanwhile does not ask again.
    pub wake_at: Option<Time>,
}

const NOTHING: Service = Service {
    dropped: [None, None],
    sent: None,
    wake_at: None,
};

/// The egress side of one direction of a link.
pub struct Port {
    pub node: NodeId,
    pub peer: NodeId,
    /// The host index of `peer` (`u32::MAX` for a switch), read beside `peer` by every arrival.
    pub peer_host: u32,
    /// The port carrying the opposite direction.
    pub reverse: PortId,
    /// Tier of the link (0 = host-ToR, 1 = ToR-Agg/leaf-spine, 2 = Agg-Core, ...), for fault placement.
    pub tier: u8,
    rate_bps: u64,
    /// The serialisation time of the last packet size sent, `(size, time)`: a port sends mostly one
    /// size (data one way, ACKs the other), and the division it saves is ~8 instructions per
    /// packet-hop on benchmark (a). Cleared when the rate changes.
    last_serialization: (u64, Dur),
    delay: Dur,
    up: bool,
    loss: LossModel,
    queue: PortQueue,
    /// The line is serialising a packet until this time.
    busy_until: Time,
    /// The driver was told to wake the port (only while packets wait behind the one on the wire).
    wake_pending: bool,
    counters: PortCounters,
    /// The port's own stream: its discipline's draws (RED, random drop) and link loss.
    rng: Rng,
}

impl Port {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        node: NodeId,
        peer: NodeId,
        reverse: PortId,
        tier: u8,
        rate_bps: u64,
        delay: Dur,
        queue: PortQueue,
        rng: Rng,
    ) -> Port {
        Port {
            node,
            peer,
            peer_host: u32::MAX,
            reverse,
            tier,
            rate_bps,
            last_serialization: (u64::MAX, Dur(0)),
            delay,
            up: true,
            loss: LossModel::default(),
            queue,
            busy_until: Time::ZERO,
            wake_pending: false,
            counters: PortCounters::default(),
            rng,
        }
    }

    /// A packet arrives for transmission. A packet reaching an idle port with an empty queue skips the
    /// queue (its admission and marking still apply); otherwise it is queued, and the line starts on
    /// the head of the queue if it is free.
    #[inline(always)]
    pub fn offer(&mut self, now: Time, id: PktId, arena: &mut PacketArena) -> Service {
        let size = arena.get(id).size_bytes as u64;
        if !self.wake_pending && self.busy_until <= now {
            if let Some(marked) = self.queue.admit_to_idle(arena, id) {
                let c = &mut self.counters;
                c.enqueued_packets += 1;
                c.enqueued_bytes += size;
                c.ecn_marked += marked as u64;
                return self.transmit(now, id, size);
            }
        }
        let admit = self.queue.enqueue(arena, id, now.0, &mut self.rng);
        let c = &mut self.counters;
        let mut dropped = [None, None];
        match admit {
            Admit::Queued { marked } => {
                c.enqueued_packets += 1;
                c.enqueued_bytes += size;
                c.ecn_marked += marked as u64;
            }
            Admit::Trimmed => {
                c.enqueued_packets += 1;
                c.enqueued_bytes += u64::from(arena.get(id).size_bytes);
                c.trimmed += 1;
            }
            Admit::QueuedEvicting(v) => {
                c.enqueued_packets += 1;
                c.enqueued_bytes += size;
                c.dropped_overflow += 1;
                dropped[0] = Some(v);
            }
            Admit::Dropped(cause) => {
                match cause {
                    DropCause::Overflow => c.dropped_overflow += 1,
                    DropCause::Aqm => c.dropped_aqm += 1,
                }
                dropped[0] = Some(id);
            }
            Admit::DroppedEvicting(v) => {
                c.dropped_overflow += 2;
                dropped = [Some(v), Some(id)];
            }
        }
        c.max_occupancy_bytes = c.max_occupancy_bytes.max(self.queue.bytes());
        let mut s = self.kick(now, arena);
        s.dropped = dropped;
        s
    }

    /// The time the driver was given in [`Service::wake_at`] has come: the line is free for the next
    /// queued packet.
    #[inline(always)]
    pub fn wake(&mut self, now: Time, arena: &PacketArena) -> Service {
        self.wake_pending = false;
        self.kick(now, arena)
    }

    /// When the line can start on the next queued packet (`None` with an empty queue); it may be in
    /// the past while the driver has not served the port yet.
    pub fn next_departure(&self) -> Option<Time> {
        (!self.queue.is_empty()).then_some(self.busy_until)
    }

    /// Starts on the head of the queue if the line is free, or asks to be woken when it frees.
    #[inline(always)]
    fn kick(&mut self, now: Time, arena: &PacketArena) -> Service {
        if self.wake_pending || self.queue.is_empty() {
            return NOTHING;
        }
        if self.busy_until > now {
            self.wake_pending = true;
            return Service {
                wake_at: Some(self.busy_until),
                ..NOTHING
            };
        }
        match self.queue.dequeue(arena, now.0) {
            Some(id) => self.transmit(now, id, arena.get(id).size_bytes as u64),
            None => NOTHING,
        }
    }

    /// Puts `id` (`size` bytes) on the wire: the line is busy for its serialisation, and the packet
    /// arrives at the peer after that plus the propagation delay, unless the link is down or loses it.
    #[inline(always)]
    fn transmit(&mut self, now: Time, id: PktId, size: u64) -> Service {
        if self.last_serialization.0 != size {
            self.last_serialization = (size, serialization_time(size, self.rate_bps));
        }
        // Plain sums of finite times: `Time + Dur` saturates (for `Time::MAX`), which cost two
        // instructions more for each of these on every packet-hop.
        self.busy_until = Time(now.0 + self.last_serialization.1 .0);
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += size;
        let arrives = if !self.up {
            self.counters.dropped_link_down += 1;
            None
        } else if self.loss.lose(&mut self.rng) {
            self.counters.dropped_link_loss += 1;
            None
        } else {
            Some(Time(self.busy_until.0 + self.delay.0))
        };
        let wake_at = (!self.queue.is_empty()).then(|| {
            self.wake_pending = true;
            self.busy_until
        });
        Service {
            dropped: [None, None],
            sent: Some(Departure { id, arrives }),
            wake_at,
        }
    }

    pub fn counters(&self) -> &PortCounters {
        &self.counters
    }

    /// Packets waiting in the queue (not the one on the wire).
    pub fn queued_packets(&self) -> usize {
        self.queue.packets()
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    pub fn delay(&self) -> Dur {
        self.delay
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    /// A packet being serialised keeps its old rate; the next one uses the new one.
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps;
        self.last_serialization = (u64::MAX, Dur(0));
    }

    pub fn set_delay(&mut self, delay: Dur) {
        self.delay = delay;
    }

    /// Down, the port still serialises its queue but the link drops every packet.
    pub fn set_up(&mut self, up: bool) {
        self.up = up;
    }

    pub fn set_loss(&mut self, cfg: LossConfig) {
        self.loss = LossModel::new(cfg);
    }
}

#[cfg(test)]
mod tests;
