//! CP (Cut Payload, Cheng et al., NSDI'14) scripted: the receiver's PACK for a payload-cut segment, the
//! sender's precise retransmission, stale PACKs, and reordering tolerance without a dupACK threshold.

use super::harness::{test_cfg, Fate, Harness, ISN, MSS};
use crate::engine::Engine;
use crate::packet::{Packet, Route, TcpFlags};
use crate::seq::Seq;
use crate::tcp::{CongestionControl, TcpConfig};
use crate::time::Dur;

fn cp_cfg() -> TcpConfig {
    TcpConfig {
        cp: true,
        dupack_threshold: u32::MAX,
        ..test_cfg()
    }
}

/// The PACK blocks (right edge first) a packet carries, as stream offsets of side 0's stream.
fn pack_blocks(p: &Packet) -> Vec<(u64, u64)> {
    let h = p.tcp().expect("tcp");
    h.sack
        .iter()
        .filter_map(|(l, r)| {
            let (l, r) = (l.unwrap_near(ISN[0], 0)?, r.unwrap_near(ISN[0], 0)?);
            (r < l).then_some((l, r))
        })
        .collect()
}

/// A one-segment message first (an RTT sample), then `segs` segments of message 2 whose first
/// transmissions at the listed indices (within message 2) meet `fate`.
fn warm_then(cfg: TcpConfig, segs: u64, hit: &'static [u64], fate: Fate) -> Harness {
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, MSS);
    h.run();
    h.set_fault(move |c| match c.info.offset {
        Some(o) if c.from == 0 && c.info.copy == 0 && o >= MSS && hit.contains(&(o / MSS - 1)) => fate,
        _ => Fate::Deliver,
    });
    h.send(0, 2, segs * MSS);
    h
}

#[test]
fn a_cut_segment_yields_one_pack_and_exactly_one_retransmission() {
    let mut h = warm_then(cp_cfg(), 10, &[3], Fate::Cut);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 11 * MSS);
    let cut_start = 4 * MSS;
    // Exactly one PACK, sent by the receiver, naming the cut segment with its edges swapped.
    let packs: Vec<_> = h
        .sent
        .iter()
        .filter(|s| s.from == 1 && !pack_blocks(&s.pkt).is_empty())
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    let p = packs[0].pkt;
    let hdr = p.tcp().unwrap();
    let (first_l, first_r) = hdr.sack.iter().next().unwrap();
    assert_eq!(
        first_l,
        Seq::from_offset(ISN[0], cut_start + MSS),
        "left field = right edge"
    );
    assert_eq!(
        first_r,
        Seq::from_offset(ISN[0], cut_start),
        "right field = left edge"
    );
    assert!(hdr.flags.contains(TcpFlags::ACK) && p.payload_len() == 0);
    // The PACK went out at once: at the arrival time of the cut header.
    let cut_arrival = h
        .probe
        .arrivals
        .iter()
        .find(|a| a.to == 1 && a.pkt.trimmed)
        .expect("the cut header arrived")
        .time;
    assert_eq!(packs[0].time, cut_arrival);
    // The sender retransmits exactly that segment, once, without a timeout.
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(rtx, vec![cut_start]);
    let st = h.eps[0].stats();
    assert_eq!(
        (
            st.timeouts,
            st.packs_received,
            st.precise_retransmits,
            st.fast_retransmits
        ),
        (0, 1, 1, 1)
    );
    assert_eq!(h.eps[1].stats().packs_sent, 1);
    assert_eq!(h.eps[1].stats().cut_segments_received, 1);
}

#[test]
fn several_cuts_in_one_window_reduce_the_window_once() {
    let mut h = warm_then(cp_cfg(), 10, &[2, 5, 7], Fate::Cut);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 11 * MSS);
    let mut rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    rtx.sort_unstable();
    assert_eq!(rtx, vec![3 * MSS, 6 * MSS, 8 * MSS]);
    let st = h.eps[0].stats();
    assert_eq!(
        (st.timeouts, st.precise_retransmits, st.fast_retransmits),
        (0, 3, 1)
    );
}

