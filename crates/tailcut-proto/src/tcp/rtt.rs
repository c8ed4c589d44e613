//! Round-trip time estimation and the retransmission timeout: RFC 6298, or Linux's estimator
//! (`tcp_rtt_estimator` and `__tcp_set_rto` in net/ipv4/tcp_input.c), chosen by `rto_estimator`.

use super::config::RtoEstimator;
use crate::time::Dur;

/// SRTT / RTTVAR estimator with exponential back-off of the RTO.
#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    kind: RtoEstimator,
    srtt: Option<Dur>,
    /// RFC 6298's RTTVAR; under Linux, `rttvar_us`: the largest `mdev` of the last round trip, at
    /// least `min_rto`, decaying towards `mdev_max` by a quarter per round trip. The RTO adds it to
    /// SRTT as it is (it already holds the factor 4).
    rttvar: Dur,
    /// Linux `mdev_us`: four times the smoothed mean deviation.
    mdev: Dur,
    /// Linux `mdev_max_us`: the largest `mdev` since `rtt_seq` was set (reset to `min_rto`).
    mdev_max: Dur,
    /// Linux `rtt_seq`: `snd_nxt` when the current round trip of the estimator began; once `snd_una`
    /// passes it, RTTVAR may decay.
    rtt_seq: u64,
    min_rto: Dur,
    max_rto: Dur,
    initial_rto: Dur,
    /// Number of consecutive back-offs applied since the last RTT sample or new ACK.
    backoff_exp: u32,
}

impl RttEstimator {
    pub(crate) fn new(kind: RtoEstimator, min_rto: Dur, max_rto: Dur, initial_rto: Dur) -> Self {
        RttEstimator {
            kind,
            srtt: None,
            rttvar: Dur::ZERO,
            mdev: Dur::ZERO,
            mdev_max: Dur::ZERO,
            rtt_seq: 0,
            min_rto,
            max_rto,
            initial_rto,
            backoff_exp: 0,
        }
    }

    pub(crate) fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    /// One RTT sample, taken on an ACK that moved `snd_una` to `snd_una` (the cumulative ACK
    /// already applied, as Linux's `tcp_ack` does before `tcp_clean_rtx_queue`) with `snd_nxt`
    /// sent.
    pub(crate) fn on_sample(&mut self, rtt: Dur, snd_una: u64, snd_nxt: u64) {
        match self.kind {
            RtoEstimator::Rfc6298 => self.rfc6298_sample(rtt),
            RtoEstimator::Linux => self.linux_sample(rtt, snd_una, snd_nxt),
        }
        // RFC 6298 Sec. 5 (note after 5.7) and Linux `tcp_ack_update_rtt`: a new sample collapses
        // the back-off.
        self.backoff_exp = 0;
    }

