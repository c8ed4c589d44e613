//! DCTCP (RFC 8257): alpha, the estimated fraction of marked bytes, updated once per window of data;
//! on ECN-Echo cwnd <- cwnd (1 - alpha / 2) instead of a halving. Loss handling as NewReno.

use super::{AckEvent, CongestionControl, CongestionState};

/// DCTCP sender state (RFC 8257 Sec. 3.3).
#[derive(Clone, Debug)]
pub(crate) struct Dctcp {
    g: f64,
    /// Estimate of the fraction of marked bytes, in [0, 1].
    alpha: f64,
    bytes_acked: u64,
    bytes_marked: u64,
    /// End (exclusive stream offset) of the current observation window.
    window_end: u64,
}

impl Dctcp {
    pub(crate) fn new(g: f64) -> Self {
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
}

impl CongestionControl for Dctcp {
    /// RFC 8257 Sec. 3.3 steps 2-9: count acknowledged and ECE-marked bytes; when the ACK passes the
    /// end of the observation window, fold the marked fraction into alpha and start a new window that
    /// ends at the current `snd_nxt`.
    fn on_ack(&mut self, _w: &mut CongestionState, ack: &AckEvent) {
        let AckEvent {
            acked_bytes,
            ece,
            snd_una,
            snd_nxt,
            ..
        } = *ack;
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

    /// RFC 8257 Sec. 3.3 step 11.
    fn on_ecn_echo(&mut self, w: &mut CongestionState, _flight_bytes: u64) {
        let cut = (w.cwnd_bytes as f64 * (1.0 - self.alpha / 2.0)) as u64;
        // Linux `dctcp_ssthresh` keeps at least two segments.
        w.cwnd_bytes = cut.max(2 * w.mss_bytes);
        w.ssthresh_bytes = w.cwnd_bytes;
        w.ca_acked_bytes = 0;
    }

    fn marked_fraction(&self) -> Option<f64> {
        Some(self.alpha)
    }
}
