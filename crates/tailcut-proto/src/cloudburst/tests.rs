//! Scripted two-endpoint tests on virtual time, through the generic harness (`crate::testing`).

use super::*;
use crate::engine::Outgoing;
use crate::packet::Addr;
use crate::testing::{Fate, Harness};
use rand::SeedableRng;

const DELAY: Dur = Dur(10_000);

fn tuple() -> FiveTuple {
    FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 100,
        dst_port: 200,
        proto: Proto::Udp,
    }
}

fn pair(cfg: CloudBurstConfig) -> (CloudBurstEndpoint, CloudBurstEndpoint) {
    let a =
        CloudBurstEndpoint::new(cfg.clone(), tuple(), Rng::seed_from_u64(1)).expect("valid configuration");
    let b =
        CloudBurstEndpoint::new(cfg, tuple().reversed(), Rng::seed_from_u64(2)).expect("valid configuration");
    (a, b)
}

/// Sender A (engine 0) and receiver B (engine 1) on a link of one-way delay `DELAY`. Timers are
/// handled at every step, due or not, which the engine must tolerate.
fn harness(cfg: CloudBurstConfig) -> Harness<CloudBurstEndpoint> {
    let (a, b) = pair(cfg);
    let mut h = Harness::new(a, b);
    h.one_way = DELAY;
    h.early_timer_calls = true;
    h
}

/// The harness's log with each packet's CloudBurst header.
struct Log {
    /// (time, from_a, header, packet) of every packet put on the wire, dropped or not.
    sent: Vec<(Time, bool, CbHeader, Packet)>,
    a_events: Vec<(Time, AppEvent)>,
    b_events: Vec<(Time, AppEvent)>,
}

/// Runs until both sides are idle or `until`; `drop(from_a, header)` decides losses.
fn run(
    h: &mut Harness<CloudBurstEndpoint>,
    until: Time,
    mut drop: impl FnMut(bool, &CbHeader) -> bool + 'static,
) -> Log {
    let layout = h.eps[0].config().layout();
    h.fault(move |w| {
        let header = CbHeader::parse(layout, w.payload).expect("own header parses");
        if drop(w.from == 0, &header) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.run_until(until);
    let events = |side| {
        h.events
            .iter()
            .filter(|e| e.1 == side)
            .map(|e| (e.0, e.2))
            .collect()
    };
    Log {
        sent: h
            .sent
            .iter()
            .map(|s| {
                let header = CbHeader::parse(layout, &s.payload).expect("own header parses");
                (s.time, s.from == 0, header, s.pkt)
            })
            .collect(),
        a_events: events(0),
        b_events: events(1),
    }
}

fn coded_from_a(log: &Log) -> usize {
    log.sent.iter().filter(|s| s.1).count()
}

#[test]
fn delivers_and_the_stop_stops_the_sender() {
    let mut h = harness(CloudBurstConfig::paper());
    h.eps[0].send_message(Time::ZERO, 7, 10_000);
    h.eps[1].expect_message(7, 10_000);
    let log = run(&mut h, Time(50_000_000), |_, _| false);
    assert_eq!(log.b_events.len(), 1);
    assert_eq!(log.b_events[0].1, AppEvent::MessageReceived { msg: 7 });
    let acked = log.a_events.iter().find_map(|(t, e)| match e {
        AppEvent::MessageAcked { msg: 7, stats } => Some((*t, *stats)),
        _ => None,
    });
    let (t_ack, stats) = acked.expect("acked");
    // Nothing coded leaves A after the STOP arrived.
    assert!(log.sent.iter().filter(|s| s.1).all(|s| s.0 <= t_ack));
    let k = 10_000u64.div_ceil(1460);
    let sent = coded_from_a(&log) as u64;
    assert!(sent >= k);
    assert_eq!(stats.sent_bytes, sent * 1460);
    assert_eq!(stats.redundant_bytes, sent * 1460 - 10_000);
    assert_eq!(h.eps[0].counters().messages_acked, 1);
    assert!(h.eps[0].poll_timeout().is_none_or(|t| t > t_ack));
    // Class and explicit paths: a round puts one packet on each of the 4 paths, in path order from
    // the round's first path; the next round starts one path further.
    let labels: Vec<u32> = log
        .sent
        .iter()
        .filter(|s| s.1)
        .map(|s| match s.3.route {
            Route::Path(p) => p,
            r => panic!("explicit mode sent {r:?}"),
        })
        .take(8)
        .collect();
    let first = labels[0];
    let expect: Vec<u32> = (0..4)
        .map(|i| (first + i) % 4)
        .chain((0..4).map(|i| (first + 1 + i) % 4))
        .collect();
    assert_eq!(labels, expect);
    assert!(log.sent.iter().all(|s| s.3.class == 1));
}

#[test]
fn rounds_are_paced_at_share_r() {
    let cfg = CloudBurstConfig {
        rate_share: 0.5,
        ..CloudBurstConfig::paper()
    };
    let gap = cfg.round_gap();
    // 4 paths x 1500 B x 8 / (0.5 x 1 Gbps) = 96 us.
    assert_eq!(gap, Dur::from_micros(96));
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 1, 90_000);
    // The receiver never gets anything: watch the sender alone for 5 rounds.
    let log = run(&mut h, Time(gap.0 * 4 + 1), |_, _| true);
    let times: Vec<Time> = log.sent.iter().filter(|s| s.1).map(|s| s.0).collect();
    assert_eq!(times.len(), 20);
    for (i, t) in times.iter().enumerate() {
        assert_eq!(t.0, (i as u64 / 4) * gap.0);
    }
}

#[test]
fn a_lost_stop_is_repeated_for_every_further_packet() {
    let mut h = harness(CloudBurstConfig::paper());
    h.eps[0].send_message(Time::ZERO, 3, 20_000);
    h.eps[1].expect_message(3, 20_000);
    let mut stops = 0;
    let log = run(&mut h, Time(50_000_000), move |from_a, h| {
        if !from_a && h.kind == Kind::Stop {
            stops += 1;
            return stops <= 3; // the first three STOPs are lost
        }
        false
    });
    assert_eq!(log.b_events.len(), 1, "delivered once");
    assert!(matches!(
        log.a_events[..],
        [(_, AppEvent::MessageAcked { msg: 3, .. })]
    ));
    assert!(h.eps[1].counters().stops_sent >= 4);
    // Repeated STOPs go out on rotating paths.
    let stop_paths: Vec<Route> = log
        .sent
        .iter()
        .filter(|s| !s.1)
        .map(|s| s.3.route)
        .take(3)
        .collect();
    assert_eq!(stop_paths, vec![Route::Path(0), Route::Path(1), Route::Path(2)]);
}

#[test]
fn decoder_expires_without_new_packets() {
    let cfg = CloudBurstConfig {
        degree: crate::fec::DegreeDist::Systematic,
        ..CloudBurstConfig::paper()
    };
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 5, 60 * 1460);
    let mut n = 0;
    // Only the first 3 packets arrive; the sender then times out (10 ms) and the decoder expires
    // 10 ms after its last packet.
    let log = run(&mut h, Time(100_000_000), move |from_a, _| {
        n += from_a as u32;
        n > 3
    });
    assert!(log.b_events.is_empty());
    assert_eq!(h.eps[1].counters().decoders_expired, 1);
    assert!(h.eps[1].poll_timeout().is_none());
    assert!(
        matches!(log.a_events[..], [(t, AppEvent::MessageFailed { msg: 5, .. })] if t == Time(10_000_000))
    );
}

