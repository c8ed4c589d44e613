//! Congestion control: the window every algorithm shares ([`CongestionState`]: cwnd, ssthresh, RFC 5681
//! slow start and byte-counted congestion avoidance, the loss and timeout decreases) and the
//! [`CongestionControl`] trait for what differs between algorithms, one file each: `new_reno.rs`,
//! `dctcp.rs`, and MPTCP's coupled increase (`mptcp/lia.rs`), which wraps another algorithm.
//!
//! The sender decides *when* to call these hooks (recovery entry, ECN-Echo once per window); the
//! algorithms only hold numbers. The sender is generic over the algorithm, so a plain TCP connection
//! pays for no coupling it does not have.

mod dctcp;
mod new_reno;

use super::config::CongestionControl as Configured;
pub(crate) use dctcp::Dctcp;
pub(crate) use new_reno::NewReno;

/// What an algorithm decides; the window arithmetic common to all of them stays in
/// [`CongestionState`].
pub(crate) trait CongestionControl {
    /// Every acceptable ACK, before the sender reacts to it: `acked_bytes` newly acknowledged, the
    /// ECN-Echo flag, and the send window after the ACK.
    fn on_ack(&mut self, _acked_bytes: u64, _ece: bool, _snd_una: u64, _snd_nxt: u64) {}

    /// Bytes of `acked_bytes` that congestion avoidance counts towards the next one-SMSS increase
    /// (RFC 3465 byte counting); a coupled algorithm counts fewer.
    fn ca_credit(&self, acked_bytes: u64) -> u64 {
        acked_bytes
    }

    /// The reaction to ECN-Echo, at most once per window. RFC 3168 Sec. 6.1.2: halve like a loss.
    fn on_ecn_echo(&mut self, w: &mut CongestionState, flight_bytes: u64) {
        let ss = w.reduce_ssthresh(flight_bytes);
        w.cwnd_bytes = ss;
    }

    /// The estimated fraction of marked bytes, for algorithms that keep one (DCTCP's alpha).
    fn marked_fraction(&self) -> Option<f64> {
        None
    }
}

/// The algorithm a [`TcpConfig`](super::TcpConfig) names.
#[derive(Clone, Debug)]
pub(crate) enum Algorithm {
    NewReno(NewReno),
    Dctcp(Dctcp),
}

impl Algorithm {
    pub(crate) fn new(cc: Configured) -> Self {
        match cc {
            Configured::NewReno => Algorithm::NewReno(NewReno),
            Configured::Dctcp { g } => Algorithm::Dctcp(Dctcp::new(g)),
        }
    }
}

impl CongestionControl for Algorithm {
    fn on_ack(&mut self, acked_bytes: u64, ece: bool, snd_una: u64, snd_nxt: u64) {
        match self {
            Algorithm::NewReno(a) => a.on_ack(acked_bytes, ece, snd_una, snd_nxt),
            Algorithm::Dctcp(a) => a.on_ack(acked_bytes, ece, snd_una, snd_nxt),
        }
    }

    fn ca_credit(&self, acked_bytes: u64) -> u64 {
        match self {
            Algorithm::NewReno(a) => a.ca_credit(acked_bytes),
            Algorithm::Dctcp(a) => a.ca_credit(acked_bytes),
        }
    }

    fn on_ecn_echo(&mut self, w: &mut CongestionState, flight_bytes: u64) {
        match self {
            Algorithm::NewReno(a) => a.on_ecn_echo(w, flight_bytes),
            Algorithm::Dctcp(a) => a.on_ecn_echo(w, flight_bytes),
        }
    }

    fn marked_fraction(&self) -> Option<f64> {
        match self {
            Algorithm::NewReno(a) => a.marked_fraction(),
            Algorithm::Dctcp(a) => a.marked_fraction(),
        }
    }
}

/// Congestion window and slow-start threshold, in bytes, and the algorithm that adjusts them.
#[derive(Clone, Debug)]
pub(crate) struct Congestion<C> {
    pub(crate) window: CongestionState,
    pub(crate) algo: C,
}

impl<C: CongestionControl> Congestion<C> {
    pub(crate) fn new(mss_bytes: u32, initial_cwnd_segments: u32, algo: C) -> Self {
        Congestion {
            window: CongestionState::new(mss_bytes, initial_cwnd_segments),
            algo,
        }
    }

    pub(crate) fn cwnd_bytes(&self) -> u64 {
        self.window.cwnd_bytes
    }

    pub(crate) fn ssthresh_bytes(&self) -> u64 {
        self.window.ssthresh_bytes
    }

