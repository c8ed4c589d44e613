//! The baseline schemes built into the TCP endpoint, scripted: TLP, TCP-IR, Proactive, PIAS tagging
//! and pFabric priorities.

use super::harness::{last_new_ack_before, test_cfg, Fate, Harness, MSS};
use crate::engine::AppEvent;
use crate::packet::TcpExt;
use crate::tcp::{PiasConfig, RtoEstimator, TcpConfig, TcpIrConfig, TlpConfig};
use crate::time::Dur;

const PTO_FLOOR: Dur = Dur(200_000);

fn tlp_cfg() -> TcpConfig {
    TcpConfig {
        tlp: Some(TlpConfig {
            pto_floor: PTO_FLOOR,
            worst_case_delayed_ack: Dur::from_millis(200),
        }),
        ..test_cfg()
    }
}

/// A one-segment message first, so the sender has an RTT sample; then `segs` segments of message 2
/// with the first transmissions of the listed segment indices (within message 2) dropped.
fn warm_then_send(cfg: TcpConfig, segs: u64, drop: &'static [u64]) -> Harness {
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, MSS);
    h.run();
    h.set_fault(move |c| match c.info.offset {
        Some(o) if c.from == 0 && c.info.copy == 0 && o >= MSS && drop.contains(&(o / MSS - 1)) => Fate::Drop,
        _ => Fate::Deliver,
    });
    h.send(0, 2, segs * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), (segs + 1) * MSS);
    h
}

fn msg_stats(h: &Harness, msg: u64) -> crate::engine::MessageStats {
    h.events_of(0)
        .into_iter()
        .find_map(|e| match e {
            AppEvent::MessageAcked { msg: m, stats } if m == msg => Some(stats),
            _ => None,
        })
        .expect("message acknowledged")
}

#[test]
fn tlp_probe_at_pto_turns_a_tail_loss_into_fast_recovery() {
    // The last two segments of ten are lost: no dupACK reaches the sender.
    let h = warm_then_send(tlp_cfg(), 10, &[8, 9]);
    let rtx = h.retransmissions(0);
    let offs: Vec<u64> = rtx.iter().filter_map(|s| s.info.offset).collect();
    // The probe retransmits the last segment; its SACK reveals the hole and fast recovery repairs it.
    assert_eq!(offs, vec![10 * MSS, 9 * MSS]);
    // The probe fires one PTO (here the floor, above 2 SRTT) after the last new ACK.
    let armed = last_new_ack_before(&h, rtx[0].time);
    assert_eq!(rtx[0].time, armed + PTO_FLOOR);
    let st = h.eps[0].stats();
    assert_eq!((st.tlp_probes, st.fast_retransmits, st.timeouts), (1, 1, 0));
    let m = msg_stats(&h, 2);
    assert_eq!(
        (m.timeouts, m.fast_retransmits, m.retransmitted_bytes),
        (0, 1, 2 * MSS)
    );

    // DupThresh TCP without the probe needs the RTO for the same loss.
    let plain = TcpConfig {
        loss_detection: crate::tcp::LossDetection::Dupthresh,
        ..test_cfg()
    };
    let h = warm_then_send(plain, 10, &[8, 9]);
    assert_eq!(h.eps[0].stats().timeouts, 1);
}

#[test]
fn tlp_probe_repairs_a_single_tail_loss_by_itself() {
    let h = warm_then_send(tlp_cfg(), 10, &[9]);
    let offs: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(offs, vec![10 * MSS]);
    let st = h.eps[0].stats();
    assert_eq!((st.tlp_probes, st.fast_retransmits, st.timeouts), (1, 0, 0));
}

