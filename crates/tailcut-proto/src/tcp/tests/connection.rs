//! Connection behaviour, scripted: handshake, delayed ACKs, idle restart, flow control, messages.

use super::harness::{drop_first_copies, test_cfg, Fate, Harness, MSS};
use crate::engine::{AppEvent, Engine, MessageStats};
use crate::tcp::{DelayedAck, LossDetection, TcpConfig};
use crate::time::{Dur, Time};

#[test]
fn delayed_ack_every_second_segment_and_after_the_delay() {
    let delay = Dur::from_millis(1);
    let cfg = TcpConfig {
        delayed_ack: Some(DelayedAck::Fixed(delay)),
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 5 * MSS);
    h.run();
    let acks: Vec<_> = h
        .sent
        .iter()
        .filter(|s| s.from == 1 && s.info.offset.is_none())
        .cloned()
        .collect();
    let ack_offsets: Vec<_> = acks.iter().map(|a| a.info.ack.unwrap()).collect();
    assert_eq!(ack_offsets, vec![2 * MSS, 4 * MSS, 5 * MSS]);
    let fifth_arrival = h
        .probe
        .arrivals
        .iter()
        .filter(|a| a.to == 1 && a.pkt.payload_len() > 0)
        .nth(4)
        .unwrap()
        .time;
    assert_eq!(acks[2].time, fifth_arrival + delay);
    // The first two ACKs go out the instant the second segment of each pair arrives.
    let second_arrival = h
        .probe
        .arrivals
        .iter()
        .filter(|a| a.to == 1 && a.pkt.payload_len() > 0)
        .nth(1)
        .unwrap()
        .time;
    assert_eq!(acks[0].time, second_arrival);
}

/// A connection with the handshake whose client loses its first SYN.
fn first_syn_lost() -> (TcpConfig, Harness) {
    let cfg = TcpConfig {
        handshake: true,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.info.ctl_index == 0 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    (cfg, h)
}

#[test]
fn handshake_survives_syn_loss() {
    let (cfg, mut h) = first_syn_lost();
    h.send(0, 1, 3 * MSS);
    h.run();
    let syns: Vec<_> = h
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::SYN))
        .cloned()
        .collect();
    assert_eq!(syns.len(), 2);
    assert_eq!(syns[0].time, Time::ZERO);
    assert_eq!(syns[1].time, Time::ZERO + cfg.initial_rto);
    assert_eq!(h.eps[0].stats().syn_retransmits, 1);
    assert!(h.events_of(0).contains(&AppEvent::Connected));
    assert!(h.events_of(1).contains(&AppEvent::Connected));
    assert!(h.events_of(1).contains(&AppEvent::MessageReceived { msg: 1 }));
    assert_eq!(h.eps[1].rcv_nxt(), 3 * MSS);
    // Karn: the retransmitted SYN gives no sample; data then does.
    assert!(h.eps[0].srtt().unwrap() < Dur::from_millis(1));
    // No data before the connection is established.
    let connected_at = h
        .events
        .iter()
        .find(|e| e.1 == 0 && e.2 == AppEvent::Connected)
        .unwrap()
        .0;
    assert!(h.data_from(0).all(|s| s.time >= connected_at));
}

/// A SYN lost before the application wrote anything (it writes after `connect` returns, the
/// simulator's `host_delay`) still costs the first message its timeout: it is charged to it.
#[test]
fn a_handshake_timeout_before_the_first_write_is_charged_to_that_message() {
    let (cfg, mut h) = first_syn_lost();
    // The client opens (its SYN is lost); the application writes once connected.
    h.run_until(Time::ZERO + cfg.initial_rto + Dur::from_millis(1));
    assert!(h.events_of(0).contains(&AppEvent::Connected));
    h.send(0, 1, 3 * MSS);
    h.run();
    assert!(h.events_of(0).iter().any(|e| matches!(
        e,
        AppEvent::MessageAcked { msg: 1, stats } if stats.timeouts == 1
    )));
}

fn burst_after_idle(slow_start_after_idle: bool) -> usize {
    let cfg = TcpConfig {
        slow_start_after_idle,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 100 * MSS);
    h.run();
    assert!(h.eps[0].cwnd_bytes() > 20 * MSS);
    let idle_until = h.now + Dur::from_millis(50);
    h.run_until(idle_until);
    h.send(0, 2, 100 * MSS);
    let n = h.data_from(0).filter(|s| s.time == idle_until).count();
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 200 * MSS);
    n
}

