//! End-to-end T-RACKs: an unmodified TCP sender (min RTO 200 ms) behind the shim at its host, on the
//! scripted wire, with its tail segments dropped. The shim sees only packets (`Harness::shim`).

use super::harness::{drop_first_copies, Harness, MSS};
use crate::rng::{stream, Stream};
use crate::tcp::{LossDetection, TcpConfig};
use crate::time::{Dur, Time};
use crate::tracks::{Tracks, TracksConfig};

const RTO: Dur = Dur::from_millis(200);

fn harness(sack: bool, with_shim: bool, drops: &'static [u64]) -> Harness {
    let cfg = TcpConfig {
        sack,
        mss_bytes: MSS as u32,
        min_rto: RTO,
        initial_rto: RTO,
        // T-RACKs is measured against DupThresh SACK TCP (its paper's baseline).
        loss_detection: LossDetection::Dupthresh,
        ..TcpConfig::default()
    };
    let mut h = Harness::tcp(cfg);
    if with_shim {
        let shim = TracksConfig {
            sack,
            ..TracksConfig::default()
        };
        h.shim = Some(Box::new(Tracks::new(shim, stream(1, Stream::Shim, 0))));
    }
    drop_first_copies(&mut h, drops);
    h.send(0, 1, 10 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 10 * MSS);
    h
}

fn first_retransmission(h: &Harness) -> Time {
    h.retransmissions(0)[0].time
}

#[test]
fn newreno_fast_retransmits_a_lost_tail_segment_long_before_its_rto() {
    let plain = harness(false, false, &[9 * MSS]);
    assert_eq!(plain.eps[0].stats().timeouts, 1);
    assert!(first_retransmission(&plain) >= Time::ZERO + RTO);

    let h = harness(false, true, &[9 * MSS]);
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts, st.retransmits), (1, 0, 1));
    let rtx = h.retransmissions(0);
    assert_eq!(rtx[0].info.offset, Some(9 * MSS));
    // beta = 10 RTTs (~0.2 ms here) rounded up to the 1 ms timer: the retransmission leaves at a
    // tick, 1-2 ms after the last ACK.
    assert!(
        rtx[0].time < Time::ZERO + Dur::from_millis(3),
        "{:?}",
        rtx[0].time
    );
}

#[test]
fn sack_sender_fast_retransmits_on_the_fake_sack_block_and_recovers_the_claimed_segments() {
    // Segments 7-9 lost. Spoofed ACKs of 7000 claim 8 and 9 with the fake block: two new SACKs,
    // with three segments outstanding early retransmit (RFC 5827) needs two, so segment 7 is fast
    // retransmitted. The ACK of 8000 then stops at "SACKed" segment 8, which the receiver never
    // had: reneging, and 10 ms later a timeout that forgets the SACK marks resends 8 and 9.
    let plain = harness(true, false, &[7 * MSS, 8 * MSS, 9 * MSS]);
    assert!(first_retransmission(&plain) >= Time::ZERO + RTO);

    let h = harness(true, true, &[7 * MSS, 8 * MSS, 9 * MSS]);
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.sack_renegings, st.timeouts), (1, 1, 1));
    let rtx = h.retransmissions(0);
    assert_eq!(rtx[0].info.offset, Some(7 * MSS));
    assert!(
        rtx[0].time < Time::ZERO + Dur::from_millis(3),
        "{:?}",
        rtx[0].time
    );
    let offsets: Vec<_> = rtx.iter().map(|s| s.info.offset.unwrap()).collect();
    assert_eq!(offsets, vec![7 * MSS, 8 * MSS, 9 * MSS]);
    let done = rtx.last().unwrap().time;
    assert!(done < Time::ZERO + Dur::from_millis(20), "{done:?}");
    // Spoofed ACKs reached the sender with the block (the sender saw SACK information for 8-9).
    let spoofed = h
        .probe
        .arrivals
        .iter()
        .filter(|a| a.to == 0 && a.ack == Some(7 * MSS) && !a.pkt.tcp().unwrap().sack.is_empty())
        .count();
    assert!(spoofed >= 2, "{spoofed}");
}

#[test]
fn dctcp_sack_sender_is_helped_the_same_way() {
    let cfg = TcpConfig {
        congestion_control: crate::tcp::CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ecn: true,
        sack: true,
        mss_bytes: MSS as u32,
        min_rto: RTO,
        initial_rto: RTO,
        // T-RACKs is measured against DupThresh SACK TCP (its paper's baseline).
        loss_detection: LossDetection::Dupthresh,
        ..TcpConfig::default()
    };
    let mut h = Harness::tcp(cfg);
    let shim = TracksConfig {
        sack: true,
        ..TracksConfig::default()
    };
    h.shim = Some(Box::new(Tracks::new(shim, stream(1, Stream::Shim, 0))));
    drop_first_copies(&mut h, &[6 * MSS, 7 * MSS, 8 * MSS, 9 * MSS]);
    h.send(0, 1, 10 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 10 * MSS);
    let rtx = h.retransmissions(0);
    assert_eq!(h.eps[0].stats().fast_retransmits, 1);
    assert!(rtx.last().unwrap().time < Time::ZERO + Dur::from_millis(20));
}

#[test]
fn a_lone_lost_last_segment_of_a_sack_flow_is_beyond_the_fake_block() {
    // Nothing above the hole for the block to claim, and a block inside one segment is not SACK
    // information (RFC 6675 / Linux credit whole segments): the sender waits for its RTO, exactly as
    // without the shim. docs/tracks.md, "SACK".
    let h = harness(true, true, &[9 * MSS]);
    assert_eq!(h.eps[0].stats().timeouts, 1);
    assert!(first_retransmission(&h) >= Time::ZERO + RTO);
}