#[test]
fn a_cut_retransmission_is_reported_and_retransmitted_again() {
    let mut h = Harness::tcp(cp_cfg());
    h.send(0, 1, MSS);
    h.run();
    // The first two transmissions of segment 2 of message 2 are cut.
    h.set_fault(|c| match c.info.offset {
        Some(o) if c.from == 0 && o == 3 * MSS && c.info.copy < 2 => Fate::Cut,
        _ => Fate::Deliver,
    });
    h.send(0, 2, 6 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 7 * MSS);
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(rtx, vec![3 * MSS, 3 * MSS]);
    assert_eq!(h.eps[0].stats().timeouts, 0);
}

#[test]
fn a_pack_for_an_acknowledged_or_already_resent_segment_is_ignored() {
    let mut h = warm_then(cp_cfg(), 10, &[3], Fate::Cut);
    // Step until the PACK has reached the sender and the retransmission is on the wire.
    while h.eps[0].stats().packs_received == 0 {
        assert!(h.step());
    }
    let pack = h.probe.arrivals.last().expect("the PACK").pkt;
    assert!(!pack_blocks(&pack).is_empty());
    // The same PACK again (e.g. duplicated by the network): the segment was sent again after the
    // cut transmission the PACK echoes, so it is stale.
    let now = h.now;
    h.eps[0].handle_packet(now, &pack, &[]);
    h.drain(0);
    h.run();
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(rtx, vec![4 * MSS]);
    assert_eq!(h.eps[0].stats().packs_received, 2);
    assert_eq!(h.eps[0].stats().precise_retransmits, 1);
    // Once everything is acknowledged, the PACK names nothing outstanding.
    let now = h.now + Dur::from_millis(1);
    h.eps[0].handle_packet(now, &pack, &[]);
    let mut scratch = Vec::new();
    assert_eq!(h.eps[0].poll_transmit(now, &mut scratch), None);
    assert_eq!(h.eps[0].stats().precise_retransmits, 1);
}

#[test]
fn without_cp_a_cut_segment_is_just_a_loss() {
    let cfg = TcpConfig {
        cp: false,
        ..test_cfg()
    };
    let mut h = warm_then(cfg, 10, &[3], Fate::Cut);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 11 * MSS);
    assert_eq!(h.eps[1].stats().packs_sent, 0);
    // Recovered by SACK-based fast retransmit, as a drop would be.
    assert_eq!(h.eps[0].stats().fast_retransmits, 1);
}

#[test]
fn with_no_dupack_threshold_reordering_causes_no_retransmission() {
    // Segment 3 of 10 arrives 100 us late (several segments behind).
    let delay = Fate::Delay(Dur::from_micros(100));
    let mut cp = warm_then(cp_cfg(), 10, &[3], delay);
    cp.run();
    assert_eq!(cp.eps[1].rcv_nxt(), 11 * MSS);
    assert!(cp.retransmissions(0).is_empty());
    assert_eq!(cp.eps[0].stats().fast_retransmits, 0);
    // Plain TCP with DupThresh 3 retransmits it spuriously.
    let mut tcp = warm_then(test_cfg(), 10, &[3], delay);
    tcp.run();
    assert_eq!(tcp.retransmissions(0).len(), 1);
    assert!(tcp.eps[1].stats().duplicate_segments >= 1);
}

#[test]
fn cp_over_dctcp_retransmits_the_cut_segment() {
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..cp_cfg()
    };
    let mut h = warm_then(cfg, 10, &[6], Fate::Cut);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 11 * MSS);
    let rtx: Vec<u64> = h
        .retransmissions(0)
        .iter()
        .filter_map(|s| s.info.offset)
        .collect();
    assert_eq!(rtx, vec![7 * MSS]);
    assert_eq!(h.eps[0].stats().timeouts, 0);
}

#[test]
fn spraying_gives_consecutive_data_segments_consecutive_path_labels() {
    let cfg = TcpConfig {
        spray_paths: 3,
        ..cp_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.send(0, 1, 7 * MSS);
    h.run();
    let labels: Vec<Route> = h.data_from(0).map(|s| s.pkt.route).collect();
    let want: Vec<Route> = (0..7).map(|i| Route::Path(i % 3)).collect();
    assert_eq!(labels, want);
    // ACKs keep the connection's route.
    assert!(h
        .sent
        .iter()
        .filter(|s| s.from == 1)
        .all(|s| s.pkt.route == Route::Ecmp));
}
