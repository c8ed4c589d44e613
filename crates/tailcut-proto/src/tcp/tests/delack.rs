//! Linux's delayed-ACK rules (`delayed_ack = { kind = "linux" }`), scripted: quick-ACK mode, the
//! every-second-full-segment rule, the adaptive ATO and its timer, and the immediate ACKs for
//! out-of-order data and ECN. The minimum RTO is Linux's 200 ms, so that neither the sender's RTO nor
//! its tail loss probe (which waits `min_rto` more for a lone segment) fires before a delayed ACK. The
//! side-1 receiver never sends data: it has no SRTT and its RTO is the 200 ms floor.

use super::harness::{drop_first_copies, test_cfg, Fate, Harness, MSS};
use crate::engine::AppEvent;
use crate::tcp::{CongestionControl, DelayedAck, LinuxDelayedAck, TcpConfig};
use crate::time::{Dur, Time};
use crate::TcpFlags;

const ATO_MIN: Dur = Dur::from_millis(40);
/// The receiver's RTO: it takes no RTT sample, so its initial RTO clamped to `min_rto`.
const RECEIVER_RTO: Dur = Dur::from_millis(200);

fn linux_cfg(linux: LinuxDelayedAck) -> TcpConfig {
    TcpConfig {
        delayed_ack: Some(DelayedAck::Linux(linux)),
        min_rto: Dur::from_millis(200),
        ..test_cfg()
    }
}

/// The receiver's (side 1's) pure ACKs from `from_index` on: (time, cumulative ACK offset).
fn acks(h: &Harness, from_index: usize) -> Vec<(Time, u64)> {
    h.sent
        .iter()
        .skip(from_index)
        .filter(|s| s.from == 1 && s.info.offset.is_none())
        .map(|s| (s.time, s.info.ack.unwrap()))
        .collect()
}

/// When the data segment ending at stream offset `end` (first copy) reached the receiver.
fn arrival_of(h: &Harness, end: u64) -> Time {
    h.probe
        .arrivals
        .iter()
        .filter(|a| a.to == 1 && a.pkt.payload_len() > 0)
        .find(|a| {
            let h = a.pkt.tcp().unwrap();
            let start = h.seq.unwrap_near(super::harness::ISN[0], 0).unwrap();
            start + u64::from(h.payload_len) == end
        })
        .unwrap()
        .time
}

/// A 40-segment transfer that uses up the first quick-ACK credit; returns the harness.
fn warmed_up(cfg: TcpConfig) -> Harness {
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 40 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 40 * MSS);
    h
}

/// `tcp_event_data_recv` (first data: `tcp_incr_quickack` with `TCP_MAX_QUICKACKS`),
/// `tcp_incr_quickack` (min(rcv_wnd / (2 rcv_mss), 16) = min(16 MB / 2000 B, 16) = 16),
/// `tcp_dec_quickack_mode` (one per ACK of new data) and `__tcp_ack_snd_check` (afterwards, an ACK as
/// soon as more than one full segment is unacknowledged): the first 16 segments are acknowledged one
/// by one, the rest in pairs, each ACK the instant its segment arrives.
#[test]
fn quick_acks_for_the_first_segments_then_every_second_full_segment() {
    let h = warmed_up(linux_cfg(LinuxDelayedAck::default()));
    let got = acks(&h, 0);
    let want: Vec<u64> = (1..=16).chain((18..=40).step_by(2)).map(|k| k * MSS).collect();
    assert_eq!(got.iter().map(|a| a.1).collect::<Vec<_>>(), want);
    for &(t, ack) in &got {
        assert_eq!(t, arrival_of(&h, ack), "ACK of {ack} waited");
    }
}