#[test]
fn a_message_over_64_packets_fails_at_once() {
    let (mut a, _) = pair(CloudBurstConfig::paper());
    a.send_message(Time::ZERO, 9, 64 * 1460 + 1);
    assert!(matches!(
        a.poll_event(),
        Some(AppEvent::MessageFailed { msg: 9, .. })
    ));
    assert!(a.poll_transmit(Time::ZERO, &mut Vec::new()).is_none());
    a.send_message(Time::ZERO, 10, 64 * 1460);
    assert!(a.poll_event().is_none());
}

#[test]
fn concurrent_messages_interleave_and_both_complete() {
    let mut h = harness(CloudBurstConfig::paper());
    h.eps[0].send_message(Time::ZERO, 1, 30_000);
    h.eps[0].send_message(Time::ZERO, 2, 30_000);
    h.eps[1].expect_message(1, 30_000);
    h.eps[1].expect_message(2, 30_000);
    let log = run(&mut h, Time(50_000_000), |_, _| false);
    let ids: Vec<u8> = log
        .sent
        .iter()
        .filter(|s| s.1)
        .map(|s| s.2.msg_id)
        .take(4)
        .collect();
    assert_eq!(ids, vec![1, 2, 1, 2]);
    assert_eq!(log.b_events.len(), 2);
    assert_eq!(h.eps[0].counters().messages_acked, 2);
}

#[test]
fn ecmp_mode_spreads_source_ports() {
    let cfg = CloudBurstConfig {
        path_mode: PathMode::Ecmp,
        ..CloudBurstConfig::paper()
    };
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 1, 90_000);
    let log = run(&mut h, Time(1), |_, _| true);
    // One round: each of the 4 source ports once (starting from the message's first path).
    let mut ports: Vec<u16> = log.sent.iter().map(|s| s.3.tuple.src_port).collect();
    ports.sort_unstable();
    assert_eq!(ports, vec![100, 101, 102, 103]);
    assert!(log
        .sent
        .iter()
        .all(|s| s.3.route == Route::Ecmp && s.3.tuple.dst_port == 200));
}

#[test]
fn random_loss_still_delivers_everything() {
    for seed in 0..20u64 {
        let mut h = harness(CloudBurstConfig::paper());
        let mut r = Rng::seed_from_u64(seed);
        for m in 0..5u64 {
            h.eps[0].send_message(Time::ZERO, m, 1 + m * 20_000);
            h.eps[1].expect_message(m, 1 + m * 20_000);
        }
        let log = run(&mut h, Time(50_000_000), move |_, _| r.random::<f64>() < 0.3);
        assert_eq!(log.b_events.len(), 5, "seed {seed}");
        assert_eq!(h.eps[0].counters().messages_acked, 5, "seed {seed}");
    }
}

fn raptorq() -> CloudBurstConfig {
    CloudBurstConfig {
        codec: Codec::Raptorq,
        ..CloudBurstConfig::paper()
    }
}