#[test]
fn tlp_sends_at_most_one_probe_per_tail() {
    // The probe is lost too: the RTO (rearmed when the probe went out) recovers. RFC 6298's RTO, so
    // that it is min_rto exactly (Linux's would add SRTT).
    let mut h = Harness::tcp(TcpConfig {
        rto_estimator: RtoEstimator::Rfc6298,
        ..tlp_cfg()
    });
    h.send(0, 1, MSS);
    h.run();
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(10 * MSS) && c.info.copy < 2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 2, 10 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!((st.tlp_probes, st.timeouts), (1, 1));
    let rtx = h.retransmissions(0);
    assert_eq!(rtx.len(), 2);
    assert_eq!(rtx[1].time, rtx[0].time + h.eps[0].rto().min(test_cfg().min_rto));
}

fn ir_cfg() -> TcpConfig {
    TcpConfig {
        tcp_ir: Some(TcpIrConfig::default()),
        ..test_cfg()
    }
}

#[test]
fn tcp_ir_rebuilds_one_lost_segment_without_retransmission() {
    let h = warm_then_send(ir_cfg(), 10, &[9]);
    assert!(h.retransmissions(0).is_empty());
    assert_eq!(h.eps[1].stats().coded_recoveries, 1);
    let st = h.eps[0].stats();
    assert_eq!(
        (st.coded_packets_sent, st.timeouts, st.fast_retransmits),
        (1, 0, 0)
    );
    // The coded packet covers the block of ten segments and is one segment long, redundant bytes.
    let coded: Vec<_> = h
        .sent
        .iter()
        .filter_map(|s| match s.pkt.tcp().map(|t| t.ext) {
            Some(TcpExt::XorCoded { len_bytes, .. }) => Some((len_bytes, s.pkt.payload_len())),
            _ => None,
        })
        .collect();
    assert_eq!(coded, vec![(10 * MSS as u32, MSS as u32)]);
    let m = msg_stats(&h, 2);
    assert_eq!(
        (m.redundant_bytes, m.retransmitted_bytes, m.sent_bytes),
        (MSS, 0, 11 * MSS)
    );
}

#[test]
fn tcp_ir_coded_packet_follows_its_bin_by_a_quarter_rtt() {
    let mut h = Harness::tcp(ir_cfg());
    h.send(0, 1, MSS);
    h.run();
    // One RTT sample so far: SRTT is exactly that sample.
    let rtt = h.eps[0].srtt().expect("sampled");
    h.send(0, 2, 4 * MSS);
    h.run();
    let first = h
        .data_from(0)
        .find(|s| s.info.offset == Some(MSS))
        .expect("sent")
        .time;
    let coded: Vec<_> = h
        .sent
        .iter()
        .filter(|s| matches!(s.pkt.tcp().map(|t| t.ext), Some(TcpExt::XorCoded { .. })))
        .map(|s| s.time)
        .collect();
    // The bin opens with the block's first segment and lasts RTT/2; the coded packet follows RTT/4
    // later (all four segments went out at once, so the block is acknowledged only after that).
    assert_eq!(coded, vec![first + Dur(rtt.0 / 2) + Dur(rtt.0 / 4)]);
}

#[test]
fn tcp_ir_coded_packet_probes_when_two_are_lost() {
    let h = warm_then_send(ir_cfg(), 10, &[8, 9]);
    assert_eq!(h.eps[1].stats().coded_recoveries, 0);
    let st = h.eps[0].stats();
    // The receiver's answer to the coded packet starts fast recovery: no timeout.
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    let offs: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(offs, vec![9 * MSS, 10 * MSS]);
}

#[test]
fn proactive_sends_every_segment_twice() {
    let cfg = TcpConfig {
        proactive: true,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 25 * MSS);
    h.run();
    let data: Vec<_> = h.data_from(0).cloned().collect();
    assert_eq!(data.len(), 50);
    for pair in data.chunks(2) {
        assert_eq!(pair[0].info.offset, pair[1].info.offset);
        assert_eq!((pair[0].info.copy, pair[1].info.copy), (0, 1));
        assert_eq!(pair[0].time, pair[1].time);
    }
    let st = h.eps[0].stats();
    assert_eq!(
        (st.retransmits, st.timeouts, st.payload_bytes_sent),
        (0, 0, 50 * MSS)
    );
    let m = msg_stats(&h, 1);
    assert_eq!(
        (m.sent_bytes, m.redundant_bytes, m.retransmitted_bytes),
        (50 * MSS, 25 * MSS, 0)
    );
}

