//! Scripted tests of a port driven without the simulator: the caller plays the driver, handing in
//! `now` and acting on each [`Service`].

use super::*;
use crate::net::aqm::AqmConfig;
use crate::net::queue::SchedConfig;
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::units::Bytes;
use tailcut_proto::{Ecn, Header, Packet, TcpHeader};

/// 1 Gbps: 12 us per 1500 B; 1 us of propagation.
fn port(buffer: u64, aqm: AqmConfig) -> Port {
    let queue = PortQueue::new(buffer, &aqm, &[], &SchedConfig::default(), 12_000);
    Port::new(
        0,
        1,
        1,
        0,
        1_000_000_000,
        Dur(1_000),
        queue,
        stream(1, Stream::Port, 0),
    )
}

fn data(arena: &mut PacketArena, ecn: Ecn) -> PktId {
    arena.insert(Packet {
        size_bytes: 1500,
        ecn,
        header: Header::Tcp(TcpHeader {
            payload_len: 1460,
            ..Default::default()
        }),
        ..Packet::default()
    })
}

fn us(n: u64) -> Time {
    Time(n * 1_000)
}

#[test]
fn departures_follow_the_line_rate_and_the_port_asks_to_be_woken_once() {
    let mut a = PacketArena::default();
    let mut p = port(100_000, AqmConfig::DropTail);
    let ids: Vec<PktId> = (0..3).map(|_| data(&mut a, Ecn::NotEct)).collect();

    // Idle with an empty queue: on the wire at once, at the peer after 12 us + 1 us.
    let s = p.offer(Time::ZERO, ids[0], &mut a);
    assert_eq!(
        s,
        Service {
            dropped: [None, None],
            sent: Some(Departure {
                id: ids[0],
                arrives: Some(us(13)),
            }),
            wake_at: None,
        }
    );
    assert_eq!(p.next_departure(), None);
    // Busy: queued, and the port asks to be woken when the line frees, once.
    let s = p.offer(us(1), ids[1], &mut a);
    assert_eq!((s.sent, s.wake_at), (None, Some(us(12))));
    assert_eq!(p.next_departure(), Some(us(12)));
    let s = p.offer(us(2), ids[2], &mut a);
    assert_eq!((s.sent, s.wake_at), (None, None));

    let s = p.wake(us(12), &a);
    assert_eq!(
        s.sent,
        Some(Departure {
            id: ids[1],
            arrives: Some(us(25)),
        })
    );
    assert_eq!(s.wake_at, Some(us(24)));
    let s = p.wake(us(24), &a);
    assert_eq!(s.sent.map(|d| d.arrives), Some(Some(us(37))));
    assert_eq!(s.wake_at, None);
    assert_eq!(p.next_departure(), None);

    let c = p.counters();
    assert_eq!((c.enqueued_packets, c.enqueued_bytes), (3, 4500));
    assert_eq!((c.tx_packets, c.tx_bytes), (3, 4500));
    // The first packet never waited; the other two did together.
    assert_eq!(c.max_occupancy_bytes, 3000);
}

#[test]
fn a_full_buffer_drops_the_arrival() {
    let mut a = PacketArena::default();
    let mut p = port(3000, AqmConfig::DropTail);
    let ids: Vec<PktId> = (0..4).map(|_| data(&mut a, Ecn::NotEct)).collect();
    let mut dropped = Vec::new();
    for &id in &ids {
        dropped.extend(p.offer(Time::ZERO, id, &mut a).dropped.into_iter().flatten());
    }
    // One on the wire, two in the 3000-byte buffer, the fourth dropped.
    assert_eq!(dropped, vec![ids[3]]);
    assert_eq!(p.queued_packets(), 2);
    let c = p.counters();
    assert_eq!((c.enqueued_packets, c.dropped_overflow, c.tx_packets), (3, 1, 1));
}

#[test]
fn ecn_marks_arrivals_finding_k_bytes_queued() {
    let mut a = PacketArena::default();
    let mut p = port(100_000, AqmConfig::Ecn { k: Bytes(1500) });
    let ids: Vec<PktId> = (0..3).map(|_| data(&mut a, Ecn::Ect0)).collect();
    for &id in &ids {
        let _ = p.offer(Time::ZERO, id, &mut a);
    }
    // The first skips the queue, the second finds it empty, the third finds 1500 bytes.
    let ecn: Vec<Ecn> = ids.iter().map(|&id| a.get(id).ecn).collect();
    assert_eq!(ecn, vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ce]);
    assert_eq!(p.counters().ecn_marked, 1);
}

#[test]
fn trimming_cuts_the_payload_of_what_does_not_fit() {
    let mut a = PacketArena::default();
    let mut p = port(
        3000,
        AqmConfig::Trim {
            header_bytes: Bytes(66),
            threshold: None,
            header_headroom: Bytes(1500),
            priority_headers: false,
            ecn_k: None,
        },
    );
    let ids: Vec<PktId> = (0..4).map(|_| data(&mut a, Ecn::NotEct)).collect();
    for &id in &ids {
        let s = p.offer(Time::ZERO, id, &mut a);
        assert_eq!(s.dropped, [None, None]);
    }
    assert!(a.get(ids[3]).trimmed);
    assert_eq!(a.get(ids[3]).size_bytes, 66);
    let c = p.counters();
    assert_eq!((c.trimmed, c.enqueued_bytes), (1, 3 * 1500 + 66));
    // The cut header leaves after the two whole packets ahead of it: 12 + 2 x 12 us + 0.528 us.
    let mut t = us(12);
    let mut last = None;
    while let Some(d) = p.wake(t, &a).sent {
        last = d.arrives;
        t = p.next_departure().unwrap_or(t);
    }
    assert_eq!(last, Some(Time(36_000 + 528 + 1_000)));
}

#[test]
fn a_link_down_loses_what_the_port_sends() {
    let mut a = PacketArena::default();
    let mut p = port(100_000, AqmConfig::DropTail);
    p.set_up(false);
    let id = data(&mut a, Ecn::NotEct);
    let s = p.offer(Time::ZERO, id, &mut a);
    assert_eq!(s.sent, Some(Departure { id, arrives: None }));
    let c = p.counters();
    assert_eq!((c.tx_packets, c.dropped_link_down), (1, 1));
    // The line was still busy for the packet's serialisation.
    let next = data(&mut a, Ecn::NotEct);
    assert_eq!(p.offer(us(1), next, &mut a).wake_at, Some(us(12)));
}
