//! Scripted scenarios asserting exact behaviour: which segment is retransmitted, when, and how the
//! counters move.

use super::harness::{test_cfg, Fate, Harness};
use crate::engine::{AppEvent, Engine, MessageStats};
use crate::tcp::{CongestionControl, TcpConfig};
use crate::time::{Dur, Time};

const MSS: u64 = 1000;

/// Drop the first transmission of the segments starting at `offsets` (side 0's stream).
fn drop_first_copies(h: &mut Harness, offsets: &'static [u64]) {
    h.set_fault(move |c| {
        if c.from == 0 && c.copy == 0 && c.offset.is_some_and(|o| offsets.contains(&o)) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
}

/// The time the last ACK that advanced side 0's snd_una arrived before `t`.
fn last_new_ack_before(h: &Harness, t: Time) -> Time {
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

#[test]
fn tail_loss_is_recovered_by_rto_at_min_rto() {
    let cfg = test_cfg();
    let mut h = Harness::new(cfg.clone());
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 3 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 1);
    assert_eq!(rtx[0].offset, Some(2 * MSS));
    // RFC 6298 Sec. 5.3: the timer was restarted by the last new ACK; the RTO is clamped to min_rto.
    let armed = last_new_ack_before(&h, rtx[0].time);
    assert_eq!(rtx[0].time, armed + cfg.min_rto);
    let st = h.eps[0].stats();
    assert_eq!((st.timeouts, st.fast_retransmits, st.retransmits), (1, 0, 1));
    assert_eq!(h.eps[1].rcv_nxt(), 3 * MSS);
    assert!(h.events_of(0).iter().any(|e| matches!(
        e,
        AppEvent::MessageAcked { msg: 1, stats } if stats.timeouts == 1 && stats.retransmitted_bytes == MSS
    )));
}

fn fast_retransmit_case(sack: bool) {
    let cfg = TcpConfig { sack, ..test_cfg() };
    let mut h = Harness::new(cfg);
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 10 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 1, "{rtx:?}");
    assert_eq!(rtx[0].offset, Some(2 * MSS));
    // Sent on the arrival of the third duplicate ACK, long before any RTO.
    // The first ACK of 2000 is new; the duplicates follow it.
    let dups = &h.acks_arriving(0, 2 * MSS)[1..];
    assert!(dups.len() >= 3, "{dups:?}");
    assert_eq!(rtx[0].time, dups[2]);
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    assert_eq!(h.eps[1].rcv_nxt(), 10 * MSS);
}

#[test]
fn three_dupacks_fast_retransmit_with_sack() {
    fast_retransmit_case(true);
}

#[test]
fn three_dupacks_fast_retransmit_newreno() {
    fast_retransmit_case(false);
}

fn early_retransmit_case(sack: bool, early: bool) -> Harness {
    let cfg = TcpConfig {
        sack,
        early_retransmit: early,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    drop_first_copies(&mut h, &[0]);
    h.send(0, 1, 2 * MSS);
    h.run();
    h
}

#[test]
fn early_retransmit_on_one_dupack() {
    for sack in [true, false] {
        let h = early_retransmit_case(sack, true);
        let rtx = h.retransmissions(0);
        assert_eq!(rtx.len(), 1);
        assert_eq!(rtx[0].offset, Some(0));
        let dups = h.acks_arriving(0, 0);
        assert_eq!(dups.len(), 1);
        assert_eq!(rtx[0].time, dups[0]);
        let st = h.eps[0].stats();
        assert_eq!((st.fast_retransmits, st.timeouts), (1, 0), "sack={sack}");
    }
    // Without early retransmit the same loss needs the timer.
    let h = early_retransmit_case(true, false);
    assert_eq!(h.eps[0].stats().timeouts, 1);
}

#[test]
fn lost_retransmission_backs_off_the_rto() {
    let cfg = test_cfg();
    let mut h = Harness::new(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.offset == Some(2 * MSS) && c.copy < 2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 3 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 2);
    let armed = last_new_ack_before(&h, rtx[0].time);
    let first = rtx[0].time - armed;
    let second = rtx[1].time - rtx[0].time;
    assert_eq!(first, cfg.min_rto);
    // RFC 6298 Sec. 5.5: the second timeout waits twice as long.
    assert_eq!(second, first.saturating_mul(2));
    assert_eq!(h.eps[0].stats().timeouts, 2);
    assert_eq!(h.eps[1].rcv_nxt(), 3 * MSS);
}

#[test]
fn sack_recovers_several_holes_in_one_episode() {
    let cfg = TcpConfig {
        initial_cwnd_segments: 20,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    drop_first_copies(&mut h, &[3 * MSS, 7 * MSS, 12 * MSS]);
    h.send(0, 1, 20 * MSS);
    h.run();
    let rtx: Vec<u64> = h.retransmissions(0).iter().filter_map(|s| s.offset).collect();
    assert_eq!(rtx, vec![3 * MSS, 7 * MSS, 12 * MSS]);
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    // One window reduction: ssthresh = FlightSize / 2 at entry (segments 3..20 in flight).
    assert_eq!(h.eps[0].ssthresh_bytes(), 17 * MSS / 2);
    assert_eq!(h.eps[1].rcv_nxt(), 20 * MSS);
}

#[test]
fn newreno_recovers_two_losses_with_a_partial_ack() {
    let cfg = TcpConfig {
        sack: false,
        initial_cwnd_segments: 20,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    drop_first_copies(&mut h, &[3 * MSS, 8 * MSS]);
    h.send(0, 1, 20 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    let offs: Vec<u64> = rtx.iter().filter_map(|s| s.offset).collect();
    assert_eq!(offs, vec![3 * MSS, 8 * MSS]);
    // The second hole is retransmitted as soon as the partial ACK (up to it) arrives.
    let partial = h.acks_arriving(0, 8 * MSS);
    assert_eq!(rtx[1].time, partial[0]);
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts, st.retransmits), (1, 0, 2));
    // FlightSize at entry: segments 3..20.
    assert_eq!(h.eps[0].ssthresh_bytes(), 17 * MSS / 2);
    assert_eq!(h.eps[1].rcv_nxt(), 20 * MSS);
}

#[test]
fn limited_transmit_sends_new_data_on_first_two_dupacks() {
    for limited in [true, false] {
        let cfg = TcpConfig {
            limited_transmit: limited,
            ..test_cfg()
        };
        let mut h = Harness::new(cfg);
        drop_first_copies(&mut h, &[MSS]);
        h.send(0, 1, 30 * MSS);
        h.run();
        let dups = &h.acks_arriving(0, MSS)[1..];
        assert!(dups.len() >= 3);
        let sent_at = |t: Time| -> Vec<u64> {
            h.data_from(0)
                .filter(|s| s.time == t)
                .filter_map(|s| s.offset)
                .collect()
        };
        if limited {
            // The initial window (10) plus two from slow start on the first ACK: 12 segments out.
            assert_eq!(sent_at(dups[0]), vec![12 * MSS]);
            assert_eq!(sent_at(dups[1]), vec![13 * MSS]);
        } else {
            assert!(sent_at(dups[0]).is_empty());
            assert!(sent_at(dups[1]).is_empty());
        }
        assert_eq!(sent_at(dups[2]), vec![MSS], "fast retransmit on the third");
        assert_eq!(h.eps[1].rcv_nxt(), 30 * MSS);
    }
}

#[test]
fn delayed_ack_every_second_segment_and_after_the_delay() {
    let delay = Dur::from_millis(1);
    let cfg = TcpConfig {
        delayed_ack: Some(delay),
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    h.send(0, 1, 5 * MSS);
    h.run();
    let acks: Vec<_> = h
        .sent
        .iter()
        .filter(|s| s.from == 1 && s.offset.is_none())
        .copied()
        .collect();
    let ack_offsets: Vec<_> = acks.iter().map(|a| a.ack.unwrap()).collect();
    assert_eq!(ack_offsets, vec![2 * MSS, 4 * MSS, 5 * MSS]);
    let fifth_arrival = h
        .arrivals
        .iter()
        .filter(|a| a.to == 1 && a.pkt.payload_len() > 0)
        .nth(4)
        .unwrap()
        .time;
    assert_eq!(acks[2].time, fifth_arrival + delay);
    // The first two ACKs go out the instant the second segment of each pair arrives.
    let second_arrival = h
        .arrivals
        .iter()
        .filter(|a| a.to == 1 && a.pkt.payload_len() > 0)
        .nth(1)
        .unwrap()
        .time;
    assert_eq!(acks[0].time, second_arrival);
}

#[test]
fn handshake_survives_syn_loss() {
    let cfg = TcpConfig {
        handshake: true,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.ctl_index == 0 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 3 * MSS);
    h.run();
    let syns: Vec<_> = h
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::SYN))
        .copied()
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

fn burst_after_idle(slow_start_after_idle: bool) -> usize {
    let cfg = TcpConfig {
        slow_start_after_idle,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
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
    let cfg = test_cfg();
    let mut h = Harness::new(cfg);
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
    let mut h = Harness::new(test_cfg());
    h.send(0, 9, 3 * MSS);
    assert_eq!(h.eps[0].message_stats(9).map(|s| s.sent_bytes), Some(3 * MSS));
}

#[test]
fn dctcp_alpha_tracks_the_marked_fraction_and_cuts_by_half_alpha() {
    let k = 8u64;
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    h.set_fault(move |c| {
        if c.from == 0 && c.offset.is_some() && c.data_index % k == k - 1 {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 4000 * MSS);
    h.run();
    assert_eq!(h.eps[0].stats().retransmits, 0);
    let alpha = h.eps[0].dctcp_alpha().unwrap();
    let f = 1.0 / k as f64;
    assert!((alpha - f).abs() < 0.04, "alpha {alpha} vs marked fraction {f}");
    // Every reduction is cwnd <- cwnd (1 - alpha / 2), with alpha as updated by that ACK.
    let cuts: Vec<_> = h
        .cwnd_log
        .iter()
        .filter(|o| o.ecn_reductions_after > o.ecn_reductions_before)
        .collect();
    assert!(cuts.len() > 50, "{}", cuts.len());
    for o in &cuts {
        let a = o.alpha_after.unwrap();
        let want = ((o.cwnd_before as f64 * (1.0 - a / 2.0)) as u64).max(2 * MSS);
        assert_eq!(o.cwnd_after, want, "{o:?}");
    }
    // Data packets were ECN-capable.
    assert!(h.data_from(0).all(|s| s.pkt.ecn != crate::Ecn::NotEct));
}

#[test]
fn classic_ecn_halves_once_per_window_and_sets_cwr() {
    let cfg = TcpConfig {
        ecn: true,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    // Mark two packets of the first window: one reduction only.
    h.set_fault(|c| {
        if c.from == 0 && (c.data_index == 2 || c.data_index == 4) {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 40 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!(st.ecn_reductions, 1);
    assert_eq!(st.retransmits, 0);
    let cwr = h
        .data_from(0)
        .filter(|s| s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::CWR))
        .count();
    assert_eq!(cwr, 1);
    // The receiver stopped echoing after CWR: the last ACK has no ECE.
    let last_ack = h.sent.iter().rfind(|s| s.from == 1).unwrap();
    assert!(!last_ack.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::ECE));
}

#[test]
fn mild_reordering_is_not_a_loss() {
    let mut h = Harness::new(test_cfg());
    // Segment 2 arrives after segments 3 and 4: two dupACKs, below the threshold of three.
    h.set_fault(|c| {
        if c.from == 0 && c.offset == Some(2 * MSS) && c.copy == 0 {
            Fate::Delay(Dur::from_nanos(2_000))
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 10 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!((st.retransmits, st.fast_retransmits, st.timeouts), (0, 0, 0));
    assert_eq!(h.eps[1].stats().out_of_order_segments, 2);
    assert_eq!(h.eps[1].rcv_nxt(), 10 * MSS);
}

#[test]
fn lost_acks_are_covered_by_later_cumulative_acks() {
    let mut h = Harness::new(test_cfg());
    // Only every fourth pure ACK survives.
    h.set_fault(|c| {
        if c.from == 1 && c.offset.is_none() && c.ctl_index % 4 != 3 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 60 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!((st.retransmits, st.timeouts), (0, 0));
    assert_eq!(h.eps[1].rcv_nxt(), 60 * MSS);
}

#[test]
fn handshake_survives_syn_ack_and_final_ack_loss() {
    let cfg = TcpConfig {
        handshake: true,
        ..test_cfg()
    };
    // First SYN-ACK lost.
    let mut h = Harness::new(cfg.clone());
    h.set_fault(|c| {
        if c.from == 1 && c.ctl_index == 0 {
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
    let mut h = Harness::new(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.ctl_index == 1 {
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
            ..MessageStats::default()
        }
    }));
}

#[test]
fn explicit_retransmit_request_goes_out_at_once() {
    let mut h = Harness::new(test_cfg());
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
fn dctcp_receiver_acks_at_once_when_ce_state_changes() {
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        delayed_ack: Some(Dur::from_millis(1)),
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    // Segment 0 unmarked, 1 marked, 2 and 3 unmarked.
    h.set_fault(|c| {
        if c.from == 0 && c.data_index == 1 {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 4 * MSS);
    h.run();
    let acks: Vec<(u64, bool)> = h
        .sent
        .iter()
        .filter(|s| s.from == 1 && s.offset.is_none())
        .map(|s| {
            let ece = s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::ECE);
            (s.ack.unwrap(), ece)
        })
        .collect();
    // Segment 0 is acknowledged without ECE when the marked segment 1 arrives; segment 1 with ECE
    // when the unmarked segment 2 arrives; 2 and 3 together (without ECE).
    assert_eq!(acks, vec![(MSS, false), (2 * MSS, true), (4 * MSS, false)]);
}

#[test]
fn advertised_window_limits_the_flight() {
    let cfg = TcpConfig {
        rcv_window_bytes: 3 * MSS as u32,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    h.send(0, 1, 30 * MSS);
    let mut max_flight = 0;
    while h.step() {
        max_flight = max_flight.max(h.eps[0].snd_nxt() - h.eps[0].snd_una());
    }
    assert_eq!(max_flight, 3 * MSS);
    assert_eq!(h.eps[1].rcv_nxt(), 30 * MSS);
}

#[test]
fn without_dupack_detection_only_the_timer_recovers() {
    let cfg = TcpConfig {
        dupack_threshold: u32::MAX,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg.clone());
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 10 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (0, 1));
    // SACK info is kept through the timeout (RFC 6675 Sec. 5.1): only the hole is resent.
    let rtx: Vec<u64> = h.retransmissions(0).iter().filter_map(|s| s.offset).collect();
    assert_eq!(rtx, vec![2 * MSS]);
    assert_eq!(h.eps[1].rcv_nxt(), 10 * MSS);
}

#[test]
fn timeout_without_sack_goes_back_from_snd_una() {
    let cfg = TcpConfig {
        sack: false,
        dupack_threshold: u32::MAX,
        ..test_cfg()
    };
    let mut h = Harness::new(cfg);
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 6 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!(st.timeouts, 1);
    // Without SACK the sender does not know what arrived: it goes back over the window, one
    // slow-start step at a time, until the cumulative ACK jumps past what it resent.
    let rtx: Vec<u64> = h.retransmissions(0).iter().filter_map(|s| s.offset).collect();
    assert_eq!(rtx[0], 2 * MSS);
    assert_eq!(h.eps[1].rcv_nxt(), 6 * MSS);
    assert!(h.eps[1].stats().duplicate_segments as usize == rtx.len() - 1);
}
