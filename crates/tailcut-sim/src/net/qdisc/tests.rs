//! Scripted tests of the disciplines through a port's queue.
use super::*;
use crate::net::queue::{ClassConfig, SchedConfig};
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::units::Bytes;
use tailcut_proto::Ecn;
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
