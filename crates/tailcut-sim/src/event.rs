//! The event list. Events are totally ordered by (time, insertion sequence), so a run is a pure function
//! of its inputs; ties never depend on hashing or allocation order.
//!
//! Most events of a packet simulation fall a few microseconds ahead of `now` (a transmission, a
//! propagation delay), so the list is a timing wheel with one bucket per nanosecond over the next
//! 16.4 us (a 9 KB packet at 10 Gbit/s plus a hop's delay, or a 1500 B packet at 1 Gbit/s); later events
//! wait in a binary heap. A wider wheel cost memory and no instructions: 65,536 buckets held 2 MiB more
//! on benchmark (a) (their headers, and each bucket keeps its capacity). Every entry of a bucket has the same time, so a bucket is
//! a FIFO in sequence order and nothing is ever sorted: an entry that waited in the heap for the same
//! nanosecond was pushed before any ring entry of that slot (the ring only covers slots after the heap
//! ones were pushed), so heap entries go first. A bitmap finds the next non-empty bucket. Push and pop
//! are O(1) for near events.

use crate::arena::PktId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tailcut_proto::Time;

/// Indices into the simulator's tables.
pub type PortId = u32;
pub type NodeId = u32;
pub type EngineId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port finished serialising a packet and others wait behind it.
    TxDone(PortId),
    /// A packet reaches the far end of the link it is on (the arena records which).
    Arrive(PktId),
    /// An engine's deadline (valid only if it still equals the engine's scheduled time).
    EngineTimer(EngineId),
    /// An engine held back by its host-queue budget (TCP small queues) may send again.
    HostQueueWake(EngineId),
    /// A host shim's deadline.
    ShimTimer(u32),
    /// A workload flow starts.
    FlowStart(u32),
    /// An application wakes up to do what waited for it (`host_delay`; an index into the
    /// simulation's pending application work).
    AppWake(u32),
    /// A scheduled fault (link down/up, rate change, loss change).
    Fault(u32),
}

/// An event that waits beyond the wheel's horizon: key (time, seq), payload beside it; 24 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    key: (u64, u64),
    event: Event,
}

impl Entry {
    fn time(&self) -> u64 {
        self.key.0
    }
}

impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

const BUCKETS: usize = 1 << 14;
// A fixed-size array indexed modulo its length needs no bounds checks (12 instructions per packet-hop
// on benchmark (a) against a `Vec` of buckets).
const WORDS: usize = BUCKETS / 64;

/// The bucket of a time: its slot modulo the wheel's size.
fn bucket(slot: u64) -> usize {
    (slot % BUCKETS as u64) as usize
}