/// `tcp_send_delayed_ack` and `tcp_delack_timer_handler`: a lone segment after the quick ACKs waits
/// for the timer at the ATO (`TCP_ATO_MIN` = 40 ms after back-to-back arrivals, `tcp_event_data_recv`'s
/// fast branch); the expiry doubles the ATO (at most the RTO): 80 ms. A segment arriving m < ATO after
/// the previous one sets the ATO to ATO / 2 + m (`tcp_event_data_recv`), here 40 ms + ~50 ms.
#[test]
fn a_lone_segment_waits_for_the_delayed_ack_timer_at_the_ato() {
    let mut h = warmed_up(linux_cfg(LinuxDelayedAck::default()));
    let n = h.sent.len();
    h.run_until(h.now + Dur::from_millis(1));
    h.send(0, 2, MSS);
    h.run();
    let a1 = arrival_of(&h, 41 * MSS);
    assert_eq!(acks(&h, n), vec![(a1 + ATO_MIN, 41 * MSS)]);

    // 10 ms after that ACK: the gap m since the last arrival is ~50 ms, below the doubled ATO (80 ms).
    let n = h.sent.len();
    h.run_until(h.now + Dur::from_millis(10));
    h.send(0, 3, MSS);
    h.run();
    let a2 = arrival_of(&h, 42 * MSS);
    let m = a2 - a1;
    assert!(m > Dur::from_millis(40) && m < Dur::from_millis(80), "{m}");
    let doubled = Dur(2 * ATO_MIN.0);
    let ato = (Dur(doubled.0 / 2) + m).min(RECEIVER_RTO);
    assert_eq!(ato, Dur::from_millis(40) + m);
    assert_eq!(acks(&h, n), vec![(a2 + ato, 42 * MSS)]);
}

/// `tcp_event_data_recv`: data after an idle period longer than the RTO ("too long gap") re-enters
/// quick-ACK mode, so a restarted window of 10 segments is acknowledged segment by segment; after an
/// idle period between the ATO and the RTO the segments are acknowledged in pairs.
#[test]
fn idle_longer_than_the_rto_re_enters_quick_ack_mode() {
    for (idle, want_acks) in [(Dur::from_millis(250), 10), (Dur::from_millis(60), 5)] {
        let mut h = warmed_up(linux_cfg(LinuxDelayedAck::default()));
        let n = h.sent.len();
        h.run_until(h.now + idle);
        h.send(0, 2, 10 * MSS);
        h.run();
        let got = acks(&h, n);
        assert_eq!(got.len(), want_acks, "idle {idle}: {got:?}");
        for &(t, ack) in &got {
            assert_eq!(t, arrival_of(&h, ack), "idle {idle}: ACK of {ack} waited");
        }
    }
}

/// `tcp_data_queue_ofo` / `__tcp_ack_snd_check`: out-of-order data (past quick-ACK mode) is
/// acknowledged at once with SACK, and the segment that fills the hole too (`tcp_data_queue`: ACK
/// now when the out-of-order queue empties).
#[test]
fn out_of_order_data_is_acknowledged_at_once_with_sack() {
    let mut h = Harness::tcp(linux_cfg(LinuxDelayedAck::default()));
    drop_first_copies(&mut h, &[25 * MSS]);
    h.send(0, 1, 40 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 40 * MSS);
    let ooo: Vec<Time> = h
        .probe
        .arrivals
        .iter()
        .filter(|a| a.to == 1 && a.pkt.payload_len() > 0)
        .filter(|a| {
            let start = a
                .pkt
                .tcp()
                .unwrap()
                .seq
                .unwrap_near(super::harness::ISN[0], 0)
                .unwrap();
            start > 25 * MSS
        })
        .map(|a| a.time)
        .collect();
    let fill = h
        .retransmissions(0)
        .into_iter()
        .find(|s| s.info.offset == Some(25 * MSS))
        .expect("the hole is retransmitted");
    let before_fill: Vec<Time> = ooo.into_iter().filter(|&t| t < fill.time).collect();
    assert!(before_fill.len() >= 3, "{before_fill:?}");
    for t in before_fill {
        let dupack = h
            .sent
            .iter()
            .find(|s| s.from == 1 && s.time == t && s.info.offset.is_none())
            .unwrap_or_else(|| panic!("no ACK at {t}"));
        assert_eq!(dupack.info.ack, Some(25 * MSS));
        assert!(dupack.pkt.tcp().unwrap().sack.iter().count() > 0);
    }
    let filled = h
        .probe
        .arrivals
        .iter()
        .find(|a| {
            let start = a.pkt.tcp().unwrap().seq.unwrap_near(super::harness::ISN[0], 0);
            a.to == 1 && a.time > fill.time && a.pkt.payload_len() > 0 && start == Some(25 * MSS)
        })
        .unwrap()
        .time;
    assert!(h
        .sent
        .iter()
        .any(|s| s.from == 1 && s.time == filled && s.info.ack.is_some_and(|a| a > 25 * MSS)));
}