#[test]
fn raptorq_delivers_from_k_packets_without_loss_and_stop_stops() {
    let mut h = harness(raptorq());
    h.eps[0].send_message(Time::ZERO, 7, 30_000);
    h.eps[1].expect_message(7, 30_000);
    let log = run(&mut h, Time(50_000_000), |_, _| false);
    assert_eq!(
        log.b_events,
        vec![(log.b_events[0].0, AppEvent::MessageReceived { msg: 7 })]
    );
    let t_ack = log
        .a_events
        .iter()
        .find_map(|(t, e)| matches!(e, AppEvent::MessageAcked { msg: 7, .. }).then_some(*t))
        .expect("acked");
    assert!(log.sent.iter().filter(|s| s.1).all(|s| s.0 <= t_ack));
    // Source symbols first (ESI 0..K): the first K packets decode it, then whatever was in flight.
    let esis: Vec<u32> = log
        .sent
        .iter()
        .filter_map(|s| match s.2.kind {
            Kind::Symbol { esi } => Some(esi),
            _ => None,
        })
        .collect();
    let k = 30_000u32.div_ceil(1460);
    assert_eq!(esis[..k as usize], (0..k).collect::<Vec<_>>());
    assert_eq!(h.eps[1].counters().messages_decoded, 1);
    assert_eq!(h.eps[1].counters().corrupt_decodes, 0);
    assert!(log.sent.iter().all(|s| s.1 || s.2.kind == Kind::Stop));
}

#[test]
fn raptorq_random_loss_still_delivers_everything() {
    for seed in 0..10u64 {
        let mut h = harness(raptorq());
        let mut r = Rng::seed_from_u64(seed);
        for m in 0..5u64 {
            h.eps[0].send_message(Time::ZERO, m, 1 + m * 20_000);
            h.eps[1].expect_message(m, 1 + m * 20_000);
        }
        let log = run(&mut h, Time(50_000_000), move |_, _| r.random::<f64>() < 0.3);
        assert_eq!(log.b_events.len(), 5, "seed {seed}");
        assert_eq!(h.eps[0].counters().messages_acked, 5, "seed {seed}");
        assert_eq!(h.eps[1].counters().corrupt_decodes, 0);
        assert_eq!(h.eps[1].counters().malformed, 0);
    }
}

/// Received coded packets until decoding, at 30% loss, for LT's default and RaptorQ: RaptorQ needs
/// at most K + 2 almost always; LT about K + 1.5 on average.
#[test]
fn raptorq_needs_at_most_k_plus_2_received_packets() {
    let k = 40u64;
    let mut within = 0;
    let runs = 20;
    for seed in 0..runs {
        // One path: rounds (12 us) outlast the 10 us delay, so the STOP leaves before the next
        // packet and the count is exact.
        let mut h = harness(CloudBurstConfig {
            paths: 1,
            ..raptorq()
        });
        let mut r = Rng::seed_from_u64(100 + seed);
        h.eps[0].send_message(Time::ZERO, 1, k * 1460);
        let log = run(&mut h, Time(50_000_000), move |_, _| r.random::<f64>() < 0.3);
        let stop = log
            .sent
            .iter()
            .position(|s| !s.1 && s.2.kind == Kind::Stop)
            .expect("decoded");
        let n = h.sent[..stop]
            .iter()
            .filter(|s| s.from == 0 && s.fate == Fate::Deliver)
            .count() as u64;
        within += (n <= k + 2) as u32;
    }
    assert!(within >= runs as u32 - 1, "{within}/{runs}");
}

#[test]
fn carry_bytes_is_byte_exact_under_loss_for_both_codecs() {
    for codec in [Codec::Lt, Codec::Raptorq] {
        for seed in 0..6u64 {
            let cfg = CloudBurstConfig {
                codec,
                carry_bytes: true,
                ..CloudBurstConfig::paper()
            };
            let mut h = harness(cfg);
            let mut r = Rng::seed_from_u64(seed);
            let msgs: Vec<Vec<u8>> = (0..4)
                .map(|i| {
                    let len = [1, 1460, 1461, 93_440][i] - (seed as usize % 2) * (i > 1) as usize;
                    (0..len).map(|_| r.random()).collect()
                })
                .collect();
            for (m, d) in msgs.iter().enumerate() {
                h.eps[0].send_bytes(Time::ZERO, Outgoing::Message, m as u64, d);
                h.eps[1].expect_message(m as u64, d.len() as u64);
            }
            let log = run(&mut h, Time(50_000_000), move |_, _| r.random::<f64>() < 0.2);
            assert_eq!(log.b_events.len(), 4, "{codec:?} seed {seed}");
            for (m, d) in msgs.iter().enumerate() {
                assert_eq!(
                    h.eps[1].take_bytes(m as u64).as_ref(),
                    Some(d),
                    "{codec:?} msg {m}"
                );
            }
            assert_eq!(h.eps[1].take_bytes(0), None, "taken once");
            // Every coded packet carried a whole symbol after its header.
            assert!(log
                .sent
                .iter()
                .all(|s| s.2.kind == Kind::Stop || s.3.header == Header::Datagram { payload_len: 1460 }));
        }
    }
}

