//! SACK reneging (RFC 2018 Sec. 8), driven on the sender directly because an honest receiver never
//! reneges: a cumulative ACK that stops at a SACKed segment shortens the timer to
//! `max(SRTT / 2, 10 ms)` (Linux `tcp_check_sack_reneging`), and the timeout forgets the SACK marks
//! so the left edge is sent again (Linux `tcp_timeout_mark_lost`).

use crate::tcp::ext::Extensions;
use crate::tcp::sender::{AckInfo, Sender};
use crate::tcp::{LossDetection, RtoBackoff, TcpConfig};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

fn ack(s: &mut Sender, now: Time, una: u64, blocks: &[(u64, u64)]) {
    let info = AckInfo {
        ack: una,
        window_bytes: 1 << 20,
        ece: false,
        pure: true,
    };
    s.on_ack(
        now,
        info,
        blocks.iter().copied(),
        &mut VecDeque::new(),
        &mut Extensions::default(),
    );
}

/// Offsets sent now, in order.
fn sends(s: &mut Sender, now: Time) -> Vec<u64> {
    std::iter::from_fn(|| s.next_transmission(now, &mut Extensions::default()))
        .map(|t| t.start)
        .collect()
}

/// 11 segments out at 0; segment 0 ACKed at 100 ms (SRTT 100 ms, RTO 300 ms); at 200 ms a SACK of
/// segments 2-10 makes the sender fast-retransmit segment 1.
fn sender_in_recovery(sack: bool) -> Sender {
    let cfg = TcpConfig {
        sack,
        mss_bytes: MSS as u32,
        initial_cwnd_segments: 20,
        // The RFC 6675 sender and Karn's back-off, whose reneging rules these tests pin.
        loss_detection: LossDetection::Dupthresh,
        rto_backoff: RtoBackoff::Karn,
        ..TcpConfig::default()
    };
    let mut s = Sender::new(&cfg);
    s.queue_message(1, 11 * MSS, &mut VecDeque::new());
    assert_eq!(sends(&mut s, ms(0)).len(), 11);
    ack(&mut s, ms(100), MSS, &[]);
    ack(&mut s, ms(200), MSS, &[(2 * MSS, 11 * MSS)]);
    assert_eq!(sends(&mut s, ms(200)), vec![MSS]);
    s
}

#[test]
fn a_cumulative_ack_stopping_at_sacked_data_times_out_after_half_an_rtt_and_resends_it() {
    let mut s = sender_in_recovery(true);
    // The receiver got segment 1 but reneged on 2-9: its ACK stops at segment 2, SACKing only 10.
    ack(&mut s, ms(300), 2 * MSS, &[(10 * MSS, 11 * MSS)]);
    assert_eq!(s.stats.sack_renegings, 1);
    // SRTT / 2 = 50 ms (more than Linux's 10 ms floor), not the 300 ms RTO.
    assert_eq!(s.rto_deadline, Some(ms(350)));
    assert!(sends(&mut s, ms(340)).is_empty());
    s.on_rto(ms(349), &mut Extensions::default());
    assert_eq!(s.stats.timeouts, 0);
    s.on_rto(ms(350), &mut Extensions::default());
    assert_eq!(s.stats.timeouts, 1);
    // The SACK marks are gone: go back from the left edge (cwnd = 1 segment after the timeout).
    assert_eq!(sends(&mut s, ms(350)), vec![2 * MSS]);
    // The RTO is not doubled (Linux would collapse the doubling at the next ACK anyway).
    assert_eq!(s.rto_deadline, Some(ms(650)));
    ack(&mut s, ms(450), 3 * MSS, &[(10 * MSS, 11 * MSS)]);
    assert_eq!(sends(&mut s, ms(450)), vec![3 * MSS, 4 * MSS]);
}

#[test]
fn the_wait_has_a_10_ms_floor_and_never_exceeds_the_rto() {
    // SRTT 1 ms: the wait is Linux's 10 ms floor.
    let cfg = TcpConfig {
        mss_bytes: MSS as u32,
        ..TcpConfig::default()
    };
    let mut s = Sender::new(&cfg);
    s.queue_message(1, 5 * MSS, &mut VecDeque::new());
    sends(&mut s, ms(0));
    ack(&mut s, ms(1), MSS, &[(2 * MSS, 3 * MSS)]);
    ack(&mut s, ms(2), 2 * MSS, &[]);
    assert_eq!(s.rto_deadline, Some(ms(12)));
    // With a 5 ms RTO the RTO comes first.
    let cfg = TcpConfig {
        mss_bytes: MSS as u32,
        min_rto: Dur::from_millis(5),
        ..TcpConfig::default()
    };
    let mut s = Sender::new(&cfg);
    s.queue_message(1, 5 * MSS, &mut VecDeque::new());
    sends(&mut s, ms(0));
    ack(&mut s, ms(1), MSS, &[(2 * MSS, 3 * MSS)]);
    ack(&mut s, ms(2), 2 * MSS, &[]);
    // Linux's RTO: SRTT (1 ms) + min_rto, re-armed by the last ACK; below the 10 ms floor.
    let rto = s.rtt.rto();
    assert!(rto < Dur::from_millis(10), "{rto:?}");
    assert_eq!(s.rto_deadline, Some(ms(2) + rto));
}

#[test]
fn an_ordinary_timeout_keeps_the_sack_scoreboard() {
    // RFC 6675 Sec. 5.1: without reneging evidence the SACKed segments are not resent.
    let mut s = sender_in_recovery(true);
    s.on_rto(ms(500), &mut Extensions::default());
    assert_eq!(s.stats.sack_renegings, 0);
    // Segment 1 first (cwnd = 1 after the timeout); SACKed 2-10 never. The RTO doubles (600 ms).
    assert_eq!(sends(&mut s, ms(500)), vec![MSS]);
    assert_eq!(s.rto_deadline, Some(ms(1100)));
    ack(&mut s, ms(600), 2 * MSS, &[(2 * MSS, 11 * MSS)]);
}
