//! Proportional Rate Reduction (RFC 6937; Linux `tcp_cwnd_reduction`), scripted through a whole
//! connection: how many segments the sender releases per ACK while it recovers.

use super::harness::{test_cfg, Fate, Harness, MSS};
use crate::tcp::{HostProfile, RtoEstimator, TcpConfig};

/// 20 segments in flight (initial window 20) of a 40-segment message, the first one lost: the
/// duplicate ACKs of segments 1-19 arrive one by one (10 Gb/s, 0.8 us apart).
fn one_loss(cfg: TcpConfig) -> Harness {
    let mut h = Harness::tcp(TcpConfig {
        initial_cwnd_segments: 20,
        ..cfg
    });
    h.set_fault(|c| {
        if c.from == 0 && c.info.copy == 0 && c.info.offset == Some(0) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 40 * MSS);
    h.run();
    assert_eq!(h.eps[1].rcv_nxt(), 40 * MSS);
    let st = h.eps[0].stats();
    assert_eq!((st.timeouts, st.fast_retransmits, st.retransmits), (0, 1, 1));
    h
}

/// New segments side 0 sent in answer to each duplicate ACK from the fast retransmission on, one
/// entry per ACK arrival.
fn new_segments_per_dupack(h: &Harness) -> Vec<usize> {
    let rtx = h.retransmissions(0)[0].time;
    h.acks_arriving(0, 0)
        .into_iter()
        .filter(|&t| t >= rtx)
        .map(|t| h.data_from(0).filter(|s| s.time == t && s.info.copy == 0).count())
        .collect()
}

/// RFC 6937 Sec. 3.1 (Linux `tcp_cwnd_reduction`, pipe > ssthresh): with ssthresh = RecoverFS / 2
/// PRR sends one new segment for every second duplicate ACK from the start of recovery, so the
/// reduction is spread over the round trip. RFC 6675 Sec. 5 sets cwnd = ssthresh at once: nothing
/// leaves until pipe has drained below ssthresh, then one segment per ACK. Both send the same total.
#[test]
fn prr_spreads_the_reduction_over_the_round_trip() {
    let prr = new_segments_per_dupack(&one_loss(TcpConfig {
        prr: true,
        ..test_cfg()
    }));
    let rfc6675 = new_segments_per_dupack(&one_loss(TcpConfig {
        prr: false,
        ..test_cfg()
    }));
    // The ACK that starts recovery sends the fast retransmission (PRR's forced first segment), then
    // one new segment leaves for every second ACK: ceil(ssthresh * delivered / RecoverFS) - out.
    assert_eq!(prr[..8], [0, 0, 1, 0, 1, 0, 1, 0], "PRR: {prr:?}");
    assert_eq!(rfc6675[..8], [0; 8], "RFC 6675: {rfc6675:?}");
    let total = |v: &[usize]| v.iter().sum::<usize>();
    assert!(total(&prr).abs_diff(total(&rfc6675)) <= 1, "{prr:?} {rfc6675:?}");
}

/// The profile sets PRR's default (`HostProfile::apply`), and a key given explicitly wins.
#[test]
fn host_profile_sets_prr_unless_given() {
    let mut c = TcpConfig::default();
    assert!(c.prr && c.rto_restart_on_retransmit, "Linux is the default host");
    assert_eq!(c.rto_estimator, RtoEstimator::Linux);
    HostProfile::Paper.apply(&mut c, |_| false);
    assert!(!c.prr && !c.rto_restart_on_retransmit);
    assert_eq!(c.rto_estimator, RtoEstimator::Rfc6298);
    c.prr = true;
    c.rto_estimator = RtoEstimator::Linux;
    HostProfile::Paper.apply(&mut c, |k| k == "prr" || k == "rto_estimator");
    assert!(c.prr);
    assert_eq!(c.rto_estimator, RtoEstimator::Linux);
    HostProfile::Linux.apply(&mut c, |_| false);
    assert_eq!(c.rto_estimator, RtoEstimator::Linux);
}