#[test]
fn symbols_of_the_wrong_length_are_malformed() {
    for (cfg, len) in [
        (raptorq(), 0usize),
        (raptorq(), SIM_RAPTORQ_SYMBOL_BYTES as usize + 1),
        (
            CloudBurstConfig {
                carry_bytes: true,
                ..CloudBurstConfig::paper()
            },
            1459,
        ),
    ] {
        let codec = cfg.codec;
        let (_, mut b) = pair(cfg);
        let h = CbHeader {
            packets: 1,
            message_bytes: 100,
            msg_id: 1,
            kind: if codec == Codec::Lt {
                Kind::Coded { set: 1 }
            } else {
                Kind::Symbol { esi: 0 }
            },
            block: Block::ONLY,
        };
        let mut buf = Vec::new();
        h.emit_to_vec(codec, &mut buf);
        buf.resize(HEADER_BYTES + len, 0);
        b.handle_packet(Time::ZERO, &Packet::default(), &buf);
        assert_eq!(b.counters().malformed, 1);
        assert!(b.poll_event().is_none());
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// A receiver fed arbitrary packets (valid-looking RaptorQ or LT headers with any ids and
        /// blocks, symbols of any length, random bytes) never panics, and holds no more than its
        /// limits.
        #[test]
        fn receivers_survive_arbitrary_packets(
            raptor: bool,
            carry: bool,
            blocks: bool,
            pkts in proptest::collection::vec(
                (1u8..=64, 0u32..100_000, any::<u8>(), any::<u64>(), 0usize..20, any::<bool>(), 0u16..4, 0u16..4),
                1..40,
            ),
        ) {
            let codec = if raptor { Codec::Raptorq } else { Codec::Lt };
            let base = if blocks { CloudBurstConfig::default() } else { CloudBurstConfig::paper() };
            let cfg = CloudBurstConfig {
                codec,
                carry_bytes: carry,
                symbol_bytes: 16,
                max_decoders: 4,
                max_held_bytes: 2_000,
                ..base
            };
            let layout = cfg.layout();
            let (_, mut b) = pair(cfg);
            for (i, (packets, size, id, name, len, garbage, index, last)) in pkts.into_iter().enumerate() {
                let mut buf = Vec::new();
                if garbage {
                    buf.extend((0..len + 10).map(|j| (name >> (j % 8 * 8)) as u8));
                } else {
                    // A size that fits the count more often than not.
                    let size = if size % 2 == 0 { packets as u32 * 16 - size % 16 } else { size };
                    let kind = match codec {
                        Codec::Lt => Kind::Coded { set: name | 1 },
                        Codec::Raptorq => Kind::Symbol { esi: (name as u32) & MAX_ESI },
                    };
                    let block = if blocks { Block { index: index.min(last), last } } else { Block::ONLY };
                    let h = CbHeader { packets, message_bytes: size, msg_id: id % 4, kind, block };
                    let _ = h.emit(layout, &mut [0u8; HEADER_BYTES]);
                    h.emit_to_vec(layout, &mut buf);
                    buf.extend((0..len).map(|j| (name >> (j % 8 * 8)) as u8));
                }
                b.handle_packet(Time(i as u64), &Packet::default(), &buf);
                while b.poll_event().is_some() {}
                while b.poll_transmit(Time(i as u64), &mut Vec::new()).is_some() {}
                prop_assert!(b.held_bytes() <= 2_000);
                let t = b.table_sizes();
                prop_assert!(t.decoders <= 4 && t.untaken <= 4 && t.finished <= b.max_done());
            }
        }
    }
}

/// A hand-made LT coded packet of a K = 2 message with wire id `id`.
fn coded(id: u8, set: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    CbHeader {
        packets: 2,
        message_bytes: 2000,
        msg_id: id,
        kind: Kind::Coded { set },
        block: Block::ONLY,
    }
    .emit_to_vec(Codec::Lt, &mut buf);
    buf
}

#[test]
fn decoders_are_bounded_per_peer_and_the_least_recent_is_evicted() {
    let (_, mut b) = pair(CloudBurstConfig {
        max_decoders: 2,
        ..CloudBurstConfig::paper()
    });
    let p = Packet::default();
    for (t, id) in [(1, 1u8), (2, 2), (3, 3)] {
        b.handle_packet(Time(t), &p, &coded(id, 0b01));
    }
    assert_eq!(b.counters().decoders_evicted, 1);
    // Message 2 kept its first packet: one more decodes it.
    b.handle_packet(Time(4), &p, &coded(2, 0b10));
    assert_eq!(b.poll_event(), Some(AppEvent::MessageReceived { msg: 2 }));
    // Message 1 was evicted (least recently active): its second packet alone does not decode it.
    b.handle_packet(Time(5), &p, &coded(1, 0b10));
    assert_eq!(b.poll_event(), None);
    assert_eq!(b.counters().messages_decoded, 1);
}

#[test]
fn counters_give_coding_rate_and_decode_time() {
    let mut h = harness(CloudBurstConfig::paper());
    h.eps[0].send_message(Time::ZERO, 1, 20_000);
    let log = run(&mut h, Time(50_000_000), |_, _| false);
    let k = 20_000u64.div_ceil(1460);
    let c = h.eps[0].counters();
    assert_eq!(c.acked_source_packets, k);
    assert_eq!(c.acked_coded_packets, coded_from_a(&log) as u64);
    assert_eq!(c.coding_rate(), c.acked_coded_packets as f64 / k as f64);
    assert!(c.coding_rate() >= 1.0);
    // Decode time runs from the first packet's arrival to the decoding one: K = 14 packets span
    // four rounds of four, so three round gaps (48 us each).
    let d = h.eps[1].counters();
    assert_eq!(d.messages_decoded, 1);
    assert!(d.decode_time_max > Dur::ZERO);
    assert_eq!(d.decode_time_total, d.decode_time_max);
    assert_eq!(
        d.decode_time_max,
        Dur(3 * CloudBurstConfig::paper().round_gap().0)
    );
}

