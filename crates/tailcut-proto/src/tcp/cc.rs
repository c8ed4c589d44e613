//! Congestion window arithmetic: RFC 5681 slow start and congestion avoidance, the multiplicative
//! decreases of loss recovery, timeouts and ECN (RFC 3168), and DCTCP's alpha (RFC 8257).
//!
//! The sender decides *when* to call these hooks (recovery entry, ECN-Echo once per window); this type
//! only holds the numbers, so later schemes can reuse it unchanged.

use super::config::CongestionControl;

/// DCTCP sender state (RFC 8257 Sec. 3.3).
#[derive(Clone, Debug)]
pub(crate) struct Dctcp {
    g: f64,
    /// Estimate of the fraction of marked bytes, in [0, 1].
    pub(crate) alpha: f64,
    bytes_acked: u64,
    bytes_marked: u64,
    /// End (exclusive stream offset) of the current observation window.
    window_end: u64,
}

impl Dctcp {
    fn new(g: f64) -> Self {
        Dctcp {
            g,
            // Start at the maximum, 1, as Linux does by default (`dctcp_alpha_on_init`): until
            // the sender has measured the marking rate, a mark is answered like a classic halving.
            alpha: 1.0,
            bytes_acked: 0,
            bytes_marked: 0,
            window_end: 0,
        }
    }

    /// RFC 8257 Sec. 3.3 steps 2-9: count acknowledged and ECE-marked bytes; when the ACK passes the
    /// end of the observation window, fold the marked fraction into alpha and start a new window that
    /// ends at the current `snd_nxt`.
    fn on_ack(&mut self, acked_bytes: u64, ece: bool, snd_una: u64, snd_nxt: u64) {
        self.bytes_acked += acked_bytes;
        if ece {
            self.bytes_marked += acked_bytes;
        }
        if snd_una > self.window_end || (snd_una == self.window_end && acked_bytes > 0) {
            let f = if self.bytes_acked == 0 {
                0.0
            } else {
                self.bytes_marked as f64 / self.bytes_acked as f64
            };
            self.alpha = ((1.0 - self.g) * self.alpha + self.g * f).clamp(0.0, 1.0);
            self.bytes_acked = 0;
            self.bytes_marked = 0;
            self.window_end = snd_nxt;
        }
    }
}

/// Congestion window and slow-start threshold, in bytes.
#[derive(Clone, Debug)]
pub(crate) struct CongestionState {
    mss_bytes: u64,
    initial_cwnd_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// RFC 5681 Sec. 3.1 byte counting in congestion avoidance (RFC 3465).
    ca_acked_bytes: u64,
    /// Share of the uncoupled congestion-avoidance increase this window gets, in (0, 1]: 1 for plain
    /// TCP; MPTCP's coupled increase (RFC 6356) sets it before each ACK.
    ca_scale: f64,
    pub(crate) dctcp: Option<Dctcp>,
}

impl CongestionState {
    pub(crate) fn new(mss_bytes: u32, initial_cwnd_segments: u32, cc: CongestionControl) -> Self {
        let mss_bytes = u64::from(mss_bytes.max(1));
        let initial_cwnd_bytes = mss_bytes * u64::from(initial_cwnd_segments.max(1));
        CongestionState {
            mss_bytes,
            initial_cwnd_bytes,
            cwnd_bytes: initial_cwnd_bytes,
            // RFC 5681 Sec. 3.1: the initial ssthresh SHOULD be arbitrarily high.
            ssthresh_bytes: u64::MAX,
            ca_acked_bytes: 0,
            ca_scale: 1.0,
            dctcp: match cc {
                CongestionControl::NewReno => None,
                CongestionControl::Dctcp { g } => Some(Dctcp::new(g)),
            },
        }
    }

    pub(crate) fn cwnd_bytes(&self) -> u64 {
        self.cwnd_bytes
    }