#[test]
fn slow_start_after_idle_restarts_from_initial_window() {
    assert_eq!(burst_after_idle(true), 10);
    assert!(burst_after_idle(false) > 20);
}

#[test]
fn messages_get_their_own_events_and_stats() {
    // DupThresh, so the tail loss costs a timeout to charge (RACK-TLP would probe it away).
    let cfg = TcpConfig {
        loss_detection: LossDetection::Dupthresh,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    // Stream: msg 1 [0, 5000), msg 2 [5000, 8500), msg 3 empty, msg 4 [8500, 10500). Each message
    // is segmented when queued (no Nagle): ..., [8000, 8500), [8500, 9500), [9500, 10500).
    // Segment [5000, 6000) is lost (fast retransmit, charged to msg 2); the tail segment
    // [9500, 10500) is lost with nothing after it (timeout, charged to msg 4).
    drop_first_copies(&mut h, &[5 * MSS, 9500]);
    h.send(0, 1, 5000);
    h.send(0, 2, 3500);
    h.send(0, 3, 0);
    h.send(0, 4, 2000);
    h.run();
    let received: Vec<_> = h
        .events_of(1)
        .into_iter()
        .filter_map(|e| match e {
            AppEvent::MessageReceived { msg } => Some(msg),
            _ => None,
        })
        .collect();
    assert_eq!(received, vec![3, 1, 2, 4]);
    let acked: Vec<_> = h
        .events_of(0)
        .into_iter()
        .filter_map(|e| match e {
            AppEvent::MessageAcked { msg, stats } => Some((msg, stats)),
            _ => None,
        })
        .collect();
    let s = |sent_bytes, retransmitted_bytes, fast_retransmits, timeouts| MessageStats {
        sent_bytes,
        retransmitted_bytes,
        fast_retransmits,
        timeouts,
        redundant_bytes: 0,
    };
    assert_eq!(
        acked,
        vec![
            (3, MessageStats::default()),
            (1, s(5000, 0, 0, 0)),
            (2, s(4500, 1000, 1, 0)),
            (4, s(3000, 1000, 0, 1)),
        ]
    );
    assert_eq!(h.eps[0].message_stats(4), None);
}

#[test]
fn message_stats_are_visible_before_completion() {
    let mut h = Harness::tcp(test_cfg());
    h.send(0, 9, 3 * MSS);
    assert_eq!(h.eps[0].message_stats(9).map(|s| s.sent_bytes), Some(3 * MSS));
}

#[test]
fn handshake_survives_syn_ack_and_final_ack_loss() {
    let cfg = TcpConfig {
        handshake: true,
        ..test_cfg()
    };
    // First SYN-ACK lost.
    let mut h = Harness::tcp(cfg.clone());
    h.set_fault(|c| {
        if c.from == 1 && c.info.ctl_index == 0 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 2 * MSS);
    h.send(1, 2, 2 * MSS);
    h.run();
    let syn_acks = h
        .sent
        .iter()
        .filter(|s| s.from == 1 && s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::SYN))
        .count();
    // The client's SYN timer (or the server's own) brings a second SYN-ACK.
    assert_eq!(syn_acks, 2);
    assert_eq!((h.eps[0].rcv_nxt(), h.eps[1].rcv_nxt()), (2 * MSS, 2 * MSS));

    // The client's third-handshake ACK lost and the client has no data: the server's SYN-ACK
    // retransmission makes the client acknowledge again.
    let mut h = Harness::tcp(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.info.ctl_index == 1 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(1, 2, 3 * MSS);
    h.run();
    assert!(h.eps[1].is_established());
    assert_eq!(h.eps[1].stats().syn_retransmits, 1);
    assert_eq!(h.eps[0].rcv_nxt(), 3 * MSS);
    assert!(h.events_of(1).contains(&AppEvent::MessageAcked {
        msg: 2,
        stats: MessageStats {
            sent_bytes: 3 * MSS,
            // The SYN-ACK timeout delayed this message by an RTO: it counts as its timeout.
            timeouts: 1,
            ..MessageStats::default()
        }
    }));
}

#[test]
fn explicit_retransmit_request_goes_out_at_once() {
    let mut h = Harness::tcp(test_cfg());
    h.send(0, 1, 10 * MSS);
    // All ten segments are in flight (cwnd full); the request bypasses cwnd.
    assert!(h.eps[0].retransmit_segment(3 * MSS + 10));
    let mut scratch = Vec::new();
    let p = h.eps[0].poll_transmit(h.now, &mut scratch).unwrap();
    let seq = p.tcp().unwrap().seq;
    assert_eq!(seq.unwrap_near(super::harness::ISN[0], 0), Some(3 * MSS));
    assert!(h.eps[0].poll_transmit(h.now, &mut scratch).is_none());
    assert!(!h.eps[0].retransmit_segment(10 * MSS));
    assert_eq!(h.eps[0].stats().retransmits, 1);
}

#[test]
fn advertised_window_limits_the_flight() {
    let cfg = TcpConfig {
        rcv_window_bytes: 3 * MSS as u32,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 30 * MSS);
    let mut max_flight = 0;
    while h.step() {
        max_flight = max_flight.max(h.eps[0].snd_nxt() - h.eps[0].snd_una());
    }
    assert_eq!(max_flight, 3 * MSS);
    assert_eq!(h.eps[1].rcv_nxt(), 30 * MSS);
}

#[test]
fn syn_retransmissions_back_off() {
    let cfg = TcpConfig {
        handshake: true,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.info.ctl_index < 2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, MSS);
    h.run();
    let syn_times: Vec<Time> = h
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::SYN))
        .map(|s| s.time)
        .collect();
    let rto = cfg.initial_rto;
    assert_eq!(
        syn_times,
        vec![
            Time::ZERO,
            Time::ZERO + rto,
            Time::ZERO + rto + rto.saturating_mul(2)
        ]
    );
    assert_eq!(h.eps[1].rcv_nxt(), MSS);
    // The back-off of the handshake does not carry over to data (RFC 6298 Sec. 5.7).
    assert!(h.eps[0].rto() <= cfg.min_rto + h.eps[0].srtt().unwrap().saturating_mul(3));
}

