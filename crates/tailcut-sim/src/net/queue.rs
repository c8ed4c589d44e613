//! The output queue of a port: one or more traffic classes, each a FIFO with its own byte limit, under
//! a shared port buffer, served by strict priority or weighted round robin.

use super::aqm::{red_should_signal, AqmConfig, RedState};
use crate::arena::{PacketArena, PktId};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use tailcut_proto::rng::Rng;
use tailcut_proto::units::Bytes;
use tailcut_proto::Ecn;

/// How a port serves its classes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedConfig {
    /// Lower class index first.
    #[default]
    StrictPriority,
    /// Weighted round robin by packets: class i sends up to `weights[i]` packets per round.
    Wrr { weights: Vec<u32> },
}

/// One traffic class of a port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// Packet classes (DSCP-like values in `Packet::class`) mapped to this queue.
    pub classes: Vec<u8>,
    /// Byte limit of this class (it also shares the port buffer); absent = the port buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Bytes>,
    /// Queue discipline of this class; absent = the port's discipline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmConfig>,
}

/// Why a packet was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    Overflow,
    Aqm,
}

/// What happened to an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Queued (possibly CE-marked).
    Queued {
        marked: bool,
    },
    /// Payload cut (CP): the header alone was queued.
    Trimmed,
    /// Queued, but another packet was pushed out (random drop).
    QueuedEvicting(PktId),
    Dropped(DropCause),
    /// A queued packet was pushed out and the arrival still did not fit: both are lost.
    DroppedEvicting(PktId),
}

struct ClassQueue {
    fifo: VecDeque<PktId>,
    bytes: u64,
    limit_bytes: u64,
    aqm: AqmConfig,
    red: RedState,
    weight: u32,
    credit: u32,
}

/// A port's queues.
pub struct PortQueue {
    classes: Vec<ClassQueue>,
    class_of: [u8; 256],
    wrr: bool,
    rr_next: usize,
    buffer_bytes: u64,
    bytes: u64,
    packets: usize,
    /// Serialisation time of a 1500-byte packet, for RED's idle correction.
    typical_tx_ns: u64,
    /// Cut headers waiting ahead of all data (`AqmConfig::Trim` with `priority_headers`).
    hdr_fifo: VecDeque<PktId>,
    hdr_bytes: u64,
}