#[test]
fn pias_demotes_exactly_at_the_byte_threshold() {
    let cfg = TcpConfig {
        pias: Some(PiasConfig {
            thresholds_bytes: vec![3 * MSS, 5 * MSS + 500],
        }),
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 8 * MSS);
    h.run();
    h.send(0, 2, 4 * MSS);
    h.run();
    let classes: Vec<(u64, u8)> = h
        .data_from(0)
        .map(|s| (s.info.offset.unwrap() / MSS, s.pkt.class))
        .collect();
    // Message 1: bytes sent before the packet 0..2999 -> 0, 3000..5499 -> 1, from 5500 -> 2
    // (the segment at 5000 starts below 5500). Message 2 starts again at level 0.
    let expect: Vec<(u64, u8)> = vec![
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 1),
        (4, 1),
        (5, 1),
        (6, 2),
        (7, 2),
        (8, 0),
        (9, 0),
        (10, 0),
        (11, 1),
    ];
    assert_eq!(classes, expect);
    // ACKs stay in the highest class.
    assert!(h.sent.iter().filter(|s| s.from == 1).all(|s| s.pkt.class == 0));
}

#[test]
fn pfabric_priority_is_the_remaining_message_size() {
    let cfg = TcpConfig {
        pfabric_priority: true,
        initial_cwnd_segments: 17,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 30 * MSS);
    h.run();
    let prio: Vec<u64> = h.data_from(0).map(|s| s.pkt.priority).collect();
    assert!(prio[..17].iter().all(|&p| p == 30 * MSS), "{prio:?}");
    assert!(prio.windows(2).all(|w| w[1] <= w[0]), "{prio:?}");
    assert!(*prio.last().unwrap() < 30 * MSS);
    assert!(h.sent.iter().filter(|s| s.from == 1).all(|s| s.pkt.priority == 0));
}

#[test]
fn pfabric_probe_mode_sends_one_byte_probes_at_a_fixed_period() {
    let cfg = TcpConfig {
        pfabric_probe_after: Some(3),
        // As the pfabric scheme runs it: no loss detection but the timer.
        dupack_threshold: u32::MAX,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    // The segment at 2000 is lost on its first six transmissions (full or probe).
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(2 * MSS) && c.info.copy < 6 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 3 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 3 * MSS);
    let sends: Vec<_> = h
        .data_from(0)
        .filter(|s| s.info.offset.is_some_and(|o| o >= 2 * MSS))
        .map(|s| (s.info.offset.unwrap(), s.pkt.payload_len(), s.time))
        .collect();
    let shape: Vec<(u64, u32)> = sends.iter().map(|s| (s.0, s.1)).collect();
    // The original and two full retransmissions; from the third timeout one-byte probes until one
    // gets through; then the rest of the segment.
    assert_eq!(
        shape,
        vec![
            (2 * MSS, 1000),
            (2 * MSS, 1000),
            (2 * MSS, 1000),
            (2 * MSS, 1),
            (2 * MSS, 1),
            (2 * MSS, 1),
            (2 * MSS, 1),
            (2 * MSS + 1, 999),
        ]
    );
    // Probes go out once per RTO without further back-off.
    let gaps: Vec<Dur> = sends[3..7].windows(2).map(|w| w[1].2 - w[0].2).collect();
    assert!(gaps.iter().all(|&g| g == gaps[0]), "{gaps:?}");
    assert_eq!(gaps[0], sends[3].2 - sends[2].2);
    let st = h.eps[0].stats();
    assert_eq!(st.timeouts, 6);
    let m = msg_stats(&h, 1);
    assert_eq!(m.retransmitted_bytes, 2 * MSS + 4 + 999);
}
