//! RTT sampling across a timeout, the two RTO back-off rules, and handshake timeouts.

use super::harness::{test_cfg, Fate, Harness, MSS};
use crate::engine::AppEvent;
use crate::tcp::{LossDetection, RtoBackoff, TcpConfig};
use crate::time::Dur;

/// The scenario: 1 Gbps, min RTO 5 ms, an 11-segment flow loses segment 6 and its fast
/// retransmission; the timeout's retransmission fills the hole and one ACK covers 6-10, whose
/// first copies waited at the receiver for about an RTO. Returns the harness after that flow.
fn lossy_flow(backoff: RtoBackoff) -> Harness {
    let cfg = TcpConfig {
        rto_backoff: backoff,
        loss_detection: LossDetection::Dupthresh,
        initial_cwnd_segments: 11,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.rate_bps = 1_000_000_000;
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(6 * MSS) && c.info.copy < 2 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 11 * MSS);
    h.run();
    let st = h.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 1));
    assert_eq!(h.eps[1].rcv_nxt(), 11 * MSS);
    h
}

/// A clean round trip here is tens of microseconds; the held segments' wait is over 5 ms.
const CLEAN_RTT_BOUND: Dur = Dur::from_micros(100);

#[test]
fn no_rtt_sample_spans_a_timeout_and_linux_ends_the_back_off_at_the_retransmissions_ack() {
    let h = lossy_flow(RtoBackoff::Linux);
    // The ACK of the retransmission gave a sample from the retransmission's send time (what its
    // timestamp echo carries), not from segments 7-10's: SRTT stays clean, and the back-off
    // doubled by the timeout is gone.
    let srtt = h.eps[0].srtt().unwrap();
    assert!(srtt < CLEAN_RTT_BOUND, "srtt {srtt}");
    assert_eq!(h.eps[0].rto(), Dur::from_millis(5));
}

#[test]
fn karn_takes_no_sample_from_the_retransmissions_ack_and_keeps_the_back_off_until_new_data() {
    let mut h = lossy_flow(RtoBackoff::Karn);
    let srtt = h.eps[0].srtt().unwrap();
    assert!(srtt < CLEAN_RTT_BOUND, "srtt {srtt}");
    // The timeout doubled the RTO and no ACK of data never retransmitted has come since.
    assert_eq!(h.eps[0].rto(), Dur::from_millis(10));
    // The next flow on the connection is ACKed cleanly: its samples end the back-off, and the
    // RTO is what the clean samples give (the floor), not the held segments' wait.
    h.set_fault(|_| Fate::Deliver);
    h.send(0, 2, 4 * MSS);
    h.run();
    assert!(h.eps[0].srtt().unwrap() < CLEAN_RTT_BOUND);
    assert_eq!(h.eps[0].rto(), Dur::from_millis(5));
}

#[test]
fn a_lost_syn_is_a_timeout_of_the_message_behind_it() {
    let cfg = TcpConfig {
        handshake: true,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg.clone());
    // Drop the client's first SYN (its first payload-less packet).
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset.is_none() && c.info.ctl_index == 0 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 2 * MSS);
    h.run();
    assert_eq!(h.eps[0].stats().syn_retransmits, 1);
    let stats = h
        .events_of(0)
        .into_iter()
        .find_map(|e| match e {
            AppEvent::MessageAcked { msg: 1, stats } => Some(stats),
            _ => None,
        })
        .expect("acknowledged");
    assert_eq!(stats.timeouts, 1);
    // The data itself needed no timeout.
    assert_eq!(h.eps[0].stats().timeouts, 0);
    // The SYN's wait is the initial RTO (RFC 6298 Sec. 2.1).
    let syns: Vec<_> = h
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.info.offset.is_none())
        .take(2)
        .collect();
    assert_eq!(syns[1].time - syns[0].time, cfg.initial_rto);
}
