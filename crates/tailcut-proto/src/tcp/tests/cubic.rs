//! Cubic (RFC 9438, Linux `tcp_cubic.c`) on a whole connection through the scripted wire.

use super::harness::{test_cfg, Fate, Harness, Sent, MSS};
use crate::engine::AppEvent;
use crate::rng::Rng;
use crate::tcp::{CongestionControl, CubicConfig, TcpConfig};
use crate::time::{Dur, Time};
use proptest::prelude::*;
use rand::{Rng as _, SeedableRng};

/// cwnd of side 0 at `t` (after the last delivery at or before it).
fn cwnd_at(h: &Harness, t: Time) -> u64 {
    h.probe
        .cwnd_log
        .iter()
        .take_while(|o| o.time <= t)
        .last()
        .map_or(0, |o| o.cwnd_after)
        / MSS
}

/// RFC 9438 Sec. 4.2 and 4.6 / Linux `cubictcp_recalc_ssthresh` and `bictcp_update`, end to end: a
/// Cubic sender on a 200 ms path loses one segment in slow start, recovers by fast retransmit (one
/// retransmission, no timeout) with cwnd = ssthresh = cwnd * 717 / 1024, and then grows concave up to
/// W_max and convex past it: over 1.5 s steps the growth shrinks (24, 8, 1 segments by the closed
/// form) until t = K = cbrt(W_max (1 - beta) / C), then grows again (1, 9, 26), with cwnd at the
/// plateau within two segments of W_max. On this path the Reno estimate (8/15 segment per RTT) stays
/// below the cubic, so the cubic sets the pace.
#[test]
fn cubic_connection_recovers_then_grows_concave_then_convex() {
    let cfg = TcpConfig {
        congestion_control: CongestionControl::Cubic(CubicConfig::default()),
        // Above the 200 ms RTT of a jitter-free path (RFC 6298 would put the RTO at SRTT).
        min_rto: Dur::from_millis(1_000),
        initial_rto: Dur::from_millis(1_000),
        max_rto: Dur::from_millis(60_000),
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.one_way = Dur::from_millis(100);
    h.set_fault(|c| {
        if c.from == 0 && c.info.offset.is_some() && c.info.data_index == 100 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    h.send(0, 1, 50_000 * MSS);
    h.run_until(Time(12_000_000_000));

    assert_eq!(h.retransmissions(0).len(), 1);
    assert_eq!(h.eps[0].stats().timeouts, 0);
    // The reduction: the only decreases of cwnd. PRR (on for the default Linux host) lowers cwnd
    // step by step over the recovery, about two round trips here, to ssthresh.
    let cuts: Vec<_> = h
        .probe
        .cwnd_log
        .iter()
        .filter(|o| o.cwnd_after < o.cwnd_before)
        .collect();
    let (first, last) = (cuts[0], cuts[cuts.len() - 1]);
    assert!(last.time - first.time < Dur::from_millis(450), "{cuts:?}");
    let w_max = first.cwnd_before / MSS;
    let ss = last.cwnd_after / MSS;
    assert_eq!(ss, w_max * 717 / 1024);
    // HyStart did not end slow start on this uncongested wire: the loss did, at about 110 segments.
    assert!((100..=120).contains(&w_max), "W_max {w_max}");
    // The epoch begins with congestion avoidance: the first increase after the cut.
    let cut_at = last.time;
    let epoch = h
        .probe
        .cwnd_log
        .iter()
        .find(|o| o.time > cut_at && o.cwnd_after > o.cwnd_before)
        .unwrap()
        .time;
    let c = 410.0 / 1024.0;
    let k = (w_max as f64 * (1.0 - 717.0 / 1024.0) / c).cbrt();
    let at = |s: f64| cwnd_at(&h, epoch + Dur((s * 1e9) as u64)) as i64;
    let step = 1.5;
    let before: Vec<i64> = (0..3)
        .map(|i| at(k - step * (2 - i) as f64) - at(k - step * (3 - i) as f64))
        .collect();
    let after: Vec<i64> = (0..3)
        .map(|i| at(k + step * (i + 1) as f64) - at(k + step * i as f64))
        .collect();
    assert!(
        before[0] > before[1] && before[1] > before[2],
        "concave: {before:?}"
    );
    assert!(after[0] < after[1] && after[1] < after[2], "convex: {after:?}");
    assert!(
        (at(k) - w_max as i64).abs() <= 2,
        "cwnd {} at K, W_max {w_max}",
        at(k)
    );
}

/// A Cubic transfer under random data and ACK loss, CE marks (with ECN) and reordering.
fn lossy_run(seed: u64, loss: f64, ce: f64, flags: [bool; 4], msgs: &[u64]) -> Harness {
    let [sack, delayed, ecn, hystart] = flags;
    let cfg = TcpConfig {
        sack,
        delayed_ack: delayed.then_some(crate::tcp::DelayedAck::Fixed(Dur::from_micros(200))),
        ecn,
        congestion_control: CongestionControl::Cubic(CubicConfig {
            hystart,
            ..CubicConfig::default()
        }),
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.step_limit = 2_000_000;
    let mut rng = Rng::seed_from_u64(seed);
    h.set_fault(move |_| {
        let x: f64 = rng.random();
        if x < loss {
            Fate::Drop
        } else if x < loss + ce {
            Fate::Ce
        } else if x < loss + ce + 0.05 {
            Fate::Delay(Dur::from_micros(3))
        } else {
            Fate::Deliver
        }
    });
    for (i, &len) in msgs.iter().enumerate() {
        h.send(0, i as u64, len);
    }
    h.run();
    h
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Cubic's hooks (HyStart, the loss threshold, timeouts, ECN-Echo, idle) keep the sender's
    /// guarantees: under random loss every message arrives and is acknowledged exactly once (the
    /// harness checks each byte once), cwnd never falls below one segment, and a run is a pure
    /// function of its seed.
    #[test]
    fn cubic_transfers_complete_exactly_once_and_deterministically(
        seed in any::<u64>(),
        loss in 0.0..0.2f64,
        ce in 0.0..0.2f64,
        flags in any::<[bool; 4]>(),
        msgs in prop::collection::vec(1u64..300_000, 1..4),
    ) {
        let h = lossy_run(seed, loss, ce, flags, &msgs);
        let total: u64 = msgs.iter().sum();
        prop_assert_eq!(h.eps[1].rcv_nxt(), total);
        prop_assert_eq!(h.eps[0].snd_una(), total);
        let mut acked: Vec<u64> = h.events_of(0).into_iter().filter_map(|e| match e {
            AppEvent::MessageAcked { msg, .. } => Some(msg),
            _ => None,
        }).collect();
        acked.sort_unstable();
        prop_assert_eq!(acked, (0..msgs.len() as u64).collect::<Vec<_>>());
        prop_assert!(h.probe.cwnd_log.iter().all(|o| o.cwnd_after >= MSS));
        let again = lossy_run(seed, loss, ce, flags, &msgs);
        let a: &[Sent] = &h.sent;
        let b: &[Sent] = &again.sent;
        prop_assert!(a == b, "same seed, different packet trace");
    }
}
