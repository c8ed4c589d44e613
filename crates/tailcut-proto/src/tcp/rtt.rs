//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use crate::time::Dur;

/// SRTT / RTTVAR estimator with exponential back-off of the RTO.
#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    min_rto: Dur,
    max_rto: Dur,
    initial_rto: Dur,
    /// Number of consecutive back-offs applied since the last RTT sample or new ACK.
    backoff_exp: u32,
}

impl RttEstimator {
    pub(crate) fn new(min_rto: Dur, max_rto: Dur, initial_rto: Dur) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            min_rto,
            max_rto,
            initial_rto,
            backoff_exp: 0,
        }
    }

    pub(crate) fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    /// RFC 6298 Sec. 2.2 / 2.3: first sample sets SRTT = R, RTTVAR = R/2; later samples use
    /// alpha = 1/8 and beta = 1/4.
    pub(crate) fn on_sample(&mut self, rtt: Dur) {
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
        // RFC 6298 Sec. 5 (note after 5.7): a new sample collapses the back-off.
        self.backoff_exp = 0;
    }

    /// The RTO without back-off: RFC 6298 Sec. 2.1 (initial) and 2.3 (SRTT + 4 RTTVAR), clamped to
    /// [min_rto, max_rto] (Sec. 2.4, 2.5).
    fn base_rto(&self) -> Dur {
        let rto = match self.srtt {
            None => self.initial_rto,
            Some(srtt) => srtt + self.rttvar.saturating_mul(4),
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
        let mut r = RttEstimator::new(Dur::from_millis(1), Dur::from_millis(100), Dur::from_millis(50));
        assert_eq!(r.rto(), Dur::from_millis(50));
        r.on_sample(Dur::from_millis(10));
        // 10 + 4 * 5 = 30 ms
        assert_eq!(r.rto(), Dur::from_millis(30));
        r.back_off();
        assert_eq!(r.rto(), Dur::from_millis(60));
        r.back_off();
        assert_eq!(r.rto(), Dur::from_millis(100));
        r.on_sample(Dur::from_micros(1));
        assert!(r.rto() >= Dur::from_millis(1));
    }
}