/// A round leaves back to back; when the sender's host queue has room for only its first packet
/// (many messages at once), that packet must not always take the same path. Here the first packet
/// of each round is the only one that gets out, and path 0 is black-holed (a degraded path whose
/// tiny CloudBurst queue is always full): with every round starting on path 0 the message can never
/// be delivered; rotating the round's first path delivers it. Also, messages start on different
/// paths. (docs/cloudburst.md, "A degraded path".)
#[test]
fn rounds_start_on_rotating_paths_so_a_clipped_burst_avoids_no_path() {
    let cfg = CloudBurstConfig {
        paths: 3,
        ..CloudBurstConfig::paper()
    };
    let gap = cfg.round_gap();
    let (mut a, mut b) = pair(cfg);
    a.send_message(Time::ZERO, 5, 3 * 1460);
    b.expect_message(5, 3 * 1460);
    let mut firsts = Vec::new();
    let mut acked = None;
    'rounds: for round in 0..200u64 {
        let now = Time(round * gap.0);
        a.handle_timeout(now);
        let mut burst = Vec::new();
        loop {
            let mut buf = Vec::new();
            let Some(p) = a.poll_transmit(now, &mut buf) else {
                break;
            };
            burst.push((p, buf));
        }
        // Only the first packet of the burst fits in the host queue.
        let Some((p, buf)) = burst.into_iter().next() else {
            continue;
        };
        firsts.push(p.route);
        if p.route == Route::Path(0) {
            continue; // black-holed
        }
        b.handle_packet(now + DELAY, &p, &buf);
        loop {
            let mut stop = Vec::new();
            let Some(sp) = b.poll_transmit(now + DELAY, &mut stop) else {
                break;
            };
            if sp.route != Route::Path(0) {
                a.handle_packet(now + DELAY + DELAY, &sp, &stop);
            }
        }
        while let Some(e) = a.poll_event() {
            if let AppEvent::MessageAcked { msg: 5, .. } = e {
                acked = Some(round);
                break 'rounds;
            }
        }
    }
    assert!(acked.is_some(), "first packets of the rounds: {firsts:?}");
    for path in 0..3 {
        assert!(firsts.contains(&Route::Path(path)), "{firsts:?}");
    }
    // Different messages start their first round on different paths.
    let (mut a, _) = pair(CloudBurstConfig {
        paths: 3,
        ..CloudBurstConfig::paper()
    });
    let mut starts = BTreeMap::new();
    for msg in 0..16u64 {
        a.send_message(Time::ZERO, msg, 1460);
    }
    loop {
        let mut buf = Vec::new();
        let Some(p) = a.poll_transmit(Time::ZERO, &mut buf) else {
            break;
        };
        let h = CbHeader::parse(Codec::Lt, &buf).expect("own header");
        if let Route::Path(path) = p.route {
            starts.entry(h.msg_id).or_insert(path);
        }
    }
    assert_eq!(starts.len(), 16);
    let distinct: std::collections::BTreeSet<_> = starts.values().copied().collect();
    assert_eq!(distinct.len(), 3, "first paths of 16 messages: {starts:?}");
}

#[test]
fn an_invalid_configuration_is_an_error_naming_the_field() {
    let cfg = CloudBurstConfig {
        decoder_timeout: Dur::ZERO,
        ..CloudBurstConfig::paper()
    };
    let err = CloudBurstEndpoint::new(cfg, tuple(), Rng::seed_from_u64(1))
        .err()
        .expect("a zero decoder timeout is rejected");
    assert_eq!(err.path, "decoder_timeout");
}

/// A message of `len` random bytes, sent by A with the default (multi-block) configuration.
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::seed_from_u64(seed);
    (0..len).map(|_| r.random()).collect()
}

#[test]
fn a_1_mb_message_is_delivered_byte_exact_in_blocks_under_loss() {
    for codec in [Codec::Lt, Codec::Raptorq] {
        let cfg = CloudBurstConfig {
            codec,
            carry_bytes: true,
            ..CloudBurstConfig::default()
        };
        let blocks = cfg.blocks_of(1 << 20);
        assert_eq!(blocks, (1u64 << 20).div_ceil(64 * 1456));
        let mut h = harness(cfg);
        let data = random_bytes(1 << 20, 3);
        h.eps[0].send_bytes(Time::ZERO, Outgoing::Message, 4, &data);
        h.eps[1].expect_message(4, data.len() as u64);
        let mut r = Rng::seed_from_u64(9);
        let log = run(&mut h, Time(100_000_000), move |_, _| r.random::<f64>() < 0.1);
        assert_eq!(
            log.b_events,
            vec![(log.b_events[0].0, AppEvent::MessageReceived { msg: 4 })]
        );
        assert_eq!(h.eps[1].take_bytes(4).as_deref(), Some(&data[..]), "{codec:?}");
        let acks: Vec<_> = log
            .a_events
            .iter()
            .filter(|e| matches!(e.1, AppEvent::MessageAcked { msg: 4, .. }))
            .collect();
        assert_eq!(acks.len(), 1, "{codec:?}: {:?}", log.a_events);
        // One STOP (at least) per block, each naming its block of the same message.
        let stopped: std::collections::BTreeSet<u16> = log
            .sent
            .iter()
            .filter(|s| !s.1 && s.2.kind == Kind::Stop)
            .map(|s| s.2.block.index)
            .collect();
        assert_eq!(stopped.len() as u64, blocks);
        assert!(log.sent.iter().all(|s| s.2.block.last as u64 == blocks - 1));
        let c = h.eps[0].counters();
        assert_eq!(c.acked_source_packets, (1u64 << 20).div_ceil(1456));
        assert_eq!(h.eps[1].counters().blocks_decoded, blocks);
        assert_eq!(h.eps[1].held_bytes(), 0, "taken");
        assert_eq!(h.eps[1].table_sizes().assemblies, 0);
    }
}

