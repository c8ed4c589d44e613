//! RTT sampling across a timeout, the two RTO back-off rules, and handshake timeouts.

use super::harness::{test_cfg, Fate, Harness, MSS};
use crate::engine::AppEvent;
use crate::tcp::{LossDetection, RackConfig, RtoBackoff, TcpConfig};
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
    // Linux `__tcp_set_rto`: SRTT + RTTVAR, RTTVAR at its floor min_rto.
    assert_eq!(h.eps[0].rto(), srtt + Dur::from_millis(5));
}

#[test]
fn karn_takes_no_sample_from_the_retransmissions_ack_and_keeps_the_back_off_until_new_data() {
    let mut h = lossy_flow(RtoBackoff::Karn);
    let srtt = h.eps[0].srtt().unwrap();
    assert!(srtt < CLEAN_RTT_BOUND, "srtt {srtt}");
    // The timeout doubled the RTO (SRTT + min_rto, Linux's estimator) and no ACK of data never
    // retransmitted has come since.
    assert_eq!(h.eps[0].rto(), (srtt + Dur::from_millis(5)).saturating_mul(2));
    // The next flow on the connection is ACKed cleanly: its samples end the back-off, and the
    // RTO is what the clean samples give (SRTT + the floor), not the held segments' wait.
    h.set_fault(|_| Fate::Deliver);
    h.send(0, 2, 4 * MSS);
    h.run();
    let srtt = h.eps[0].srtt().unwrap();
    assert!(srtt < CLEAN_RTT_BOUND);
    assert_eq!(h.eps[0].rto(), srtt + Dur::from_millis(5));
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

/// Segment 10 of 20 lost; the duplicate ACKs that reveal it arrive 3 ms late and the fast
/// retransmission waits 4 ms in a queue: it is delivered about 7 ms after the last ACK of new data,
/// past that ACK's RTO deadline (min RTO 5 ms).
fn slow_repair(rto_restart_on_retransmit: bool) -> Harness {
    let mut h = Harness::tcp(TcpConfig {
        initial_cwnd_segments: 20,
        rto_restart_on_retransmit,
        // No tail loss probe: its probe would re-arm the RTO too (RFC 8985 Sec. 7.3).
        rack: RackConfig {
            tlp: false,
            ..RackConfig::default()
        },
        ..test_cfg()
    });
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset == Some(10 * MSS) {
            match c.info.copy {
                0 => Fate::Drop,
                1 => Fate::Delay(Dur::from_millis(4)),
                _ => Fate::Deliver,
            }
        } else if c.from == 1
            && c.info.ack == Some(10 * MSS)
            && c.pkt.tcp().is_some_and(|h| !h.sack.is_empty())
        {
            // The duplicates only: the ACK of segment 9 (also up to 10) advances snd_una on time.
            Fate::Delay(Dur::from_millis(3))
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 20 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 20 * MSS);
    h
}

/// Linux `tcp_xmit_retransmit_queue` re-arms the RTO when it retransmits the head of the
/// retransmission queue, so the slow repair completes without a timeout; RFC 6298 Sec. 5 keeps the
/// deadline of the last ACK of new data, and the timer fires while the repair is still queued (a
/// spurious timeout, and a second copy of segment 10).
#[test]
fn retransmitting_the_head_restarts_the_rto_as_linux() {
    let linux = slow_repair(true);
    let st = linux.eps[0].stats();
    // (RACK may resend the queued repair once more when later segments are SACKed before it: that is
    // lost-retransmission detection, not a timeout.)
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    let rfc6298 = slow_repair(false);
    let st = rfc6298.eps[0].stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 1));
    assert!(st.retransmits >= 2);
}

/// `timer_hz` (Linux's jiffies on the timer wheel, `tcp/jiffies.rs`): at HZ = 250 the 5 ms minimum
/// RTO is 2 jiffies (`tcp_rto_min_us` is kept in jiffies), and the timer fires at a tick boundary, one
/// bucket after its expiry (`calc_index`): 8-12 ms after it was armed, where exact timers wait 5 ms.
#[test]
fn at_hz_250_the_rto_fires_at_a_tick_8_to_12_ms_after_it_was_armed() {
    use super::harness::{drop_first_copies, last_new_ack_before};
    const JIFFY: u64 = 4_000_000;
    for hz in [0, 250] {
        let cfg = TcpConfig {
            loss_detection: LossDetection::Dupthresh,
            rto_estimator: crate::tcp::RtoEstimator::Rfc6298,
            timer_hz: hz,
            ..test_cfg()
        };
        let mut h = Harness::tcp(cfg);
        drop_first_copies(&mut h, &[2 * MSS]);
        h.send(0, 1, 3 * MSS);
        h.run();
        let rtx = h.retransmissions(0);
        assert_eq!(rtx.len(), 1);
        let armed = last_new_ack_before(&h, rtx[0].time);
        let wait = rtx[0].time - armed;
        if hz == 0 {
            assert_eq!(wait, Dur::from_millis(5));
        } else {
            assert_eq!(rtx[0].time.0 % JIFFY, 0, "fires at a tick: {}", rtx[0].time);
            assert_eq!(
                rtx[0].time.0 / JIFFY,
                armed.0 / JIFFY + 3,
                "expiry jiffies + 2, next bucket"
            );
            assert!(
                wait > Dur::from_millis(8) && wait <= Dur::from_millis(12),
                "{wait}"
            );
        }
        assert_eq!(h.eps[0].stats().timeouts, 1);
    }
}

/// The probe timeout too: 2 SRTT + 2 ms (`TCP_TIMEOUT_MIN_US`) is one jiffy at HZ = 250, so the
/// probe leaves at the second tick after the last ACK, 4-8 ms later, where exact timers wait ~2 ms.
#[test]
fn at_hz_250_the_probe_timeout_is_whole_jiffies() {
    use super::harness::last_new_ack_before;
    const JIFFY: u64 = 4_000_000;
    let cfg = TcpConfig {
        timer_hz: 250,
        ..test_cfg()
    };
    let h = super::rack::warm_then(cfg, Dur::from_micros(10), 10, &[8, 9], Fate::Drop);
    let rtx = h.retransmissions(0);
    let probe = rtx[0].time;
    let armed = last_new_ack_before(&h, probe);
    assert_eq!(probe.0 % JIFFY, 0, "{probe}");
    assert_eq!(probe.0 / JIFFY, armed.0 / JIFFY + 2);
    assert_eq!(h.eps[0].stats().tlp_probes, 1);
}
