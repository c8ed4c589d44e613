//! ECN (RFC 3168) and DCTCP (RFC 8257), scripted.

use super::harness::{test_cfg, Fate, Harness, MSS};
use crate::tcp::{CongestionControl, DelayedAck, TcpConfig};
use crate::time::Dur;

#[test]
fn dctcp_alpha_tracks_the_marked_fraction_and_cuts_by_half_alpha() {
    dctcp_case(8, None);
}

#[test]
fn dctcp_alpha_converges_with_delayed_acks() {
    dctcp_case(20, Some(Dur::from_micros(100)));
}

#[test]
fn dctcp_echo_is_byte_exact_with_delayed_acks() {
    // RFC 8257 Sec. 3.2: the receiver's immediate ACK on each CE-state change keeps the echo exact:
    // the bytes acknowledged by ACKs carrying ECE are exactly the bytes that arrived CE-marked.
    let h = dctcp_echo_run(TcpConfig {
        delayed_ack: Some(DelayedAck::Fixed(Dur::from_micros(100))),
        ..test_cfg()
    });
    // Fewer ACKs than segments: the delayed ACKs are still in use.
    assert!(h.eps[1].stats().acks_sent < 400);
}

/// A 500-segment DCTCP transfer (ECN and DCTCP over `base`, which sets the ACK policy) with every
/// fifth segment CE-marked; checks that the bytes acknowledged by ACKs carrying ECE are exactly the
/// bytes that arrived marked.
pub(super) fn dctcp_echo_run(base: TcpConfig) -> Harness {
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..base
    };
    let mut h = Harness::tcp(cfg);
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset.is_some() && c.info.data_index % 5 == 4 {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 500 * MSS);
    h.run();
    let marked: u64 = h
        .data_from(0)
        .filter(|s| s.fate == Fate::Ce)
        .map(|s| u64::from(s.pkt.payload_len()))
        .sum();
    let (mut prev, mut echoed) = (0, 0);
    for s in h.sent.iter().filter(|s| s.from == 1) {
        let ack = s.info.ack.unwrap();
        if s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::ECE) {
            echoed += ack - prev;
        }
        prev = ack;
    }
    assert_eq!(marked, 100 * MSS);
    assert_eq!(echoed, marked);
    h
}

fn dctcp_case(k: u64, delayed_ack: Option<Dur>) {
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        delayed_ack: delayed_ack.map(DelayedAck::Fixed),
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.set_fault(move |c| {
        if c.from == 0 && c.info.offset.is_some() && c.info.data_index % k == k - 1 {
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
        .probe
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
    let mut h = Harness::tcp(cfg);
    // Mark two packets of the first window: one reduction only.
    h.set_fault(|c| {
        if c.from == 0 && (c.info.data_index == 2 || c.info.data_index == 4) {
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
fn dctcp_receiver_acks_at_once_when_ce_state_changes() {
    let cfg = TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        delayed_ack: Some(DelayedAck::Fixed(Dur::from_millis(1))),
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    // Segment 0 unmarked, 1 marked, 2 and 3 unmarked.
    h.set_fault(|c| {
        if c.from == 0 && c.info.data_index == 1 {
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
        .filter(|s| s.from == 1 && s.info.offset.is_none())
        .map(|s| {
            let ece = s.pkt.tcp().unwrap().flags.contains(crate::TcpFlags::ECE);
            (s.info.ack.unwrap(), ece)
        })
        .collect();
    // Segment 0 is acknowledged without ECE when the marked segment 1 arrives; segment 1 with ECE
    // when the unmarked segment 2 arrives; 2 and 3 together (without ECE).
    assert_eq!(acks, vec![(MSS, false), (2 * MSS, true), (4 * MSS, false)]);
}