impl PortQueue {
    pub fn new(
        buffer_bytes: u64,
        aqm: &AqmConfig,
        classes: &[ClassConfig],
        sched: &SchedConfig,
        typical_tx_ns: u64,
    ) -> PortQueue {
        let mut class_of = [0u8; 256];
        let mut qs = Vec::new();
        if classes.is_empty() {
            qs.push(ClassQueue::new(buffer_bytes, aqm.clone(), 1));
        } else {
            for (i, c) in classes.iter().enumerate() {
                let weight = match sched {
                    SchedConfig::Wrr { weights } => weights.get(i).copied().unwrap_or(1),
                    SchedConfig::StrictPriority => 1,
                };
                let limit = c.limit.map(|b| b.0).unwrap_or(buffer_bytes).min(buffer_bytes);
                qs.push(ClassQueue::new(
                    limit,
                    c.aqm.clone().unwrap_or_else(|| aqm.clone()),
                    weight,
                ));
                for &k in &c.classes {
                    class_of[k as usize] = i as u8;
                }
            }
        }
        PortQueue {
            classes: qs,
            class_of,
            wrr: matches!(sched, SchedConfig::Wrr { .. }),
            rr_next: 0,
            buffer_bytes,
            bytes: 0,
            packets: 0,
            typical_tx_ns,
            hdr_fifo: VecDeque::new(),
            hdr_bytes: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn packets(&self) -> usize {
        self.packets
    }

    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Offers an arriving packet to its class queue.
    pub fn enqueue(&mut self, arena: &mut PacketArena, id: PktId, now_ns: u64, rng: &mut Rng) -> Admit {
        let pkt = arena.get(id);
        let size = pkt.size_bytes as u64;
        let ect = pkt.ecn != Ecn::NotEct;
        let ci = self.class_of[pkt.class as usize] as usize;
        let port_free = self.buffer_bytes.saturating_sub(self.bytes);
        if matches!(self.classes[ci].aqm, AqmConfig::Trim { .. }) {
            return self.enqueue_trim(arena, ci, id);
        }
        let q = &mut self.classes[ci];
        let fits = size <= port_free && q.bytes + size <= q.limit_bytes;
        let mut marked = false;
        match q.aqm {
            AqmConfig::DropTail => {
                if !fits {
                    return Admit::Dropped(DropCause::Overflow);
                }
            }
            AqmConfig::Ecn { k } => {
                if !fits {
                    return Admit::Dropped(DropCause::Overflow);
                }
                marked = ect && q.bytes >= k.0;
            }
            AqmConfig::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                mark,
            } => {
                let u: f64 = rng.random();
                let signal = red_should_signal(
                    &mut q.red,
                    (min_th.0, max_th.0, max_p, w_q),
                    q.bytes,
                    now_ns,
                    self.typical_tx_ns,
                    u,
                );
                if !fits {
                    return Admit::Dropped(DropCause::Overflow);
                }
                if signal {
                    if mark && ect {
                        marked = true;
                    } else {
                        return Admit::Dropped(DropCause::Aqm);
                    }
                }
            }
            AqmConfig::Pfabric => {
                if !fits {
                    // Sec. 4.2: drop the lowest-priority packet (largest value), the arrival on a tie.
                    let prio = pkt.priority;
                    let worst = q
                        .fifo
                        .iter()
                        .enumerate()
                        .max_by_key(|&(i, &id)| (arena.get(id).priority, i))
                        .map(|(i, &id)| (i, arena.get(id).priority));
                    let Some((pick, _)) = worst.filter(|&(_, p)| p > prio) else {
                        return Admit::Dropped(DropCause::Overflow);
                    };
                    let victim = q.fifo.remove(pick).expect("index in range");
                    return self.admit_after_eviction(arena, ci, id, size, victim);
                }
            }
            AqmConfig::Trim { .. } => unreachable!("handled by enqueue_trim"),
            AqmConfig::RandomDrop => {
                if !fits {
                    // The victim is uniform over the queued packets and the arrival (ns-2 DropRand).
                    let n = q.fifo.len();
                    let pick = rng.random_range(0..=n);
                    if pick == n {
                        return Admit::Dropped(DropCause::Overflow);
                    }
                    let victim = q.fifo.remove(pick).expect("index in range");
                    return self.admit_after_eviction(arena, ci, id, size, victim);
                }
            }
        }
        if marked {
            arena.get_mut(id).ecn = Ecn::Ce;
        }
        self.push(ci, id, size);
        Admit::Queued { marked }
    }

    /// CP (Cheng et al., NSDI'14, "Switch: CP drop processing"): admit the whole packet below the
    /// threshold, else cut its payload and admit the header into the headroom, else drop.
    fn enqueue_trim(&mut self, arena: &mut PacketArena, ci: usize, id: PktId) -> Admit {
        let AqmConfig::Trim {
            header_bytes,
            threshold,
            header_headroom,
            priority_headers,
            ecn_k,
        } = self.classes[ci].aqm
        else {
            unreachable!("enqueue_trim on a trimming class");
        };
        let pkt = arena.get(id);
        let size = u64::from(pkt.size_bytes);
        let ect = pkt.ecn != Ecn::NotEct;
        let has_payload = pkt.payload_len() > 0;
        let q = &self.classes[ci];
        let data_port_bytes = self.bytes - self.hdr_bytes;
        let thr = threshold.map_or(q.limit_bytes, |t| t.0.min(q.limit_bytes));
        if data_port_bytes + size <= self.buffer_bytes && q.bytes + size <= thr {
            let marked = ect && ecn_k.is_some_and(|k| q.bytes >= k.0);
            if marked {
                arena.get_mut(id).ecn = Ecn::Ce;
            }
            self.push(ci, id, size);
            return Admit::Queued { marked };
        }
        // Header-only packets (ACKs, PACKs, cut packets) have nothing to cut and use the headroom as is.
        let hdr = if has_payload {
            header_bytes.0.min(size)
        } else {
            size
        };
        let room = header_headroom.0;
        let fits = if priority_headers {
            self.hdr_bytes + hdr <= room
        } else {
            data_port_bytes + hdr <= self.buffer_bytes + room && q.bytes + hdr <= q.limit_bytes + room
        };
        if !fits {
            return Admit::Dropped(DropCause::Overflow);
        }
        if has_payload {
            let p = arena.get_mut(id);
            p.trimmed = true;
            p.size_bytes = hdr as u32;
        }
        if priority_headers {
            self.hdr_fifo.push_back(id);
            self.hdr_bytes += hdr;
            self.bytes += hdr;
            self.packets += 1;
        } else {
            self.push(ci, id, hdr);
        }
        if has_payload {
            Admit::Trimmed
        } else {
            Admit::Queued { marked: false }
        }
    }

    /// `victim` was taken out of class `ci` to make room for the arrival `id`.
    fn admit_after_eviction(
        &mut self,
        arena: &PacketArena,
        ci: usize,
        id: PktId,
        size: u64,
        victim: PktId,
    ) -> Admit {
        let vsize = arena.get(victim).size_bytes as u64;
        let q = &mut self.classes[ci];
        q.bytes -= vsize;
        self.bytes -= vsize;
        self.packets -= 1;
        // The arrival may still not fit if the victim was smaller than it.
        let q = &self.classes[ci];
        if size > self.buffer_bytes.saturating_sub(self.bytes) || q.bytes + size > q.limit_bytes {
            return Admit::DroppedEvicting(victim);
        }
        self.push(ci, id, size);
        Admit::QueuedEvicting(victim)
    }

    fn push(&mut self, ci: usize, id: PktId, size: u64) {
        let q = &mut self.classes[ci];
        q.fifo.push_back(id);
        q.bytes += size;
        self.bytes += size;
        self.packets += 1;
    }

    /// Admission of an arrival at an empty queue whose port is idle, without queueing it: the packet
    /// can be transmitted at once. Returns `None` when the discipline needs the full path (RED keeps an
    /// average; random drop and per-class limits need the queue), else whether it was CE-marked.
    pub fn admit_to_idle(&mut self, arena: &mut PacketArena, id: PktId) -> Option<bool> {
        if self.packets != 0 {
            return None;
        }
        let pkt = arena.get_mut(id);
        let q = &self.classes[self.class_of[pkt.class as usize] as usize];
        if pkt.size_bytes as u64 > q.limit_bytes.min(self.buffer_bytes) {
            return None;
        }
        match q.aqm {
            AqmConfig::DropTail => Some(false),
            AqmConfig::Ecn { k } => {
                let marked = k.0 == 0 && pkt.ecn != Ecn::NotEct;
                if marked {
                    pkt.ecn = Ecn::Ce;
                }
                Some(marked)
            }
            AqmConfig::Trim { threshold, ecn_k, .. } => {
                if threshold.is_some_and(|t| (pkt.size_bytes as u64) > t.0) {
                    return None;
                }
                let marked = ecn_k.is_some_and(|k| k.0 == 0) && pkt.ecn != Ecn::NotEct;
                if marked {
                    pkt.ecn = Ecn::Ce;
                }
                Some(marked)
            }
            _ => None,
        }
    }

    /// Takes the next packet to transmit.
    pub fn dequeue(&mut self, arena: &PacketArena, now_ns: u64) -> Option<PktId> {
        if self.packets == 0 {
            return None;
        }
        if let Some(id) = self.hdr_fifo.pop_front() {
            let size = arena.get(id).size_bytes as u64;
            self.hdr_bytes -= size;
            self.bytes -= size;
            self.packets -= 1;
            return Some(id);
        }
        let ci = if self.wrr {
            self.next_wrr()
        } else {
            self.classes.iter().position(|q| !q.fifo.is_empty())?
        };
        let q = &mut self.classes[ci];
        let id = if matches!(q.aqm, AqmConfig::Pfabric) {
            // Sec. 4.2: the earliest packet of the flow holding the highest-priority packet (which
            // avoids reordering a flow's packets); ties in priority go to the earliest arrival.
            let best = q
                .fifo
                .iter()
                .enumerate()
                .min_by_key(|&(i, &id)| (arena.get(id).priority, i))
                .map(|(_, &id)| arena.get(id).tuple)?;
            let i = q.fifo.iter().position(|&id| arena.get(id).tuple == best)?;
            q.fifo.remove(i)?
        } else {
            q.fifo.pop_front()?
        };
        let size = arena.get(id).size_bytes as u64;
        q.bytes -= size;
        self.bytes -= size;
        self.packets -= 1;
        if q.fifo.is_empty() && matches!(q.aqm, AqmConfig::Red { .. }) {
            q.red.idle_since_ns = Some(now_ns);
        }
        Some(id)
    }

    fn next_wrr(&mut self) -> usize {
        let n = self.classes.len();
        loop {
            let i = self.rr_next;
            let q = &mut self.classes[i];
            if !q.fifo.is_empty() && q.credit > 0 {
                q.credit -= 1;
                return i;
            }
            // Move on; a new round refills every class's credit.
            self.rr_next = (i + 1) % n;
            if self.rr_next == 0 {
                for q in &mut self.classes {
                    q.credit = q.weight;
                }
            }
        }
    }
}

impl ClassQueue {
    fn new(limit_bytes: u64, aqm: AqmConfig, weight: u32) -> ClassQueue {
        ClassQueue {
            fifo: VecDeque::with_capacity(64),
            bytes: 0,
            limit_bytes,
            aqm,
            red: RedState {
                count: -1,
                ..RedState::default()
            },
            weight: weight.max(1),
            credit: weight.max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailcut_proto::rng::{stream, Stream};
    use tailcut_proto::Packet;

    fn pkt(arena: &mut PacketArena, size: u32, class: u8, ecn: Ecn) -> PktId {
        arena.insert(Packet {
            size_bytes: size,
            class,
            ecn,
            ..Packet::default()
        })
    }

    #[test]
    fn droptail_drops_what_does_not_fit() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let mut q = PortQueue::new(3000, &AqmConfig::DropTail, &[], &SchedConfig::default(), 1200);
        for _ in 0..2 {
            let p = pkt(&mut a, 1500, 0, Ecn::NotEct);
            assert_eq!(q.enqueue(&mut a, p, 0, &mut r), Admit::Queued { marked: false });
        }
        let p = pkt(&mut a, 1500, 0, Ecn::NotEct);
        assert_eq!(
            q.enqueue(&mut a, p, 0, &mut r),
            Admit::Dropped(DropCause::Overflow)
        );
        assert_eq!(q.bytes(), 3000);
    }

    #[test]
    fn ecn_marks_at_threshold_k() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let mut q = PortQueue::new(
            100_000,
            &AqmConfig::Ecn { k: Bytes(3000) },
            &[],
            &SchedConfig::default(),
            1200,
        );
        let marks: Vec<bool> = (0..4)
            .map(|_| {
                let p = pkt(&mut a, 1500, 0, Ecn::Ect0);
                matches!(q.enqueue(&mut a, p, 0, &mut r), Admit::Queued { marked: true })
            })
            .collect();
        assert_eq!(marks, vec![false, false, true, true]);
    }