    pub(crate) fn set_cwnd_bytes(&mut self, cwnd_bytes: u64) {
        self.window.set_cwnd_bytes(cwnd_bytes);
    }

    pub(crate) fn reduce_ssthresh(&mut self, flight_bytes: u64) -> u64 {
        self.window.reduce_ssthresh(flight_bytes)
    }

    pub(crate) fn on_timeout(&mut self, flight_bytes: u64, first_timeout: bool) {
        self.window.on_timeout(flight_bytes, first_timeout);
    }

    pub(crate) fn restart_after_idle(&mut self) {
        self.window.restart_after_idle();
    }

    /// The algorithm's bookkeeping for every acceptable ACK.
    pub(crate) fn on_ack(&mut self, acked_bytes: u64, ece: bool, snd_una: u64, snd_nxt: u64) {
        self.algo.on_ack(acked_bytes, ece, snd_una, snd_nxt);
    }

    /// RFC 5681 Sec. 3.1: slow start grows cwnd by min(N, SMSS) per ACK of N new bytes; congestion
    /// avoidance by one SMSS per cwnd of acknowledged bytes (byte counting, RFC 3465), as many of
    /// them as the algorithm credits.
    pub(crate) fn on_new_ack(&mut self, acked_bytes: u64) {
        if acked_bytes == 0 {
            return;
        }
        let w = &mut self.window;
        if w.cwnd_bytes < w.ssthresh_bytes {
            w.cwnd_bytes += acked_bytes.min(w.mss_bytes);
        } else {
            w.ca_acked_bytes += self.algo.ca_credit(acked_bytes);
            if w.ca_acked_bytes >= w.cwnd_bytes {
                w.ca_acked_bytes -= w.cwnd_bytes;
                w.cwnd_bytes += w.mss_bytes;
            }
        }
    }

    /// ECN-Echo, once per window (the sender decides when).
    pub(crate) fn on_ecn_echo(&mut self, flight_bytes: u64) {
        self.algo.on_ecn_echo(&mut self.window, flight_bytes);
    }
}

/// The window state every algorithm shares, in bytes.
#[derive(Clone, Debug)]
pub(crate) struct CongestionState {
    pub(crate) mss_bytes: u64,
    initial_cwnd_bytes: u64,
    pub(crate) cwnd_bytes: u64,
    pub(crate) ssthresh_bytes: u64,
    /// RFC 5681 Sec. 3.1 byte counting in congestion avoidance (RFC 3465).
    pub(crate) ca_acked_bytes: u64,
}

impl CongestionState {
    fn new(mss_bytes: u32, initial_cwnd_segments: u32) -> Self {
        let mss_bytes = u64::from(mss_bytes.max(1));
        let initial_cwnd_bytes = mss_bytes * u64::from(initial_cwnd_segments.max(1));
        CongestionState {
            mss_bytes,
            initial_cwnd_bytes,
            cwnd_bytes: initial_cwnd_bytes,
            // RFC 5681 Sec. 3.1: the initial ssthresh SHOULD be arbitrarily high.
            ssthresh_bytes: u64::MAX,
            ca_acked_bytes: 0,
        }
    }

    pub(crate) fn set_cwnd_bytes(&mut self, cwnd_bytes: u64) {
        self.cwnd_bytes = cwnd_bytes.max(self.mss_bytes);
    }

    /// RFC 5681 Sec. 3.2 eq. (4): ssthresh = max(FlightSize / 2, 2 SMSS). Returns the new ssthresh.
    pub(crate) fn reduce_ssthresh(&mut self, flight_bytes: u64) -> u64 {
        self.ssthresh_bytes = (flight_bytes / 2).max(2 * self.mss_bytes);
        self.ca_acked_bytes = 0;
        self.ssthresh_bytes
    }

    /// RFC 5681 Sec. 3.1: after a retransmission timeout cwnd is the loss window, one segment.
    /// RFC 5681 Sec. 3.1 also holds ssthresh constant when the same segment times out again.
    fn on_timeout(&mut self, flight_bytes: u64, first_timeout: bool) {
        if first_timeout {
            self.reduce_ssthresh(flight_bytes);
        }
        self.cwnd_bytes = self.mss_bytes;
        self.ca_acked_bytes = 0;
    }

    /// RFC 5681 Sec. 4.1: after an idle period longer than the RTO, restart from
    /// RW = min(IW, cwnd).
    fn restart_after_idle(&mut self) {
        self.cwnd_bytes = self.cwnd_bytes.min(self.initial_cwnd_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_avoidance() {
        let mut c = Congestion::new(1000, 2, NewReno);
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