#[test]
fn at_most_block_window_blocks_are_coded_at_once_at_the_message_rate() {
    let cfg = CloudBurstConfig {
        block_window: 2,
        ..CloudBurstConfig::default()
    };
    let gap = cfg.round_gap();
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 1, 5 * 64 * 1456);
    let log = run(&mut h, Time(100_000_000), |_, _| false);
    assert!(matches!(
        log.b_events[..],
        [(_, AppEvent::MessageReceived { msg: 1 })]
    ));
    // A block starts only once the STOP of an earlier one has reached A.
    let stop_at = |b: u16| {
        log.sent
            .iter()
            .find(|s| !s.1 && s.2.kind == Kind::Stop && s.2.block.index == b)
            .map(|s| s.0 + DELAY)
            .expect("stopped")
    };
    for b in 2..5u16 {
        let first = log
            .sent
            .iter()
            .find(|s| s.1 && s.2.block.index == b)
            .expect("sent")
            .0;
        let freed = (0..b).map(stop_at).filter(|t| *t <= first).count();
        assert!(
            freed as u16 >= b - 1,
            "block {b} started at {first:?} with {freed} STOPs back"
        );
    }
    // The whole message keeps one round (4 packets) per round gap, whatever its blocks.
    let coded: Vec<Time> = log.sent.iter().filter(|s| s.1).map(|s| s.0).collect();
    let span = coded.last().unwrap().saturating_sub(coded[0]);
    assert!(coded.len() as u64 <= 4 * (span.0 / gap.0 + 1));
}

#[test]
fn a_block_that_gets_no_stop_fails_the_whole_message() {
    let mut h = harness(CloudBurstConfig::default());
    h.eps[0].send_message(Time::ZERO, 2, 3 * 64 * 1456);
    let log = run(&mut h, Time(100_000_000), |from_a, hd| {
        from_a && hd.block.index == 1
    });
    assert!(log.b_events.is_empty());
    // The transmission timeout is counted in the message's records, not silently 0.
    assert!(matches!(
        log.a_events[..],
        [(
            _,
            AppEvent::MessageFailed {
                msg: 2,
                stats: MessageStats { timeouts: 1, .. }
            }
        )]
    ));
    assert_eq!(h.eps[0].counters().messages_acked, 0);
    // The receiver forgets the partial message once idle.
    assert_eq!(h.eps[1].table_sizes().assemblies, 0);
    assert_eq!(h.eps[1].counters().assemblies_expired, 1);
}

/// A block's packets are all lost for longer than `decoder_timeout` (as when the sender is
/// descheduled between blocks): the receiver keeps the assembly of the blocks it already STOPped,
/// for as long as the sender may still be at the message (2 t), and the message is delivered.
/// Dropping it at `decoder_timeout` left the message acknowledged at the sender but undelivered.
#[test]
fn an_assembly_outlives_a_silence_longer_than_the_decoder_timeout() {
    let cfg = CloudBurstConfig {
        block_window: 1,
        decoder_timeout: Dur::from_micros(100),
        ..CloudBurstConfig::default()
    };
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 4, 3 * 64 * 1456);
    let mut lost = 0;
    let log = run(&mut h, Time(100_000_000), move |from_a, hd| {
        let drop = from_a && hd.block.index == 1 && hd.kind != Kind::Stop && lost < 400;
        lost += u32::from(drop);
        drop
    });
    // The receiver heard nothing of the message for longer than its decoder timeout.
    let of_block = |b: u16| {
        log.sent
            .iter()
            .filter(move |s| s.1 && s.2.block.index == b)
            .map(|s| s.0)
    };
    let silence = of_block(1)
        .nth(400)
        .unwrap()
        .saturating_sub(of_block(0).next_back().unwrap());
    assert!(silence > Dur::from_micros(100), "{silence:?}");
    assert!(
        log.b_events
            .iter()
            .any(|e| matches!(e.1, AppEvent::MessageReceived { msg: 4 })),
        "{:?}",
        log.b_events
    );
    assert_eq!(h.eps[1].counters().assemblies_expired, 0);
    assert!(log
        .a_events
        .iter()
        .any(|e| matches!(e.1, AppEvent::MessageAcked { msg: 4, .. })));
}

#[test]
fn a_block_slower_than_t_does_not_fail_a_message_that_keeps_making_progress() {
    // Issue #44: under contention a block shares the message's rate with the rest of the window,
    // so one block can take longer than t while the message's STOPs keep coming. t is re-armed by
    // every STOP: here block 1 loses its first 150 packets and lives ~4 ms, twice t, while a STOP
    // comes back at least every ~1.6 ms.
    let cfg = CloudBurstConfig {
        block_window: 2,
        transmission_timeout: Dur::from_millis(2),
        ..CloudBurstConfig::default()
    };
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 3, 3 * 64 * 1456);
    let mut dropped = 0;
    let log = run(&mut h, Time(100_000_000), move |from_a, hd| {
        let drop = from_a && hd.block.index == 1 && dropped < 150;
        dropped += u32::from(drop);
        drop
    });
    assert!(matches!(
        log.b_events[..],
        [(_, AppEvent::MessageReceived { msg: 3 })]
    ));
    let acked = log
        .a_events
        .iter()
        .find(|e| matches!(e.1, AppEvent::MessageAcked { msg: 3, .. }))
        .expect("acknowledged")
        .0;
    assert!(acked > Time(4_000_000), "block 1 outlived t: acked at {acked:?}");
    // Without progress it still fails at t after the last STOP (above).
    assert_eq!(h.eps[0].counters().messages_failed, 0);
}