    /// One class queue per (packet class, optional byte limit), in scheduling order.
    fn class_queues(spec: &[(u8, Option<Bytes>)]) -> Vec<ClassConfig> {
        spec.iter()
            .map(|&(class, limit)| ClassConfig {
                classes: vec![class],
                limit,
                aqm: None,
            })
            .collect()
    }

    #[test]
    fn strict_priority_serves_class_zero_first_and_wrr_interleaves() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let classes = class_queues(&[(1, None), (0, None)]);
        let mut q = PortQueue::new(
            100_000,
            &AqmConfig::DropTail,
            &classes,
            &SchedConfig::StrictPriority,
            1200,
        );
        let lo = pkt(&mut a, 100, 0, Ecn::NotEct);
        let hi = pkt(&mut a, 100, 1, Ecn::NotEct);
        q.enqueue(&mut a, lo, 0, &mut r);
        q.enqueue(&mut a, hi, 0, &mut r);
        assert_eq!(q.dequeue(&a, 0), Some(hi));
        assert_eq!(q.dequeue(&a, 0), Some(lo));

        let mut q = PortQueue::new(
            100_000,
            &AqmConfig::DropTail,
            &classes,
            &SchedConfig::Wrr { weights: vec![1, 2] },
            1200,
        );
        let mut ids = Vec::new();
        for i in 0..6 {
            let p = pkt(&mut a, 100, (i % 2) as u8, Ecn::NotEct);
            ids.push(p);
            q.enqueue(&mut a, p, 0, &mut r);
        }
        let served: Vec<u8> = std::iter::from_fn(|| q.dequeue(&a, 0))
            .map(|id| a.get(id).class)
            .collect();
        assert_eq!(served, vec![1, 0, 0, 1, 0, 1]);
    }

