//! Linked Increases (RFC 6356 Sec. 3), as a scale on each sub-flow's uncoupled increase.
//!
//! RFC 6356: per ACK of `acked` bytes on sub-flow i in congestion avoidance, cwnd_i grows by
//! min(alpha * acked * MSS / cwnd_total, acked * MSS / cwnd_i), with
//! alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2.
//! The uncoupled increase is acked * MSS / cwnd_i, so the coupled one is that times
//! min(alpha * cwnd_i / cwnd_total, 1): [`Lia`] credits that share of the acknowledged bytes to
//! congestion avoidance and leaves everything else (slow start, every decrease, ECN) to the
//! algorithm it wraps, per sub-flow (RFC 6356 Sec. 3). The coupling is the share: the connection,
//! which sees every sub-flow, computes it ([`scale`]) and sets it before each ACK of a sub-flow.

use super::subflow::Subflow;
use crate::tcp::cc::{AckEvent, CongestionControl, CongestionState};
use crate::time::Time;

/// RFC 6356's coupled increase over another algorithm's (NewReno, DCTCP or Cubic per `TcpConfig`):
/// the share scales the bytes the inner algorithm's own increase is handed.
#[derive(Clone, Debug)]
pub(super) struct Lia<C> {
    inner: C,
    /// This sub-flow's share of the uncoupled increase, in (0, 1]; 1 grows as plain TCP.
    share: f64,
}

impl<C> Lia<C> {
    pub(super) fn new(inner: C) -> Self {
        Lia { inner, share: 1.0 }
    }

    /// Set the share (clamped to (0, 1]; not a finite number: 1).
    pub(super) fn set_share(&mut self, share: f64) {
        self.share = if share.is_finite() {
            share.clamp(1e-6, 1.0)
        } else {
            1.0
        };
    }
}

impl<C: CongestionControl> CongestionControl for Lia<C> {
    fn on_ack(&mut self, w: &mut CongestionState, ack: &AckEvent) {
        self.inner.on_ack(w, ack);
    }

    fn ca_credit(&self, acked_bytes: u64) -> u64 {
        let credit = self.inner.ca_credit(acked_bytes);
        if self.share >= 1.0 {
            credit
        } else {
            (credit as f64 * self.share).round() as u64
        }
    }

    fn ca_increase(&mut self, w: &mut CongestionState, credited_bytes: u64, now: Time) {
        self.inner.ca_increase(w, credited_bytes, now);
    }

    fn ssthresh_on_loss(&mut self, w: &CongestionState, flight_bytes: u64) -> u64 {
        self.inner.ssthresh_on_loss(w, flight_bytes)
    }

    fn on_timeout(&mut self, now: Time, snd_nxt: u64) {
        self.inner.on_timeout(now, snd_nxt);
    }

    fn on_tx_start(&mut self, now: Time, last_send: Time) {
        self.inner.on_tx_start(now, last_send);
    }

    fn on_ecn_echo(&mut self, w: &mut CongestionState, flight_bytes: u64) {
        self.inner.on_ecn_echo(w, flight_bytes);
    }

    fn marked_fraction(&self) -> Option<f64> {
        self.inner.marked_fraction()
    }
}

/// The coupled share for sub-flow `i`. Sub-flows without an RTT sample are left out of the sums (their
/// rate is unknown); a sub-flow without one, or alone, grows as plain TCP.
pub(super) fn scale(subs: &[Subflow], i: usize) -> f64 {
    if subs[i].srtt().is_none() {
        return 1.0;
    }
    let (mut total, mut best, mut sum) = (0.0f64, 0.0f64, 0.0f64);
    for s in subs {
        let Some(rtt) = s.srtt() else { continue };
        let rtt = rtt.as_secs_f64().max(1e-9);
        let w = s.sender.cc.cwnd_bytes() as f64;
        total += w;
        best = best.max(w / (rtt * rtt));
        sum += w / rtt;
    }
    if sum <= 0.0 || total <= 0.0 {
        return 1.0;
    }
    let alpha = total * best / (sum * sum);
    let wi = subs[i].sender.cc.cwnd_bytes() as f64;
    (alpha * wi / total).min(1.0)
}

/// RFC 6356's alpha over `(cwnd_bytes, rtt_seconds)` pairs (for tests).
#[cfg(test)]
pub(super) fn alpha(paths: &[(f64, f64)]) -> f64 {
    let total: f64 = paths.iter().map(|p| p.0).sum();
    let best = paths.iter().map(|p| p.0 / (p.1 * p.1)).fold(0.0, f64::max);
    let sum: f64 = paths.iter().map(|p| p.0 / p.1).sum();
    total * best / (sum * sum)
}
