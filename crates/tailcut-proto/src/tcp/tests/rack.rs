//! RACK-TLP (RFC 8985), scripted: time-based marking after the reordering window, tolerance of
//! reordering within it, the tail loss probe and the loss at the top of a recovery window.

use super::harness::{last_new_ack_before, test_cfg, Fate, Harness, Sent, MSS};
use crate::tcp::{LossDetection, RtoEstimator, TcpConfig};
use crate::time::Dur;

/// One-way delay of the RACK tests: RTT about 2 ms, so reo_wnd = min_RTT / 4 is about 500 us and
/// serialisation (under a microsecond per segment at 10 Gbps) is negligible beside it.
pub(super) const ONE_WAY: Dur = Dur::from_millis(1);

/// A connection warmed by one clean segment (so SRTT and min_RTT exist), then `segs` segments
/// whose first copies at the listed indices (0-based within the second message) meet `fate`.
pub(super) fn warm_then(cfg: TcpConfig, one_way: Dur, segs: u64, hit: &'static [u64], fate: Fate) -> Harness {
    let mut h = Harness::tcp(cfg);
    h.one_way = one_way;
    h.send(0, 1, MSS);
    h.run();
    h.set_fault(move |c| match c.info.offset {
        Some(o) if c.from == 0 && c.info.copy == 0 && o >= MSS && hit.contains(&(o / MSS - 1)) => fate,
        _ => Fate::Deliver,
    });
    h.send(0, 2, segs * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), (segs + 1) * MSS);
    h
}

/// The warm-up segment's round trip: the least RTT sample, RACK.min_RTT.
fn min_rtt(h: &Harness) -> Dur {
    let sent = h.data_from(0).next().unwrap().time;
    let acked = h
        .probe
        .arrivals
        .iter()
        .find(|a| a.to == 0 && a.ack == Some(MSS))
        .unwrap()
        .time;
    acked - sent
}

fn first_copy(h: &Harness, offset: u64) -> Sent {
    h.data_from(0)
        .find(|s| s.info.offset == Some(offset) && s.info.copy == 0)
        .unwrap()
        .clone()
}

#[test]
fn rack_marks_a_segment_lost_one_reordering_window_after_a_later_one_is_sacked() {
    // Three segments, the first lost: two SACKed above it (fewer than DupThresh), so the window
    // is min_RTT / 4 and RACK waits for it.
    let h = warm_then(test_cfg(), ONE_WAY, 3, &[0], Fate::Drop);
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 1, "{rtx:?}");
    assert_eq!(rtx[0].info.offset, Some(MSS));
    let (s0, s2) = (first_copy(&h, MSS).time, first_copy(&h, 3 * MSS).time);
    // The ACK SACKing the last segment set RACK.xmit_ts = s2 and RACK.rtt = a2 - s2; the first
    // segment is lost at s0 + RACK.rtt + reo_wnd, when the reordering timer fires.
    let a2 = *h.acks_arriving(0, MSS).last().unwrap();
    let reo_wnd = Dur(min_rtt(&h).0 / 4);
    assert_eq!(rtx[0].time, s0 + (a2 - s2) + reo_wnd);
    // Not before: no retransmission when the SACKs arrived.
    assert!(rtx[0].time > a2 + Dur(reo_wnd.0 / 2));
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts, st.tlp_probes), (1, 0, 0));
}

#[test]
fn reordering_within_the_window_is_no_loss_and_beyond_it_is() {
    // The first of three segments arrives 300 us late (reo_wnd is about 500 us): no retransmission.
    let late = |d| warm_then(test_cfg(), ONE_WAY, 3, &[0], Fate::Delay(d));
    let h = late(Dur::from_micros(300));
    let st = h.eps[0].stats();
    assert_eq!((st.retransmits, st.fast_retransmits, st.timeouts), (0, 0, 0));
    assert_eq!(h.eps[1].stats().out_of_order_segments, 2);
    // 800 us late is beyond the window: RACK retransmits it (spuriously), as it should.
    let h = late(Dur::from_micros(800));
    assert_eq!(h.eps[0].stats().fast_retransmits, 1);
    assert_eq!(h.eps[1].stats().duplicate_segments, 1);
}

