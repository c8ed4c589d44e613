//! Linked Increases (RFC 6356 Sec. 3), as a scale on each sub-flow's uncoupled increase.
//!
//! RFC 6356: per ACK of `acked` bytes on sub-flow i in congestion avoidance, cwnd_i grows by
//! min(alpha * acked * MSS / cwnd_total, acked * MSS / cwnd_i), with
//! alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2.
//! The uncoupled increase is acked * MSS / cwnd_i, so the coupled one is that times
//! min(alpha * cwnd_i / cwnd_total, 1), which is what `CongestionState::set_ca_scale` takes. Slow
//! start and every decrease stay per sub-flow (RFC 6356 Sec. 3).

use super::subflow::Subflow;

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