    pub(crate) fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh_bytes
    }

    pub(crate) fn set_cwnd_bytes(&mut self, cwnd_bytes: u64) {
        self.cwnd_bytes = cwnd_bytes.max(self.mss_bytes);
    }

    /// RFC 5681 Sec. 3.1: slow start grows cwnd by min(N, SMSS) per ACK of N new bytes; congestion
    /// avoidance by one SMSS per cwnd of acknowledged bytes (byte counting, RFC 3465).
    pub(crate) fn on_new_ack(&mut self, acked_bytes: u64) {
        if acked_bytes == 0 {
            return;
        }
        if self.cwnd_bytes < self.ssthresh_bytes {
            self.cwnd_bytes += acked_bytes.min(self.mss_bytes);
        } else {
            self.ca_acked_bytes += if self.ca_scale >= 1.0 {
                acked_bytes
            } else {
                (acked_bytes as f64 * self.ca_scale).round() as u64
            };
            if self.ca_acked_bytes >= self.cwnd_bytes {
                self.ca_acked_bytes -= self.cwnd_bytes;
                self.cwnd_bytes += self.mss_bytes;
            }
        }
    }

    /// Scale the congestion-avoidance increase by `scale` (clamped to (0, 1]).
    pub(crate) fn set_ca_scale(&mut self, scale: f64) {
        self.ca_scale = if scale.is_finite() {
            scale.clamp(1e-6, 1.0)
        } else {
            1.0
        };
    }

    /// RFC 5681 Sec. 3.2 eq. (4): ssthresh = max(FlightSize / 2, 2 SMSS). Returns the new ssthresh.
    pub(crate) fn reduce_ssthresh(&mut self, flight_bytes: u64) -> u64 {
        self.ssthresh_bytes = (flight_bytes / 2).max(2 * self.mss_bytes);
        self.ca_acked_bytes = 0;
        self.ssthresh_bytes
    }

    /// RFC 5681 Sec. 3.1: after a retransmission timeout cwnd is the loss window, one segment.
    /// RFC 5681 Sec. 3.1 also holds ssthresh constant when the same segment times out again.
    pub(crate) fn on_timeout(&mut self, flight_bytes: u64, first_timeout: bool) {
        if first_timeout {
            self.reduce_ssthresh(flight_bytes);
        }
        self.cwnd_bytes = self.mss_bytes;
        self.ca_acked_bytes = 0;
    }

    /// RFC 3168 Sec. 6.1.2: on ECN-Echo, halve like a loss (ssthresh from the flight, cwnd =
    /// ssthresh). DCTCP (RFC 8257 Sec. 3.3 step 11): cwnd <- cwnd (1 - alpha / 2) instead.
    pub(crate) fn on_ecn_echo(&mut self, flight_bytes: u64) {
        match &self.dctcp {
            None => {
                let ss = self.reduce_ssthresh(flight_bytes);
                self.cwnd_bytes = ss;
            }
            Some(d) => {
                let cut = (self.cwnd_bytes as f64 * (1.0 - d.alpha / 2.0)) as u64;
                // Linux `dctcp_ssthresh` keeps at least two segments.
                self.cwnd_bytes = cut.max(2 * self.mss_bytes);
                self.ssthresh_bytes = self.cwnd_bytes;
                self.ca_acked_bytes = 0;
            }
        }
    }

    /// DCTCP bookkeeping for every ACK (no-op for NewReno).
    pub(crate) fn dctcp_on_ack(&mut self, acked_bytes: u64, ece: bool, snd_una: u64, snd_nxt: u64) {
        if let Some(d) = &mut self.dctcp {
            d.on_ack(acked_bytes, ece, snd_una, snd_nxt);
        }
    }

    pub(crate) fn dctcp_alpha(&self) -> Option<f64> {
        self.dctcp.as_ref().map(|d| d.alpha)
    }

    /// RFC 5681 Sec. 4.1: after an idle period longer than the RTO, restart from
    /// RW = min(IW, cwnd).
    pub(crate) fn restart_after_idle(&mut self) {
        self.cwnd_bytes = self.cwnd_bytes.min(self.initial_cwnd_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_avoidance() {
        let mut c = CongestionState::new(1000, 2, CongestionControl::NewReno);
        c.on_new_ack(1000);
        assert_eq!(c.cwnd_bytes(), 3000);
        c.reduce_ssthresh(6000);
        assert_eq!(c.ssthresh_bytes(), 3000);
        c.on_new_ack(1000);
        c.on_new_ack(1000);
        assert_eq!(c.cwnd_bytes(), 3000);
        c.on_new_ack(1000);
        assert_eq!(c.cwnd_bytes(), 4000);
        c.on_timeout(8000, true);
        assert_eq!(c.cwnd_bytes(), 1000);
        assert_eq!(c.ssthresh_bytes(), 4000);
    }
}