/// `__tcp_ecn_check_ce`: the first CE mark (no ECE echoed yet) enters quick-ACK mode for 2 segments
/// (`tcp_enter_quickack_mode(sk, 2)`), whatever `quickacks_max` says; here it is 0, so the ACKs are
/// otherwise every second segment: 2, then 3 and 4 one by one, then 6.
#[test]
fn a_first_ce_mark_acknowledges_the_next_two_segments_at_once() {
    let cfg = TcpConfig {
        ecn: true,
        ..linux_cfg(LinuxDelayedAck {
            quickacks_max: 0,
            ..Default::default()
        })
    };
    let mut h = Harness::tcp(cfg);
    h.set_fault(|c| {
        if c.from == 0 && c.info.data_index == 2 {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 6 * MSS);
    h.run();
    let got: Vec<u64> = acks(&h, 0).iter().map(|a| a.1).collect();
    assert_eq!(got, vec![2 * MSS, 3 * MSS, 4 * MSS, 6 * MSS]);
}

/// DCTCP (`dctcp_ece_ack_update`): a CE-state change with a delayed ACK pending first sends that ACK
/// with the old ECE (the flush, as with the fixed rule), then acknowledges the changing segment at once.
/// Without quick ACKs (`quickacks_max = 0`): segment 0 waits, CE segment 1 flushes 0 (no ECE) and is
/// acknowledged with ECE, segment 2 (state back) at once without ECE, segment 3 after the timer.
#[test]
fn dctcp_ce_change_flushes_and_acknowledges_at_once() {
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..linux_cfg(LinuxDelayedAck {
            quickacks_max: 0,
            ..Default::default()
        })
    };
    let mut h = Harness::tcp(cfg);
    h.set_fault(|c| {
        if c.from == 0 && c.info.data_index == 1 {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 4 * MSS);
    h.run();
    let got: Vec<(Time, u64, bool)> = h
        .sent
        .iter()
        .filter(|s| s.from == 1 && s.info.offset.is_none())
        .map(|s| {
            let ece = s.pkt.tcp().unwrap().flags.contains(TcpFlags::ECE);
            (s.time, s.info.ack.unwrap(), ece)
        })
        .collect();
    let a1 = arrival_of(&h, 2 * MSS);
    let a2 = arrival_of(&h, 3 * MSS);
    let a3 = arrival_of(&h, 4 * MSS);
    assert_eq!(
        got,
        vec![
            (a1, MSS, false),
            (a1, 2 * MSS, true),
            (a2, 3 * MSS, false),
            (a3 + ATO_MIN, 4 * MSS, false)
        ]
    );
}

/// RFC 8257 Sec. 3.2 with Linux's rules: the bytes acknowledged by ACKs carrying ECE are exactly the
/// bytes that arrived CE-marked, over a long transfer past quick-ACK mode.
#[test]
fn dctcp_echo_stays_byte_exact_with_linux_delayed_acks() {
    let h = super::ecn::dctcp_echo_run(linux_cfg(LinuxDelayedAck::default()));
    assert_eq!(h.eps[0].stats().retransmits, 0);
    // Each CE-state change is acknowledged at once (with the flush when an ACK was waiting), so with
    // every fifth segment marked most segments get their own ACK, but the pairs between still share.
    assert!(h.eps[1].stats().acks_sent < 500, "{}", h.eps[1].stats().acks_sent);
}

/// End to end, what Linux sends for a 20 KB message (20 segments of 1000 bytes): 16 quick ACKs and 2
/// for the 4 segments left in pairs, 18 in all, none waiting for the timer. With a 20 KB window (a fresh
/// Linux connection's rcv_wnd is 20 MSS, `tcp_default_init_rwnd`) the quick ACKs are 20000 / 2000 = 10,
/// then 5 pairs: 15.
#[test]
fn a_20kb_transfer_gets_the_acks_linux_sends() {
    for (window, want) in [(TcpConfig::default().rcv_window_bytes, 18), (20_000, 15)] {
        let cfg = TcpConfig {
            rcv_window_bytes: window,
            ..linux_cfg(LinuxDelayedAck::default())
        };
        let mut h = Harness::tcp(cfg);
        h.send(0, 1, 20 * MSS);
        h.run();
        assert_eq!(h.eps[1].stats().acks_sent, want, "window {window}");
        assert_eq!(acks(&h, 0).len() as u64, want);
        let done = h
            .events
            .iter()
            .find(|e| e.1 == 0 && matches!(e.2, AppEvent::MessageAcked { msg: 1, .. }))
            .unwrap()
            .0;
        assert!(
            done < Time::ZERO + Dur::from_millis(1),
            "window {window}: acked at {done}"
        );
    }
}
