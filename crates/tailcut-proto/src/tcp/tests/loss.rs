//! Loss detection and recovery, scripted: which segment is retransmitted, when, and how the
//! counters move (RFC 6298, 5681, 6582, 6675, 3042, 5827).

use super::harness::{drop_first_copies, last_new_ack_before, test_cfg, Fate, Harness, MSS};
use crate::engine::AppEvent;
use crate::tcp::{DelayedAck, LossDetection, RtoEstimator, TcpConfig};
use crate::time::{Dur, Time};

/// The harness configuration with RFC 6675 DupThresh loss detection, for the tests of its rules.
fn dupthresh_cfg() -> TcpConfig {
    TcpConfig {
        loss_detection: LossDetection::Dupthresh,
        // The timer rules these tests check are RFC 6298's, clamp included (Linux's RTO sits
        // `min_rto` above SRTT instead: `rtt.rs` tests).
        rto_estimator: RtoEstimator::Rfc6298,
        ..test_cfg()
    }
}

#[test]
fn tail_loss_is_recovered_by_rto_at_min_rto() {
    // DupThresh: RACK-TLP would probe the tail loss away (`rack.rs` tests).
    let cfg = dupthresh_cfg();
    let mut h = Harness::tcp(cfg.clone());
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 3 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 1);
    assert_eq!(rtx[0].info.offset, Some(2 * MSS));
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
    let mut h = Harness::tcp(cfg);
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 10 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 1, "{rtx:?}");
    assert_eq!(rtx[0].info.offset, Some(2 * MSS));
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
        // RFC 5827 is DupThresh's; RACK supersedes it (Linux removed it in 4.18).
        loss_detection: LossDetection::Dupthresh,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
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
        assert_eq!(rtx[0].info.offset, Some(0));
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
    // DupThresh, so that both retransmissions are the RTO's (no tail loss probe).
    let cfg = dupthresh_cfg();
    let mut h = Harness::tcp(cfg.clone());
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(2 * MSS) && c.info.copy < 2 {
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
    let mut h = Harness::tcp(cfg);
    drop_first_copies(&mut h, &[3 * MSS, 7 * MSS, 12 * MSS]);
    h.send(0, 1, 20 * MSS);
    h.run();
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
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
    let mut h = Harness::tcp(cfg);
    drop_first_copies(&mut h, &[3 * MSS, 8 * MSS]);
    h.send(0, 1, 20 * MSS);
    h.run();
    let rtx = h.retransmissions(0);
    let offs: Vec<u64> = rtx.iter().filter_map(|s| s.info.offset).collect();
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
        let mut h = Harness::tcp(cfg);
        drop_first_copies(&mut h, &[MSS]);
        h.send(0, 1, 30 * MSS);
        h.run();
        let dups = &h.acks_arriving(0, MSS)[1..];
        assert!(dups.len() >= 3);
        let sent_at = |t: Time| -> Vec<u64> {
            h.data_from(0)
                .filter(|s| s.time == t)
                .filter_map(|s| s.info.offset)
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
fn mild_reordering_is_not_a_loss() {
    let mut h = Harness::tcp(test_cfg());
    // Segment 2 arrives after segments 3 and 4: two dupACKs, below the threshold of three.
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(2 * MSS) && c.info.copy == 0 {
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
    let mut h = Harness::tcp(test_cfg());
    // Only every fourth pure ACK survives.
    h.set_fault(|c| {
        if c.from == 1 && c.info.offset.is_none() && c.info.ctl_index % 4 != 3 {
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
fn without_dupack_detection_only_the_timer_recovers() {
    let cfg = TcpConfig {
        dupack_threshold: u32::MAX,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg.clone());
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 10 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (0, 1));
    // SACK info is kept through the timeout (RFC 6675 Sec. 5.1): only the hole is resent.
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
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
    let mut h = Harness::tcp(cfg);
    drop_first_copies(&mut h, &[2 * MSS]);
    h.send(0, 1, 6 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!(st.timeouts, 1);
    // Without SACK the sender does not know what arrived: it goes back over the window, one
    // slow-start step at a time, until the cumulative ACK jumps past what it resent.
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(rtx[0], 2 * MSS);
    assert_eq!(h.eps[1].rcv_nxt(), 6 * MSS);
    assert!(h.eps[1].stats().duplicate_segments as usize == rtx.len() - 1);
}

#[test]
fn early_timer_calls_change_nothing() {
    let trace = |early: bool| {
        let cfg = TcpConfig {
            delayed_ack: Some(DelayedAck::Fixed(Dur::from_micros(50))),
            ..test_cfg()
        };
        let mut h = Harness::tcp(cfg);
        h.early_timer_calls = early;
        h.set_fault(|c| {
            if (c.from == 0 && c.info.data_index % 7 == 3) || (c.from == 1 && c.info.ctl_index % 5 == 2) {
                Fate::Drop
            } else {
                Fate::Deliver
            }
        });
        h.send(0, 1, 50 * MSS);
        h.run();
        assert_eq!(h.eps[1].rcv_nxt(), 50 * MSS);
        h.sent
    };
    assert_eq!(trace(false), trace(true));
}