#[test]
fn the_receiver_never_holds_more_than_max_held_bytes() {
    let cfg = CloudBurstConfig {
        carry_bytes: true,
        max_held_bytes: 300_000,
        ..CloudBurstConfig::default()
    };
    let mut h = harness(cfg);
    let big = random_bytes(1 << 20, 1);
    let small = random_bytes(200_000, 2);
    h.eps[0].send_bytes(Time::ZERO, Outgoing::Message, 1, &big);
    h.eps[0].send_bytes(Time::ZERO, Outgoing::Message, 2, &small);
    run(&mut h, Time(100_000_000), |_, _| false);
    // The message larger than the limit cannot be held; the one within it is delivered.
    assert!(h.eps[1].counters().held_dropped >= 1);
    assert_eq!(h.eps[1].take_bytes(1), None);
    assert_eq!(h.eps[1].take_bytes(2).as_deref(), Some(&small[..]));
    assert_eq!(h.eps[1].held_bytes(), 0);
}

#[test]
fn a_message_of_one_block_codes_as_the_papers() {
    // The same message under the paper's Fig. 4 layout and under the block word: the same coded
    // packets in the same order (the rounds only slower by the 4 header bytes).
    let mut sets = Vec::new();
    for cfg in [
        CloudBurstConfig::paper(),
        CloudBurstConfig {
            symbol_bytes: 1460,
            header_bytes: 44,
            ..CloudBurstConfig::default()
        },
    ] {
        let mut h = harness(cfg);
        h.eps[0].send_message(Time::ZERO, 5, 50_000);
        let log = run(&mut h, Time(50_000_000), |_, _| false);
        sets.push(
            log.sent
                .iter()
                .map(|s| (s.1, s.2.kind, s.2.packets, s.2.message_bytes))
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(sets[0], sets[1]);
}

/// At 500 Mbit/s a window of 8 full blocks takes 12.3 ms before its first STOP can come (each block
/// gets an eighth of the rate), more than the paper's t = 10 ms: the message is still delivered and
/// acknowledged, since t is extended by the other active blocks' share (it failed before).
#[test]
fn a_window_of_blocks_slower_than_t_is_not_failed() {
    let cfg = CloudBurstConfig {
        nic_rate: crate::units::Rate(500_000_000),
        ..CloudBurstConfig::default()
    };
    assert_eq!(cfg.transmission_timeout, Dur::from_millis(10));
    let mut h = harness(cfg);
    h.eps[0].send_message(Time::ZERO, 4, 1 << 20);
    let log = run(&mut h, Time(100_000_000), |_, _| false);
    assert!(
        matches!(log.b_events[..], [(_, AppEvent::MessageReceived { msg: 4 })]),
        "{:?}",
        log.b_events
    );
    let first_stop = log
        .sent
        .iter()
        .find(|s| !s.1 && s.2.kind == Kind::Stop)
        .map(|s| s.0)
        .expect("stopped");
    assert!(
        first_stop > Time(10_000_000),
        "the first STOP came after t: {first_stop:?}"
    );
    assert!(
        matches!(log.a_events[..], [(_, AppEvent::MessageAcked { msg: 4, .. })]),
        "{:?}",
        log.a_events
    );
}

/// Drives one sender alone (its receiver hears nothing) from `at` until `until`, waking at each
/// `poll_timeout` as a runtime would: the time of every coded packet sent, and the wake-ups.
fn paced(a: &mut CloudBurstEndpoint, mut at: Time, until: Time) -> (Vec<Time>, u32) {
    let (mut sent, mut wakes) = (Vec::new(), 0);
    let mut payload = Vec::new();
    while at <= until {
        wakes += 1;
        a.handle_timeout(at);
        payload.clear();
        while a.poll_transmit(at, &mut payload).is_some() {
            sent.push(at);
            payload.clear();
        }
        at = a.poll_timeout().expect("still sending");
    }
    (sent, wakes)
}

#[test]
fn a_pacing_quantum_sends_due_rounds_together_and_never_ahead_of_algorithm_1() {
    let base = CloudBurstConfig {
        rate_share: 0.5,
        ..CloudBurstConfig::paper()
    };
    let gap = base.round_gap();
    let until = Time(2_000_000);
    let (mut exact, _) = pair(base.clone());
    exact.send_message(Time::ZERO, 1, 90_000);
    let (paper, paper_wakes) = paced(&mut exact, Time::ZERO, until);
    let quantum = Dur::from_micros(250);
    let (mut a, _) = pair(CloudBurstConfig {
        pacing_quantum: quantum,
        ..base
    });
    a.send_message(Time::ZERO, 1, 90_000);
    let (sent, wakes) = paced(&mut a, Time::ZERO, until);
    // Packet i belongs to round i / 4, due at (i / 4) x gap: never sent before, at most the
    // quantum after.
    for (i, t) in sent.iter().enumerate() {
        let due = (i as u64 / 4) * gap.0;
        assert!(
            t.0 >= due && t.0 <= due + quantum.0,
            "packet {i} at {t:?}, due {due}"
        );
    }
    // The rate is Algorithm 1's: every round due a quantum before the end went, none early.
    let rounds = sent.len() as u64 / 4;
    assert!(rounds >= (until.0 - quantum.0) / gap.0, "{rounds} rounds");
    assert!(sent.len() <= paper.len());
    // Two rounds per wake-up (250 us less a 96 us gap leaves 154 us of lateness: 2 rounds due).
    assert!(
        wakes * 2 <= paper_wakes + 2,
        "{wakes} wake-ups against {paper_wakes}"
    );
}

#[test]
fn a_pacing_quantum_does_not_let_a_stalled_sender_catch_up() {
    let cfg = CloudBurstConfig {
        pacing_quantum: Dur::from_micros(50),
        ..CloudBurstConfig::paper()
    };
    let (mut a, _) = pair(cfg);
    a.send_message(Time::ZERO, 1, 90_000);
    let mut p = Vec::new();
    let first = std::iter::from_fn(|| a.poll_transmit(Time::ZERO, &mut p)).count();
    // Descheduled for 5 ms (hundreds of rounds at 1 Gbit/s): one round goes, not the backlog.
    let stalled = Time(5_000_000);
    let after = std::iter::from_fn(|| a.poll_transmit(stalled, &mut p)).count();
    assert_eq!((first, after), (4, 4));
}

/// A receiver given a decoded block's surplus packets at once: the STOPs it answers with, and its
/// counters.
fn stops_for_surplus(gap: Dur) -> (usize, usize, Counters) {
    let cfg = CloudBurstConfig {
        stop_repeat_gap: gap,
        ..CloudBurstConfig::paper()
    };
    let (mut a, mut b) = pair(cfg);
    a.send_message(Time::ZERO, 1, 100);
    b.expect_message(1, 100);
    let mut p = Vec::new();
    let mut round = Vec::new();
    while let Some(pkt) = a.poll_transmit(Time::ZERO, &mut p) {
        round.push((pkt, std::mem::take(&mut p)));
    }
    assert_eq!(round.len(), 4, "one round of a one-packet message");
    let stops = |b: &mut CloudBurstEndpoint, at: Time| {
        std::iter::from_fn(|| b.poll_transmit(at, &mut Vec::new())).count()
    };
    // A backlog: the whole round arrives within one microsecond.
    for (i, (pkt, payload)) in round.iter().enumerate() {
        b.handle_packet(Time(10_000 + i as u64 * 100), pkt, payload);
    }
    let backlog = stops(&mut b, Time(11_000));
    // A straggler after the gap (a lost STOP must still be repeated).
    b.handle_packet(Time(10_000) + gap + Dur(1), &round[0].0, &round[0].1);
    let later = stops(&mut b, Time(10_000) + gap + Dur(1));
    (backlog, later, *b.counters())
}

#[test]
fn a_stop_repeat_gap_answers_a_backlog_of_surplus_packets_with_one_stop() {
    let (backlog, later, c) = stops_for_surplus(Dur::from_millis(1));
    assert_eq!((backlog, later), (1, 1));
    // The surplus packets were dropped, not decoded again.
    assert_eq!((c.blocks_decoded, c.messages_decoded, c.stops_sent), (1, 1, 2));
    // The paper's default: a STOP for every further packet.
    let (backlog, later, c) = stops_for_surplus(Dur::ZERO);
    assert_eq!((backlog, later), (4, 1));
    assert_eq!((c.blocks_decoded, c.messages_decoded), (1, 1));
}

#[test]
fn counters_and_tables_of_two_endpoints_merge_as_one() {
    let mut c = Counters {
        messages_acked: 1,
        coded_packets_sent: 10,
        decode_time_total: Dur(5),
        decode_time_max: Dur(4),
        malformed: 2,
        ..Counters::default()
    };
    c.merge(&Counters {
        messages_acked: 2,
        coded_packets_sent: 3,
        decode_time_total: Dur(7),
        decode_time_max: Dur(3),
        held_dropped: 1,
        ..Counters::default()
    });
    // Counts and the total decode time add up; the longest decode stays the longest.
    let want = Counters {
        messages_acked: 3,
        coded_packets_sent: 13,
        decode_time_total: Dur(12),
        decode_time_max: Dur(4),
        malformed: 2,
        held_dropped: 1,
        ..Counters::default()
    };
    assert_eq!(c, want);
    let mut t = TableSizes {
        sending: 1,
        assemblies: 2,
        ..TableSizes::default()
    };
    t += TableSizes {
        sending: 3,
        untaken: 1,
        ..TableSizes::default()
    };
    let want = TableSizes {
        sending: 4,
        untaken: 1,
        assemblies: 2,
        ..TableSizes::default()
    };
    assert_eq!(t, want);
}

/// A sender whose thread was descheduled past t: with `exclude_host_delay` the host's reported
/// delay moves t on, by at most t since the message's start (its host delay allowance), so the
/// message is still sent and fails only later; without it the message fails at once, as
/// Algorithm 1's t.
#[test]
fn exclude_host_delay_moves_t_by_the_hosts_own_delay_up_to_t() {
    let failed = |a: &mut CloudBurstEndpoint| {
        std::iter::from_fn(|| a.poll_event()).any(|e| matches!(e, AppEvent::MessageFailed { .. }))
    };
    for exclude in [false, true] {
        let cfg = CloudBurstConfig {
            exclude_host_delay: exclude,
            ..CloudBurstConfig::paper()
        };
        let t = cfg.transmission_timeout;
        let (mut a, _) = pair(cfg);
        a.send_message(Time::ZERO, 1, 100);
        let mut p = Vec::new();
        assert_eq!(
            std::iter::from_fn(|| a.poll_transmit(Time::ZERO, &mut p)).count(),
            4
        );
        // The thread wakes 1.5 t late and the driver says so before it polls.
        let late = Dur(t.0 * 3 / 2);
        let woke = Time::ZERO + late;
        a.note_host_delay(late);
        let sent = std::iter::from_fn(|| a.poll_transmit(woke, &mut p)).count();
        if exclude {
            assert_eq!(sent, 4, "still sent: a round");
            assert!(!failed(&mut a));
            // Moved by t, not by the whole 1.5 t: it fails at 2 t.
            a.note_host_delay(late + t);
            a.poll_transmit(Time::ZERO + t + t, &mut p);
            assert!(failed(&mut a), "t runs on, by at most t");
        } else {
            assert_eq!(sent, 0);
            assert!(failed(&mut a), "Algorithm 1's t");
        }
    }
}