    /// RFC 6298 Sec. 2.2 / 2.3: first sample sets SRTT = R, RTTVAR = R/2; later samples use
    /// alpha = 1/8 and beta = 1/4.
    fn rfc6298_sample(&mut self, rtt: Dur) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = Dur(rtt.0 / 2);
            }
            Some(srtt) => {
                let err = srtt.0.abs_diff(rtt.0);
                self.rttvar = Dur((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(Dur((7 * srtt.0 + rtt.0) / 8));
            }
        }
    }

    /// Linux `tcp_rtt_estimator`, step by step (its fixed-point scaling left out: times are
    /// nanoseconds here).
    fn linux_sample(&mut self, rtt: Dur, snd_una: u64, snd_nxt: u64) {
        let m = rtt.0 as i64;
        let Some(srtt) = self.srtt else {
            // No previous measure: SRTT = m, mdev = 2m ("make sure rto = 3*rtt"), RTTVAR at least
            // min_rto.
            self.srtt = Some(rtt);
            self.mdev = Dur(rtt.0.saturating_mul(2));
            self.rttvar = self.mdev.max(self.min_rto);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
            return;
        };
        let err = m - srtt.0 as i64;
        self.srtt = Some(Dur((srtt.0 as i64 + err / 8).max(1) as u64));
        let quarter = (self.mdev.0 / 4) as i64;
        let step = if err < 0 {
            // A falling RTT moves mdev with gain 1/32, not 1/4 ("similar to one of Eifel
            // findings"), and never upwards by more than that: the RTO does not grow as the RTT
            // falls, nor collapse.
            let e = -err - quarter;
            if e > 0 {
                e >> 3
            } else {
                e
            }
        } else {
            err - quarter
        };
        self.mdev = Dur((self.mdev.0 as i64 + step).max(0) as u64);
        if self.mdev > self.mdev_max {
            self.mdev_max = self.mdev;
            if self.mdev_max > self.rttvar {
                self.rttvar = self.mdev_max;
            }
        }
        // Once per round trip: RTTVAR decays a quarter of the way to the round's largest mdev, and
        // the next round's maximum starts from min_rto.
        if snd_una > self.rtt_seq {
            if self.mdev_max < self.rttvar {
                self.rttvar = self.rttvar - Dur((self.rttvar.0 - self.mdev_max.0) / 4);
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max = self.min_rto;
        }
    }

    /// The RTO without back-off: RFC 6298 Sec. 2.1 (initial) and 2.3 (SRTT + 4 RTTVAR), clamped to
    /// [min_rto, max_rto] (Sec. 2.4, 2.5); Linux `__tcp_set_rto`: SRTT + RTTVAR (already at least
    /// min_rto), bounded by max_rto (`tcp_bound_rto`).
    fn base_rto(&self) -> Dur {
        let rto = match (self.srtt, self.kind) {
            (None, _) => self.initial_rto,
            (Some(srtt), RtoEstimator::Rfc6298) => srtt + self.rttvar.saturating_mul(4),
            (Some(srtt), RtoEstimator::Linux) => srtt + self.rttvar,
        };
        rto.max(self.min_rto).min(self.max_rto)
    }

    /// The current RTO including back-off (RFC 6298 Sec. 5.5), capped at max_rto.
    pub(crate) fn rto(&self) -> Dur {
        let base = self.base_rto();
        let factor = 1u64.checked_shl(self.backoff_exp.min(63)).unwrap_or(u64::MAX);
        base.saturating_mul(factor).min(self.max_rto.max(base))
    }

    /// RFC 6298 Sec. 5.5: double the RTO after a timeout.
    pub(crate) fn back_off(&mut self) {
        self.backoff_exp = self.backoff_exp.saturating_add(1);
    }

    /// Forget the back-off (RFC 6298 Sec. 5.7: a timed-out SYN does not slow the data phase).
    pub(crate) fn reset_backoff(&mut self) {
        self.backoff_exp = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_and_clamp() {
        let mut r = RttEstimator::new(
            RtoEstimator::Rfc6298,
            Dur::from_millis(1),
            Dur::from_millis(100),
            Dur::from_millis(50),
        );
        assert_eq!(r.rto(), Dur::from_millis(50));
        r.on_sample(Dur::from_millis(10), 0, 0);
        // 10 + 4 * 5 = 30 ms
        assert_eq!(r.rto(), Dur::from_millis(30));
        r.back_off();
        assert_eq!(r.rto(), Dur::from_millis(60));
        r.back_off();
        assert_eq!(r.rto(), Dur::from_millis(100));
        r.on_sample(Dur::from_micros(1), 0, 0);
        assert!(r.rto() >= Dur::from_millis(1));
    }

    fn linux(min_rto_ms: u64) -> RttEstimator {
        RttEstimator::new(
            RtoEstimator::Linux,
            Dur::from_millis(min_rto_ms),
            Dur::from_millis(120_000),
            Dur::from_millis(1_000),
        )
    }

    /// Linux `tcp_rtt_estimator`, first measure: mdev = 2 RTT "to make sure rto = 3*rtt", RTTVAR =
    /// max(mdev, rto_min); `__tcp_set_rto`: RTO = SRTT + RTTVAR.
    #[test]
    fn linux_first_sample_is_three_rtts_or_srtt_plus_min_rto() {
        let mut r = linux(5);
        r.on_sample(Dur::from_millis(10), 0, 100);
        assert_eq!(r.rto(), Dur::from_millis(30));
        let mut r = linux(5);
        r.on_sample(Dur::from_micros(400), 0, 100);
        // 2 x 0.4 ms < 5 ms: RTTVAR is rto_min, RTO = 0.4 + 5 ms (RFC 6298 would give 5 ms).
        assert_eq!(r.rto(), Dur::from_micros(5_400));
    }

    /// The RTO keeps `min_rto` above SRTT as a queue builds (RFC 6298's clamp lets it fall to
    /// SRTT + 4 RTTVAR, within one sample's jump of the RTT once the queue is steady).
    #[test]
    fn linux_rto_stays_min_rto_above_a_steady_srtt() {
        let (mut linux, mut rfc) = (linux(5), linux(5));
        rfc.kind = RtoEstimator::Rfc6298;
        let mut una = 0;
        for _ in 0..200 {
            una += 10;
            linux.on_sample(Dur::from_millis(10), una, una + 10);
            rfc.on_sample(Dur::from_millis(10), una, una + 10);
        }
        assert_eq!(linux.srtt(), Some(Dur::from_millis(10)));
        // RTTVAR decays a quarter of the way per round trip, to within nanoseconds of min_rto.
        let rto = linux.rto();
        assert!(
            rto >= Dur::from_millis(15) && rto < Dur::from_micros(15_001),
            "Linux: {rto:?}"
        );
        assert!(rfc.rto() < Dur::from_micros(10_100), "RFC 6298: {:?}", rfc.rto());
    }

    /// A falling RTT moves mdev with gain 1/32 (Linux: "m >>= 3" on top of the 1/4), so one low
    /// sample barely lowers RTTVAR; a rising one moves it with 1/4.
    #[test]
    fn linux_falling_rtt_moves_mdev_slowly() {
        let mut r = linux(1);
        r.on_sample(Dur::from_millis(10), 0, 10); // mdev = 20 ms, RTTVAR = 20 ms
        r.on_sample(Dur::from_millis(2), 0, 10); // err = -8 ms: |err| - mdev/4 = 3 ms, >> 3
        assert_eq!(r.mdev, Dur(20_000_000 + 375_000));
        let mut r = linux(1);
        r.on_sample(Dur::from_millis(10), 0, 10);
        r.on_sample(Dur::from_millis(18), 0, 10); // err = +8 ms: 8 - 5 = 3 ms
        assert_eq!(r.mdev, Dur(23_000_000));
        assert_eq!(r.rttvar, Dur(23_000_000));
    }

    /// RTTVAR decays only when `snd_una` passes `rtt_seq` (once per round trip), a quarter of the
    /// way towards the round's largest mdev, and never below `min_rto`.
    #[test]
    fn linux_rttvar_decays_once_per_round_trip() {
        let mut r = linux(5);
        r.on_sample(Dur::from_millis(10), 0, 100); // RTTVAR = 20 ms, rtt_seq = 100
        for _ in 0..10 {
            r.on_sample(Dur::from_millis(10), 50, 150); // same round: no decay
        }
        assert_eq!(r.rttvar, Dur::from_millis(20));
        r.on_sample(Dur::from_millis(10), 120, 200); // round over: its mdev_max was RTTVAR itself
        assert_eq!(r.rttvar, Dur::from_millis(20));
        let mut una = 200;
        for _ in 0..100 {
            una += 100;
            r.on_sample(Dur::from_millis(10), una, una + 100);
        }
        assert!(
            r.rttvar >= Dur::from_millis(5) && r.rttvar < Dur::from_micros(5_001),
            "floor: min_rto, {:?}",
            r.rttvar
        );
    }
}