pub struct EventQueue {
    /// The time (ns) of the bucket being served.
    cur_slot: u64,
    /// The next entry of the current bucket to serve. The bucket is served in place (events pushed for
    /// the current nanosecond are appended to it) and cleared when exhausted: a bucket holds only its
    /// time's events, so the time is not stored with them.
    head: usize,
    buckets: Box<[Vec<Event>; BUCKETS]>,
    bitmap: [u64; WORDS],
    overflow: BinaryHeap<Reverse<Entry>>,
    len: usize,
    seq: u64,
    popped: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            cur_slot: 0,
            head: 0,
            buckets: vec![Vec::new(); BUCKETS]
                .into_boxed_slice()
                .try_into()
                .expect("BUCKETS entries"),
            bitmap: [0; WORDS],
            overflow: BinaryHeap::new(),
            len: 0,
            seq: 0,
            popped: 0,
        }
    }
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, at: Time, event: Event) {
        self.len += 1;
        let slot = at.0;
        debug_assert!(slot >= self.cur_slot, "events are never scheduled in the past");
        if slot < self.cur_slot + BUCKETS as u64 {
            // The current nanosecond's bucket included: it goes last.
            let b = bucket(slot);
            self.buckets[b].push(event);
            self.bitmap[b / 64] |= 1 << (b % 64);
        } else {
            self.push_far(slot, event);
        }
    }

    /// An event beyond the ring's horizon goes to the heap. Out of line, so that `push` stays small
    /// enough to be inlined at its every call site (it was not once the run loop grew: +40
    /// instructions per packet-hop on benchmark (a)).
    #[cold]
    #[inline(never)]
    fn push_far(&mut self, slot: u64, event: Event) {
        // Only heap entries need the sequence number: the ring is FIFO per nanosecond.
        self.overflow.push(Reverse(Entry {
            key: (slot, self.seq),
            event,
        }));
        self.seq += 1;
    }

    /// The next event if it is due by `limit` (inclusive). An event after `limit` stays queued.
    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, Event)> {
        if self.head < self.buckets[bucket(self.cur_slot)].len() {
            if self.cur_slot > limit.0 {
                return None;
            }
        } else if !self.advance() || self.cur_slot > limit.0 {
            return None;
        }
        self.head += 1;
        let event = self.buckets[bucket(self.cur_slot)][self.head - 1];
        self.len -= 1;
        self.popped += 1;
        Some((Time(self.cur_slot), event))
    }

    /// The current bucket is exhausted: clears it and moves to the next non-empty one (false when the
    /// list is empty). Inlined into the run loop: out of line (a call and six saved registers every
    /// ~2 events) it cost benchmark (a) ~29 instructions per packet-hop.
    #[inline]
    fn advance(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        let cur = bucket(self.cur_slot);
        self.buckets[cur].clear();
        self.bitmap[cur / 64] &= !(1 << (cur % 64));
        self.head = 0;
        let ring = self.next_ring_slot();
        let over = self.overflow.peek().map(|Reverse(e)| e.time());
        let target = match (ring, over) {
            (Some(r), Some(o)) => r.min(o),
            (Some(r), None) => r,
            (None, Some(o)) => o,
            (None, None) => unreachable!("len > 0 but no events"),
        };
        self.cur_slot = target;
        if over == Some(target) {
            self.take_from_heap(target);
        }
        true
    }

    /// Heap entries of the nanosecond about to be served go first in its bucket: they were pushed
    /// before any ring entry of this slot (the ring only covers slots after the heap ones were pushed).
    /// Rare and out of line, so that serving a bucket tests nothing but its length (a separate list of
    /// early entries cost 11 instructions per packet-hop on benchmark (a)).
    #[cold]
    #[inline(never)]
    fn take_from_heap(&mut self, target: u64) {
        let mut early = Vec::new();
        while let Some(Reverse(e)) = self.overflow.peek() {
            if e.time() != target {
                break;
            }
            let Reverse(e) = self.overflow.pop().expect("peeked");
            early.push(e.event);
        }
        let b = bucket(target);
        self.buckets[b].splice(0..0, early);
        self.bitmap[b / 64] |= 1 << (b % 64);
    }

    /// The absolute slot of the first non-empty ring bucket after the current one.
    fn next_ring_slot(&self) -> Option<u64> {
        let start = bucket(self.cur_slot + 1);
        let mut w = start / 64;
        let mut bits = self.bitmap[w] & (!0u64 << (start % 64));
        for _ in 0..=WORDS {
            if bits != 0 {
                let b = w * 64 + bits.trailing_zeros() as usize;
                let dist = (b + BUCKETS - start) % BUCKETS;
                return Some(self.cur_slot + 1 + dist as u64);
            }
            w = (w + 1) % WORDS;
            bits = self.bitmap[w];
        }
        None
    }

    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.pop_until(Time(u64::MAX))
    }

    /// The time of the next event without taking it (None when the list is empty): what the run loop's
    /// watchdog looks at once `pop_until` has nothing due. It reads and never moves the list, so that
    /// `advance` keeps a single caller and stays inlined into the run loop (a second caller made LLVM
    /// keep it out of line: +80 instructions per packet-hop on benchmark (a)).
    pub fn peek_time(&self) -> Option<Time> {
        if self.len == 0 {
            return None;
        }
        if self.head < self.buckets[bucket(self.cur_slot)].len() {
            return Some(Time(self.cur_slot));
        }
        let over = self.overflow.peek().map(|Reverse(e)| e.time());
        self.next_ring_slot().into_iter().chain(over).min().map(Time)
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Events still queued (the current bucket keeps its served entries until it is exhausted).
    fn events(&self) -> impl Iterator<Item = &Event> {
        let cur = bucket(self.cur_slot);
        self.buckets[cur][self.head..]
            .iter()
            .chain(
                self.buckets
                    .iter()
                    .enumerate()
                    .filter(move |&(b, _)| b != cur)
                    .flat_map(|(_, v)| v),
            )
            .chain(self.overflow.iter().map(|Reverse(e)| &e.event))
    }

    /// Packets still travelling on wires (used by the conservation check).
    pub fn packets_on_wires(&self) -> usize {
        self.events().filter(|e| matches!(e, Event::Arrive(_))).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Time(5), Event::FlowStart(1));
        q.push(Time(3), Event::FlowStart(2));
        q.push(Time(5), Event::FlowStart(3));
        q.push(Time(3), Event::FlowStart(4));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), Event::FlowStart(2)),
                (Time(3), Event::FlowStart(4)),
                (Time(5), Event::FlowStart(1)),
                (Time(5), Event::FlowStart(3)),
            ]
        );
    }

    #[test]
    fn pop_until_leaves_later_events_queued() {
        let mut q = EventQueue::default();
        q.push(Time(5), Event::FlowStart(1));
        q.push(Time(100_000), Event::FlowStart(2));
        assert_eq!(q.pop_until(Time(4)), None);
        assert_eq!(q.pop_until(Time(5)), Some((Time(5), Event::FlowStart(1))));
        assert_eq!(q.pop_until(Time(99_999)), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.packets_on_wires(), 0);
        q.push(Time(100_000), Event::Arrive(PktId(7)));
        assert_eq!(q.packets_on_wires(), 1);
        assert_eq!(q.pop(), Some((Time(100_000), Event::FlowStart(2))));
        assert_eq!(q.pop(), Some((Time(100_000), Event::Arrive(PktId(7)))));
        assert_eq!(q.pop(), None);
    }

    proptest! {
        /// The wheel pops exactly what a reference heap ordered by (time, seq) pops, for interleaved
        /// pushes (never before the last popped time) and pops spanning the horizon and the overflow.
        #[test]
        fn matches_a_reference_heap(ops in proptest::collection::vec((0u8..3, 0u64..20_000_000), 1..400)) {
            let mut q = EventQueue::default();
            let mut reference = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u32);
            for (op, dt) in ops {
                if op < 2 {
                    // Mostly near events, some far beyond the wheel's horizon.
                    let at = now + if op == 0 { dt % 10_000 } else { dt };
                    q.push(Time(at), Event::FlowStart(seq));
                    reference.push(Reverse((at, seq)));
                    seq += 1;
                } else {
                    let got = q.pop();
                    let want = reference.pop().map(|Reverse((t, s))| (Time(t), Event::FlowStart(s)));
                    prop_assert_eq!(got, want);
                    if let Some((t, _)) = got { now = t.0; }
                }
                prop_assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse((t, s))) = reference.pop() {
                prop_assert_eq!(q.pop(), Some((Time(t), Event::FlowStart(s))));
            }
            prop_assert_eq!(q.pop(), None);
        }
    }
}