    #[test]
    fn per_class_limit_applies() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let classes = class_queues(&[(0, None), (1, Some(Bytes(1500)))]);
        let mut q = PortQueue::new(
            100_000,
            &AqmConfig::DropTail,
            &classes,
            &SchedConfig::StrictPriority,
            1200,
        );
        let p1 = pkt(&mut a, 1500, 1, Ecn::NotEct);
        let p2 = pkt(&mut a, 1500, 1, Ecn::NotEct);
        assert!(matches!(q.enqueue(&mut a, p1, 0, &mut r), Admit::Queued { .. }));
        assert_eq!(
            q.enqueue(&mut a, p2, 0, &mut r),
            Admit::Dropped(DropCause::Overflow)
        );
    }

    fn prio_pkt(arena: &mut PacketArena, prio: u64, port: u16) -> PktId {
        arena.insert(Packet {
            size_bytes: 1000,
            priority: prio,
            tuple: tailcut_proto::FiveTuple {
                src_port: port,
                ..Default::default()
            },
            ..Packet::default()
        })
    }

    #[test]
    fn pfabric_dequeues_by_priority_and_drops_the_lowest() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let mut q = PortQueue::new(3000, &AqmConfig::Pfabric, &[], &SchedConfig::default(), 1200);
        let p50 = prio_pkt(&mut a, 50, 1);
        let p10 = prio_pkt(&mut a, 10, 2);
        let p30 = prio_pkt(&mut a, 30, 3);
        for p in [p50, p10, p30] {
            assert_eq!(q.enqueue(&mut a, p, 0, &mut r), Admit::Queued { marked: false });
        }
        // Full: an arrival of priority 20 pushes out the lowest-priority packet (50).
        let p20 = prio_pkt(&mut a, 20, 4);
        assert_eq!(q.enqueue(&mut a, p20, 0, &mut r), Admit::QueuedEvicting(p50));
        // An arrival no better than every queued packet is itself dropped (30 ties with the worst).
        let p30b = prio_pkt(&mut a, 30, 5);
        assert_eq!(
            q.enqueue(&mut a, p30b, 0, &mut r),
            Admit::Dropped(DropCause::Overflow)
        );
        let order: Vec<PktId> = std::iter::from_fn(|| q.dequeue(&a, 0)).collect();
        assert_eq!(order, vec![p10, p20, p30]);
    }

    #[test]
    fn pfabric_sends_the_earliest_packet_of_the_best_flow() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let mut q = PortQueue::new(100_000, &AqmConfig::Pfabric, &[], &SchedConfig::default(), 1200);
        // Flow 1's first packet has priority 40, its later one 5 (remaining size shrank).
        let f1a = prio_pkt(&mut a, 40, 1);
        let f2 = prio_pkt(&mut a, 20, 2);
        let f1b = prio_pkt(&mut a, 5, 1);
        for p in [f1a, f2, f1b] {
            q.enqueue(&mut a, p, 0, &mut r);
        }
        let order: Vec<PktId> = std::iter::from_fn(|| q.dequeue(&a, 0)).collect();
        assert_eq!(order, vec![f1a, f1b, f2]);
    }

    #[test]
    fn red_drops_only_above_min_th_and_marks_with_ecn() {
        let cfg = |mark| AqmConfig::Red {
            min_th: Bytes(3000),
            max_th: Bytes(6000),
            max_p: 1.0,
            w_q: 1.0,
            mark,
        };
        for mark in [false, true] {
            let mut a = PacketArena::default();
            let mut r = stream(3, Stream::Port, 0);
            let mut q = PortQueue::new(100_000, &cfg(mark), &[], &SchedConfig::default(), 1200);
            let mut outcomes = Vec::new();
            for _ in 0..8 {
                let p = pkt(&mut a, 1500, 0, Ecn::Ect0);
                outcomes.push(q.enqueue(&mut a, p, 0, &mut r));
            }
            // w_q = 1: the average is the instantaneous queue. Below min_th nothing happens; at
            // 2 max_th and above (gentle) every packet is signalled.
            assert!(outcomes[..2]
                .iter()
                .all(|o| *o == Admit::Queued { marked: false }));
            let signalled = outcomes
                .iter()
                .filter(|o| matches!(o, Admit::Queued { marked: true } | Admit::Dropped(DropCause::Aqm)))
                .count();
            assert!(signalled >= 1, "{outcomes:?}");
            if mark {
                assert!(outcomes.iter().all(|o| matches!(o, Admit::Queued { .. })));
            } else {
                assert!(outcomes
                    .iter()
                    .all(|o| !matches!(o, Admit::Queued { marked: true })));
            }
        }
    }

    #[test]
    fn random_drop_keeps_occupancy_within_buffer() {
        let mut a = PacketArena::default();
        let mut r = stream(9, Stream::Port, 0);
        let mut q = PortQueue::new(15_000, &AqmConfig::RandomDrop, &[], &SchedConfig::default(), 1200);
        let mut evicted = 0;
        for _ in 0..50 {
            let p = pkt(&mut a, 1500, 0, Ecn::NotEct);
            if let Admit::QueuedEvicting(_) = q.enqueue(&mut a, p, 0, &mut r) {
                evicted += 1;
            }
            assert!(q.bytes() <= 15_000);
        }
        assert!(
            evicted > 20,
            "random drop should usually evict a queued packet, got {evicted}"
        );
    }

    fn data_pkt(arena: &mut PacketArena, size: u32, ecn: Ecn) -> PktId {
        arena.insert(Packet {
            size_bytes: size,
            ecn,
            header: tailcut_proto::Header::Tcp(tailcut_proto::TcpHeader {
                payload_len: size - 40,
                ..Default::default()
            }),
            ..Packet::default()
        })
    }

    fn trim_cfg(priority_headers: bool, ecn_k: Option<Bytes>) -> AqmConfig {
        AqmConfig::Trim {
            header_bytes: Bytes(66),
            threshold: None,
            header_headroom: Bytes(200),
            priority_headers,
            ecn_k,
        }
    }

    #[test]
    fn trim_cuts_when_full_and_drops_a_header_only_when_even_it_does_not_fit() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let mut q = PortQueue::new(3000, &trim_cfg(false, None), &[], &SchedConfig::default(), 1200);
        let full: Vec<PktId> = (0..2).map(|_| data_pkt(&mut a, 1500, Ecn::NotEct)).collect();
        for &p in &full {
            assert_eq!(q.enqueue(&mut a, p, 0, &mut r), Admit::Queued { marked: false });
        }
        // The buffer is full: the next three arrivals are cut to 66-byte headers (3 x 66 <= 200).
        let mut cut = Vec::new();
        for _ in 0..3 {
            let p = data_pkt(&mut a, 1500, Ecn::NotEct);
            assert_eq!(q.enqueue(&mut a, p, 0, &mut r), Admit::Trimmed);
            assert!(a.get(p).trimmed);
            assert_eq!(a.get(p).size_bytes, 66);
            assert_eq!(a.get(p).payload_len(), 0);
            cut.push(p);
        }
        assert_eq!(q.bytes(), 3000 + 3 * 66);
        // A fourth header would exceed the headroom: dropped, not cut.
        let p = data_pkt(&mut a, 1500, Ecn::NotEct);
        assert_eq!(
            q.enqueue(&mut a, p, 0, &mut r),
            Admit::Dropped(DropCause::Overflow)
        );
        assert!(!a.get(p).trimmed);
        // Headers stay in FIFO order behind the data (the slides' single queue).
        let order: Vec<PktId> = std::iter::from_fn(|| q.dequeue(&a, 0)).collect();
        assert_eq!(order, [full.clone(), cut.clone()].concat());
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn trim_threshold_and_pure_acks_use_the_headroom_uncut() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let cfg = AqmConfig::Trim {
            header_bytes: Bytes(66),
            threshold: Some(Bytes(1500)),
            header_headroom: Bytes(1500),
            priority_headers: false,
            ecn_k: None,
        };
        let mut q = PortQueue::new(10_000, &cfg, &[], &SchedConfig::default(), 1200);
        let p = data_pkt(&mut a, 1500, Ecn::NotEct);
        assert_eq!(q.enqueue(&mut a, p, 0, &mut r), Admit::Queued { marked: false });
        // Above the cut threshold (htsim cuts at maxsize / 2): cut although the buffer has room.
        let p = data_pkt(&mut a, 1500, Ecn::NotEct);
        assert_eq!(q.enqueue(&mut a, p, 0, &mut r), Admit::Trimmed);
        // A pure ACK has nothing to cut: admitted whole, not counted as a cut.
        let ack = pkt(&mut a, 40, 0, Ecn::NotEct);
        assert_eq!(q.enqueue(&mut a, ack, 0, &mut r), Admit::Queued { marked: false });
        assert!(!a.get(ack).trimmed);
        assert_eq!(a.get(ack).size_bytes, 40);
    }

    #[test]
    fn trim_priority_headers_jump_the_data_and_ecn_marks_at_k() {
        let mut a = PacketArena::default();
        let mut r = stream(1, Stream::Port, 0);
        let mut q = PortQueue::new(
            3000,
            &trim_cfg(true, Some(Bytes(1500))),
            &[],
            &SchedConfig::default(),
            1200,
        );
        let d1 = data_pkt(&mut a, 1500, Ecn::Ect0);
        let d2 = data_pkt(&mut a, 1500, Ecn::Ect0);
        assert_eq!(q.enqueue(&mut a, d1, 0, &mut r), Admit::Queued { marked: false });
        assert_eq!(q.enqueue(&mut a, d2, 0, &mut r), Admit::Queued { marked: true });
        let h = data_pkt(&mut a, 1500, Ecn::Ect0);
        assert_eq!(q.enqueue(&mut a, h, 0, &mut r), Admit::Trimmed);
        let order: Vec<PktId> = std::iter::from_fn(|| q.dequeue(&a, 0)).collect();
        assert_eq!(order, vec![h, d1, d2]);
        assert_eq!(q.bytes(), 0);
        assert!(q.is_empty());
    }
}
