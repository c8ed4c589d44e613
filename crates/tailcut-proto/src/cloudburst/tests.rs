//! Scripted two-endpoint tests on virtual time with a step limit.

use super::*;
use crate::packet::Addr;
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
    let a = CloudBurstEndpoint::new(cfg.clone(), tuple(), Rng::seed_from_u64(1));
    let b = CloudBurstEndpoint::new(cfg, tuple().reversed(), Rng::seed_from_u64(2));
    (a, b)
}

/// One packet in flight: (arrival, sequence, to_b, packet, payload).
type Flight = (Time, u64, bool, Packet, Vec<u8>);

#[derive(Default)]
struct Log {
    /// (time, from_a, header) of every packet put on the wire, dropped or not.
    sent: Vec<(Time, bool, CbHeader, Packet)>,
    a_events: Vec<(Time, AppEvent)>,
    b_events: Vec<(Time, AppEvent)>,
}

/// Runs until both sides are idle or `until`. `drop(from_a, header, index_of_that_kind)` decides losses.
fn run(
    a: &mut CloudBurstEndpoint,
    b: &mut CloudBurstEndpoint,
    until: Time,
    mut drop: impl FnMut(bool, &CbHeader) -> bool,
) -> Log {
    let mut log = Log::default();
    let mut flights: Vec<Flight> = Vec::new();
    let mut seq = 0u64;
    let mut now = Time::ZERO;
    for _step in 0..200_000 {
        for from_a in [true, false] {
            let e = if from_a { &mut *a } else { &mut *b };
            loop {
                let mut buf = Vec::new();
                let Some(p) = e.poll_transmit(now, &mut buf) else {
                    break;
                };
                let h = CbHeader::parse(&buf).expect("own header parses");
                log.sent.push((now, from_a, h, p));
                if !drop(from_a, &h) {
                    seq += 1;
                    flights.push((now + DELAY, seq, from_a, p, buf));
                }
            }
            while let Some(ev) = e.poll_event() {
                if from_a {
                    log.a_events.push((now, ev));
                } else {
                    log.b_events.push((now, ev));
                }
            }
        }
        let next_flight = flights.iter().map(|f| (f.0, f.1)).min();
        let next = [
            next_flight.map(|f| f.0),
            a.poll_timeout().map(|t| t.max(now)),
            b.poll_timeout().map(|t| t.max(now)),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else {
            return log;
        };
        if next > until {
            return log;
        }
        now = next;
        if let Some(f) = next_flight.filter(|f| f.0 == now) {
            let i = flights.iter().position(|x| (x.0, x.1) == f).expect("there");
            let (_, _, to_b, p, payload) = flights.swap_remove(i);
            let e = if to_b { &mut *b } else { &mut *a };
            e.handle_packet(now, &p, &payload);
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    panic!("step limit: livelock");
}

fn coded_from_a(log: &Log) -> usize {
    log.sent.iter().filter(|s| s.1).count()
}

#[test]
fn delivers_and_the_stop_stops_the_sender() {
    let (mut a, mut b) = pair(CloudBurstConfig::default());
    a.send_message(Time::ZERO, 7, 10_000);
    b.expect_message(7, 10_000);
    let log = run(&mut a, &mut b, Time(50_000_000), |_, _| false);
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
    assert_eq!(a.counters().messages_acked, 1);
    assert!(a.poll_timeout().is_none_or(|t| t > t_ack));
    // Class and explicit paths 0..4, round-robin.
    let labels: Vec<Route> = log
        .sent
        .iter()
        .filter(|s| s.1)
        .map(|s| s.3.route)
        .take(5)
        .collect();
    assert_eq!(
        labels,
        vec![
            Route::Path(0),
            Route::Path(1),
            Route::Path(2),
            Route::Path(3),
            Route::Path(0)
        ]
    );
    assert!(log.sent.iter().all(|s| s.3.class == 1));
}

#[test]
fn rounds_are_paced_at_share_r() {
    let cfg = CloudBurstConfig {
        rate_share: 0.5,
        ..CloudBurstConfig::default()
    };
    let gap = cfg.round_gap();
    // 4 paths x 1500 B x 8 / (0.5 x 1 Gbps) = 96 us.
    assert_eq!(gap, Dur::from_micros(96));
    let (mut a, mut b) = pair(cfg);
    a.send_message(Time::ZERO, 1, 90_000);
    // The receiver never gets anything: watch the sender alone for 5 rounds.
    let log = run(&mut a, &mut b, Time(gap.0 * 4 + 1), |_, _| true);
    let times: Vec<Time> = log.sent.iter().filter(|s| s.1).map(|s| s.0).collect();
    assert_eq!(times.len(), 20);
    for (i, t) in times.iter().enumerate() {
        assert_eq!(t.0, (i as u64 / 4) * gap.0);
    }
}

#[test]
fn a_lost_stop_is_repeated_for_every_further_packet() {
    let (mut a, mut b) = pair(CloudBurstConfig::default());
    a.send_message(Time::ZERO, 3, 20_000);
    b.expect_message(3, 20_000);
    let mut stops = 0;
    let log = run(&mut a, &mut b, Time(50_000_000), |from_a, h| {
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
    assert!(b.counters().stops_sent >= 4);
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
        ..CloudBurstConfig::default()
    };
    let (mut a, mut b) = pair(cfg);
    a.send_message(Time::ZERO, 5, 60 * 1460);
    let mut n = 0;
    // Only the first 3 packets arrive; the sender then times out (10 ms) and the decoder expires
    // 10 ms after its last packet.
    let log = run(&mut a, &mut b, Time(100_000_000), |from_a, _| {
        n += from_a as u32;
        n > 3
    });
    assert!(log.b_events.is_empty());
    assert_eq!(b.counters().decoders_expired, 1);
    assert!(b.poll_timeout().is_none());
    assert!(
        matches!(log.a_events[..], [(t, AppEvent::MessageFailed { msg: 5, .. })] if t == Time(10_000_000))
    );
}

#[test]
fn a_message_over_64_packets_fails_at_once() {
    let (mut a, _) = pair(CloudBurstConfig::default());
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
    let (mut a, mut b) = pair(CloudBurstConfig::default());
    a.send_message(Time::ZERO, 1, 30_000);
    a.send_message(Time::ZERO, 2, 30_000);
    b.expect_message(1, 30_000);
    b.expect_message(2, 30_000);
    let log = run(&mut a, &mut b, Time(50_000_000), |_, _| false);
    let ids: Vec<u8> = log
        .sent
        .iter()
        .filter(|s| s.1)
        .map(|s| s.2.msg_id)
        .take(4)
        .collect();
    assert_eq!(ids, vec![1, 2, 1, 2]);
    assert_eq!(log.b_events.len(), 2);
    assert_eq!(a.counters().messages_acked, 2);
}

#[test]
fn ecmp_mode_spreads_source_ports() {
    let cfg = CloudBurstConfig {
        path_mode: PathMode::Ecmp,
        ..CloudBurstConfig::default()
    };
    let (mut a, mut b) = pair(cfg);
    a.send_message(Time::ZERO, 1, 90_000);
    let log = run(&mut a, &mut b, Time(1), |_, _| true);
    let ports: Vec<u16> = log.sent.iter().map(|s| s.3.tuple.src_port).collect();
    assert_eq!(ports, vec![100, 101, 102, 103]);
    assert!(log
        .sent
        .iter()
        .all(|s| s.3.route == Route::Ecmp && s.3.tuple.dst_port == 200));
}

#[test]
fn random_loss_still_delivers_everything() {
    for seed in 0..20u64 {
        let (mut a, mut b) = pair(CloudBurstConfig::default());
        let mut r = Rng::seed_from_u64(seed);
        for m in 0..5u64 {
            a.send_message(Time::ZERO, m, 1 + m * 20_000);
            b.expect_message(m, 1 + m * 20_000);
        }
        let log = run(&mut a, &mut b, Time(50_000_000), |_, _| r.random::<f64>() < 0.3);
        assert_eq!(log.b_events.len(), 5, "seed {seed}");
        assert_eq!(a.counters().messages_acked, 5, "seed {seed}");
    }
}