#[test]
fn class_route_and_timestamps_are_stamped_on_every_packet() {
    let mut h = Harness::tcp(test_cfg());
    h.eps[0].set_class(3);
    h.eps[0].set_route(crate::Route::Path(7));
    h.send(0, 1, 4 * MSS);
    h.run();
    for s in h.sent.iter().filter(|s| s.from == 0) {
        assert_eq!((s.pkt.class, s.pkt.route), (3, crate::Route::Path(7)));
        assert_eq!(s.pkt.tcp().unwrap().ts_val, (s.time.as_nanos() / 1_000) as u32);
        let want = 40 + s.pkt.payload_len();
        assert_eq!(s.pkt.size_bytes, want);
    }
    // The last ACK echoes the timestamp of the last data segment.
    let last_data = h.data_from(0).last().unwrap().pkt.tcp().unwrap().ts_val;
    let last_ack = h.sent.iter().rfind(|s| s.from == 1).unwrap();
    assert_eq!(last_ack.pkt.tcp().unwrap().ts_ecr, last_data);
}

#[test]
fn loss_free_transfer_fills_the_link_after_slow_start() {
    let mut h = Harness::tcp(test_cfg());
    let total = 10_000 * MSS;
    h.send(0, 1, total);
    h.run();
    let done = h
        .events
        .iter()
        .find(|e| e.1 == 0 && matches!(e.2, AppEvent::MessageAcked { .. }))
        .unwrap()
        .0;
    // Serialising 10,000 packets of 1040 bytes at 10 Gb/s takes 8.32 ms; slow start from 10
    // segments over a ~22 us RTT reaches the bandwidth-delay product within a handful of RTTs.
    let ideal = Dur::from_nanos(10_000 * 832);
    assert!(done > Time::ZERO + ideal, "{done}");
    assert!(done < Time::ZERO + ideal + Dur::from_micros(300), "{done}");
    let st = h.eps[0].stats();
    assert_eq!((st.retransmits, st.data_segments_sent), (0, 10_000));
    // One ACK per segment without delayed ACKs.
    assert_eq!(h.eps[1].stats().acks_sent, 10_000);
}

#[test]
#[should_panic(expected = "step limit")]
fn a_black_hole_hits_the_step_limit_instead_of_hanging() {
    let mut h = Harness::tcp(test_cfg());
    h.step_limit = 200;
    h.set_fault(|c| {
        if c.info.offset.is_some() {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, MSS);
    h.run();
}
