//! The output queue of a port: one or more traffic classes, each a FIFO with its own byte limit and
//! discipline under a shared port buffer, served by strict priority or weighted round robin.

use super::trim::{HeaderQueue, Occupancy, TrimDecision};
use super::{Admit, Decision, Discipline};
use crate::arena::{PacketArena, PktId};
use crate::net::aqm::AqmConfig;
use crate::net::queue::{ClassConfig, SchedConfig};
use std::collections::VecDeque;
use tailcut_proto::rng::Rng;
use tailcut_proto::Ecn;

struct ClassQueue {
    fifo: VecDeque<PktId>,
    bytes: u64,
    limit_bytes: u64,
    disc: Discipline,
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
    /// Cut headers waiting ahead of all data (a trimming class with `priority_headers`).
    headers: Option<HeaderQueue>,
    /// One FIFO class and nothing ahead of it (no cut headers, no WRR, no pFabric pick): most ports,
    /// served inline by `dequeue`.
    one_fifo: bool,
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
        // Sized to the classes: a growing `Vec` holds four (512 B per port, 2.4 MB of a k = 16 fat-tree).
        let mut qs = Vec::with_capacity(classes.len().max(1));
        if classes.is_empty() {
            qs.push(ClassQueue::new(buffer_bytes, aqm, 1));
        } else {
            for (i, c) in classes.iter().enumerate() {
                let weight = match sched {
                    SchedConfig::Wrr { weights } => weights.get(i).copied().unwrap_or(1),
                    SchedConfig::StrictPriority => 1,
                };
                let limit = c.limit.map(|b| b.0).unwrap_or(buffer_bytes).min(buffer_bytes);
                qs.push(ClassQueue::new(limit, c.aqm.as_ref().unwrap_or(aqm), weight));
                for &k in &c.classes {
                    class_of[k as usize] = i as u8;
                }
            }
        }
        let priority_headers = qs
            .iter()
            .any(|q| matches!(q.disc, Discipline::Trim(t) if t.priority_headers));
        let one_fifo = !priority_headers
            && !matches!(sched, SchedConfig::Wrr { .. })
            && qs.len() == 1
            && !matches!(qs[0].disc, Discipline::Pfabric);
        PortQueue {
            one_fifo,
            classes: qs,
            class_of,
            wrr: matches!(sched, SchedConfig::Wrr { .. }),
            rr_next: 0,
            buffer_bytes,
            bytes: 0,
            packets: 0,
            typical_tx_ns,
            headers: priority_headers.then(|| HeaderQueue {
                fifo: VecDeque::new(),
                bytes: 0,
            }),
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

    /// Offers an arriving packet to its class queue. Inlined into the port's `offer` (one call site):
    /// ~12 instructions per packet-hop less on benchmark (a). `#[inline]` was no longer enough once
    /// switch forwarding inlined `offer` (6 more).
    #[inline(always)]
    pub fn enqueue(&mut self, arena: &mut PacketArena, id: PktId, now_ns: u64, rng: &mut Rng) -> Admit {
        let pkt = arena.get(id);
        let size = pkt.size_bytes as u64;
        let ci = self.class_of[pkt.class as usize] as usize;
        if let Discipline::Trim(_) = self.classes[ci].disc {
            return self.enqueue_trim(arena, ci, id);
        }
        let port_free = self.buffer_bytes.saturating_sub(self.bytes);
        let q = &mut self.classes[ci];
        let fits = size <= port_free && q.bytes + size <= q.limit_bytes;
        let decision = q.disc.decide(
            pkt,
            fits,
            &q.fifo,
            q.bytes,
            arena,
            now_ns,
            self.typical_tx_ns,
            rng,
        );
        match decision {
            Decision::Admit { marked } => {
                if marked {
                    arena.get_mut(id).ecn = Ecn::Ce;
                }
                self.push(ci, id, size);
                Admit::Queued { marked }
            }
            Decision::Drop(cause) => Admit::Dropped(cause),
            Decision::Evict(i) => {
                let victim = q.fifo.remove(i).expect("index in range");
                self.admit_after_eviction(arena, ci, id, size, victim)
            }
        }
    }

    fn enqueue_trim(&mut self, arena: &mut PacketArena, ci: usize, id: PktId) -> Admit {
        let Discipline::Trim(trim) = self.classes[ci].disc else {
            unreachable!("enqueue_trim on a trimming class");
        };
        let pkt = arena.get(id);
        let size = u64::from(pkt.size_bytes);
        let header_bytes = self.headers.as_ref().map_or(0, |h| h.bytes);
        let q = &self.classes[ci];
        let occupancy = Occupancy {
            class_bytes: q.bytes,
            class_limit: q.limit_bytes,
            data_bytes: self.bytes - header_bytes,
            buffer: self.buffer_bytes,
            header_bytes,
        };
        match trim.decide(size, pkt.ecn != Ecn::NotEct, pkt.payload_len() > 0, &occupancy) {
            TrimDecision::Whole { marked } => {
                if marked {
                    arena.get_mut(id).ecn = Ecn::Ce;
                }
                self.push(ci, id, size);
                Admit::Queued { marked }
            }
            TrimDecision::Header { bytes, cut } => {
                if cut {
                    let p = arena.get_mut(id);
                    p.trimmed = true;
                    p.size_bytes = bytes as u32;
                    // A TCP segment's bytes are all payload (its header is the record); a datagram's
                    // bytes hold its own header (CloudBurst's), which a trimmer keeps.
                    if p.tcp().is_some() {
                        arena.cut_payload(id);
                    }
                }
                match self.headers.as_mut().filter(|_| trim.priority_headers) {
                    Some(h) => {
                        h.fifo.push_back(id);
                        h.bytes += bytes;
                        self.bytes += bytes;
                        self.packets += 1;
                    }
                    None => self.push(ci, id, bytes),
                }
                if cut {
                    Admit::Trimmed
                } else {
                    Admit::Queued { marked: false }
                }
            }
            TrimDecision::Drop => Admit::Dropped(super::DropCause::Overflow),
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
    /// can be transmitted at once. Returns `None` when the discipline needs the full path (or the
    /// packet exceeds the buffer), else whether it was CE-marked.
    #[inline]
    pub fn admit_to_idle(&mut self, arena: &mut PacketArena, id: PktId) -> Option<bool> {
        if self.packets != 0 {
            return None;
        }
        let pkt = arena.get_mut(id);
        let q = &self.classes[self.class_of[pkt.class as usize] as usize];
        if pkt.size_bytes as u64 > q.limit_bytes.min(self.buffer_bytes) {
            return None;
        }
        let marked = q.disc.admit_idle(pkt)?;
        if marked {
            pkt.ecn = Ecn::Ce;
        }
        Some(marked)
    }

    /// Takes the next packet to transmit.
    #[inline(always)]
    pub fn dequeue(&mut self, arena: &PacketArena, now_ns: u64) -> Option<PktId> {
        if self.packets == 0 {
            return None;
        }
        // Most ports have one FIFO class: served inline, with one test (a call and three tests here
        // cost benchmark (a) 12 instructions per packet-hop).
        if !self.one_fifo {
            return self.dequeue_classes(arena, now_ns);
        }
        let q = &mut self.classes[0];
        let id = q.fifo.pop_front()?;
        let size = arena.get(id).size_bytes as u64;
        q.bytes -= size;
        self.bytes -= size;
        self.packets -= 1;
        if q.fifo.is_empty() {
            q.disc.went_idle(now_ns);
        }
        Some(id)
    }

    /// [`PortQueue::dequeue`] over cut headers, several classes and pFabric's pick.
    fn dequeue_classes(&mut self, arena: &PacketArena, now_ns: u64) -> Option<PktId> {
        if let Some(h) = &mut self.headers {
            if let Some(id) = h.fifo.pop_front() {
                let size = arena.get(id).size_bytes as u64;
                h.bytes -= size;
                self.bytes -= size;
                self.packets -= 1;
                return Some(id);
            }
        }
        let ci = if self.wrr {
            self.next_wrr()
        } else {
            self.classes.iter().position(|q| !q.fifo.is_empty())?
        };
        let q = &mut self.classes[ci];
        let id = match q.disc {
            Discipline::Pfabric => {
                let i = super::pfabric::pick(&q.fifo, arena)?;
                q.fifo.remove(i)?
            }
            _ => q.fifo.pop_front()?,
        };
        let size = arena.get(id).size_bytes as u64;
        q.bytes -= size;
        self.bytes -= size;
        self.packets -= 1;
        if q.fifo.is_empty() {
            q.disc.went_idle(now_ns);
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
    fn new(limit_bytes: u64, aqm: &AqmConfig, weight: u32) -> ClassQueue {
        ClassQueue {
            // Grown on demand: most ports never queue more than a few packets, and 64 slots held in
            // advance were 1.5 MB of a k = 16 fat-tree's 6,144 ports.
            fifo: VecDeque::new(),
            bytes: 0,
            limit_bytes,
            disc: Discipline::new(aqm),
            weight: weight.max(1),
            credit: weight.max(1),
        }
    }
}