#[test]
fn dupthresh_would_take_the_same_reordering_as_no_loss_only_below_three_segments() {
    // With DupThresh no window exists: the same 300 us reorder behind three SACKed segments is
    // a loss; RACK waits a window first but then, having seen no reordering, has none either.
    let cfg = TcpConfig {
        loss_detection: LossDetection::Dupthresh,
        ..test_cfg()
    };
    let h = warm_then(cfg, ONE_WAY, 5, &[0], Fate::Delay(Dur::from_micros(300)));
    assert_eq!(h.eps[0].stats().fast_retransmits, 1);
}

#[test]
fn tlp_fires_at_the_pto_and_its_sack_starts_rack_recovery_without_a_timeout() {
    // The last two of ten segments are lost: nothing above them can be SACKed.
    let h = warm_then(test_cfg(), Dur::from_micros(10), 10, &[8, 9], Fate::Drop);
    let offs: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    // The probe resends the last segment (no new data); its SACK makes RACK mark the other.
    assert_eq!(offs, vec![10 * MSS, 9 * MSS]);
    let rtx = h.retransmissions(0);
    // RFC 8985 Sec. 7.2 / Linux: PTO = 2 SRTT + 2 ms with more than one segment in flight, armed
    // at the last ACK (SRTT is tens of microseconds here, the RTO 5 ms).
    let armed = last_new_ack_before(&h, rtx[0].time);
    let pto = rtx[0].time - armed;
    assert!(
        pto > Dur::from_millis(2) && pto < Dur::from_micros(2_200),
        "pto {pto}"
    );
    let st = h.eps[0].stats();
    assert_eq!((st.tlp_probes, st.fast_retransmits, st.timeouts), (1, 1, 0));
}

#[test]
fn tlp_with_one_segment_in_flight_waits_the_delayed_ack_allowance() {
    // A lone lost segment: PTO = 2 SRTT + min_rto (Linux adds `tcp_rto_min_us`), capped at the RTO
    // deadline; here the cap wins, so the probe goes out exactly when the RTO would have.
    // RFC 6298's RTO, so that the cap is min_rto exactly (Linux's would add SRTT).
    let cfg = TcpConfig {
        rto_estimator: RtoEstimator::Rfc6298,
        ..test_cfg()
    };
    let h = warm_then(cfg, Dur::from_micros(10), 1, &[0], Fate::Drop);
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 1);
    let sent = first_copy(&h, MSS).time;
    assert_eq!(rtx[0].time - sent, Dur::from_millis(5));
    let st = h.eps[0].stats();
    assert_eq!((st.tlp_probes, st.timeouts), (1, 0));
}

#[test]
fn a_loss_at_the_top_of_the_recovery_window_is_repaired_without_a_timeout() {
    // Segment 2 and the last segment are lost. DupThresh retransmits 2, but nothing is ever SACKed
    // above the last one: it waits for the RTO (NextSeg() rules 3-4 are not implemented).
    let drops: &[u64] = &[2, 9];
    let dupthresh = TcpConfig {
        loss_detection: LossDetection::Dupthresh,
        ..test_cfg()
    };
    let h = warm_then(dupthresh, Dur::from_micros(10), 10, drops, Fate::Drop);
    assert_eq!(h.eps[0].stats().timeouts, 1);
    // RACK: the ACK of the retransmission of 2 delivers a segment sent after the last one, so
    // the last one is lost (no window in recovery) and resent at once.
    let h = warm_then(test_cfg(), Dur::from_micros(10), 10, drops, Fate::Drop);
    let offs: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(offs, vec![3 * MSS, 10 * MSS]);
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
}

#[test]
fn a_lost_retransmission_is_detected_by_rack_without_a_timeout() {
    // Segment 2's first copy and its retransmission are lost; segments sent after the
    // retransmission are delivered, so RACK marks it lost again.
    let mut h = Harness::tcp(TcpConfig {
        initial_cwnd_segments: 4,
        ..test_cfg()
    });
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(2 * MSS) && c.info.copy < 2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 30 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!(st.timeouts, 0);
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(rtx, vec![2 * MSS, 2 * MSS]);
    assert_eq!(h.eps[1].rcv_nxt(), 30 * MSS);
}
