//! Congestion control: the window every algorithm shares ([`CongestionState`]: cwnd, ssthresh, RFC 5681
//! slow start, the timeout's loss window, restart after idle) and the [`CongestionControl`] trait for
//! what differs between algorithms, with RFC 5681's byte-counted congestion avoidance and
//! FlightSize / 2 loss threshold as its defaults, one file each: `new_reno.rs`,
//! `dctcp.rs`, `cubic.rs`, and MPTCP's coupled increase (`mptcp/lia.rs`), which wraps another
//! algorithm.
//!
//! The sender decides *when* to call these hooks (recovery entry, ECN-Echo once per window); the
//! algorithms only hold numbers. The sender is generic over the algorithm, so a plain TCP connection
//! pays for no coupling it does not have.

mod cubic;
mod dctcp;
mod new_reno;

use super::config::CongestionControl as Configured;
use crate::time::{Dur, Time};
pub(crate) use cubic::Cubic;
pub(crate) use dctcp::Dctcp;
pub(crate) use new_reno::NewReno;

/// What one acceptable ACK tells the algorithm (Linux hands the same to a module's `pkts_acked` and
/// `cong_avoid`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckEvent {
    pub(crate) now: Time,
    /// Bytes newly acknowledged (cumulatively).
    pub(crate) acked_bytes: u64,
    /// The ECN-Echo flag.
    pub(crate) ece: bool,
    /// The send window after the ACK.
    pub(crate) snd_una: u64,
    pub(crate) snd_nxt: u64,
    /// The RTT sample this ACK gave, if any (Linux `ack_sample.rtt_us`, -1 when there is none).
    pub(crate) rtt: Option<Dur>,
    /// The smoothed RTT after that sample.
    pub(crate) srtt: Option<Dur>,
}

/// What an algorithm decides; the window arithmetic common to all of them stays in
/// [`CongestionState`].
pub(crate) trait CongestionControl {
    /// Every acceptable ACK, before the sender reacts to it (before the window grows: Linux calls
    /// `pkts_acked` before `cong_avoid`). An algorithm may end slow start here (HyStart).
    fn on_ack(&mut self, _w: &mut CongestionState, _ack: &AckEvent) {}

    /// Bytes of `acked_bytes` that congestion avoidance counts towards the next one-SMSS increase
    /// (RFC 3465 byte counting); a coupled algorithm counts fewer.
    fn ca_credit(&self, acked_bytes: u64) -> u64 {
        acked_bytes
    }

    /// Congestion avoidance's increase for `credited_bytes` (what [`Self::ca_credit`] counted of an
    /// ACK) at `now`. RFC 5681 Sec. 3.1 with byte counting (RFC 3465): one SMSS per cwnd of credited
    /// bytes, at most one per ACK.
    fn ca_increase(&mut self, w: &mut CongestionState, credited_bytes: u64, _now: Time) {
        w.ca_acked_bytes += credited_bytes;
        if w.ca_acked_bytes >= w.cwnd_bytes {
            w.ca_acked_bytes -= w.cwnd_bytes;
            w.cwnd_bytes += w.mss_bytes;
        }
    }

    /// The slow-start threshold after a loss (or ECN-Echo, or a first timeout) with `flight_bytes`
    /// outstanding (Linux's `ssthresh` hook). RFC 5681 Sec. 3.2 eq. (4): max(FlightSize / 2, 2 SMSS).
    fn ssthresh_on_loss(&mut self, w: &CongestionState, flight_bytes: u64) -> u64 {
        (flight_bytes / 2).max(2 * w.mss_bytes)
    }

    /// A retransmission timeout, after the window was cut (Linux `set_state(TCP_CA_Loss)`):
    /// `snd_nxt` is the highest sequence sent.
    fn on_timeout(&mut self, _now: Time, _snd_nxt: u64) {}

    /// New data leaves with nothing in flight (Linux `CA_EVENT_TX_START`); the last data segment
    /// left at `last_send`.
    fn on_tx_start(&mut self, _now: Time, _last_send: Time) {}

    /// The reaction to ECN-Echo, at most once per window. RFC 3168 Sec. 6.1.2: reduce like a loss
    /// (RFC 5681's halving; the algorithm's loss threshold, as Linux's `tcp_enter_cwr` does).
    fn on_ecn_echo(&mut self, w: &mut CongestionState, flight_bytes: u64) {
        let ss = self.ssthresh_on_loss(w, flight_bytes);
        w.ssthresh_bytes = ss;
        w.ca_acked_bytes = 0;
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
    Cubic(Cubic),
}

impl Algorithm {
    pub(crate) fn new(cc: Configured) -> Self {
        match cc {
            Configured::NewReno => Algorithm::NewReno(NewReno),
            Configured::Dctcp { g } => Algorithm::Dctcp(Dctcp::new(g)),
            Configured::Cubic(c) => Algorithm::Cubic(Cubic::new(&c)),
        }
    }
}

/// Forward a trait call to the algorithm in force.
macro_rules! each {
    ($self:ident, $a:ident => $e:expr) => {
        match $self {
            Algorithm::NewReno($a) => $e,
            Algorithm::Dctcp($a) => $e,
            Algorithm::Cubic($a) => $e,
        }
    };
}

impl CongestionControl for Algorithm {
    fn on_ack(&mut self, w: &mut CongestionState, ack: &AckEvent) {
        each!(self, a => a.on_ack(w, ack))
    }

    fn ca_credit(&self, acked_bytes: u64) -> u64 {
        each!(self, a => a.ca_credit(acked_bytes))
    }

    fn ca_increase(&mut self, w: &mut CongestionState, credited_bytes: u64, now: Time) {
        each!(self, a => a.ca_increase(w, credited_bytes, now))
    }

    fn ssthresh_on_loss(&mut self, w: &CongestionState, flight_bytes: u64) -> u64 {
        each!(self, a => a.ssthresh_on_loss(w, flight_bytes))
    }

    fn on_timeout(&mut self, now: Time, snd_nxt: u64) {
        each!(self, a => a.on_timeout(now, snd_nxt))
    }

    fn on_tx_start(&mut self, now: Time, last_send: Time) {
        each!(self, a => a.on_tx_start(now, last_send))
    }

    fn on_ecn_echo(&mut self, w: &mut CongestionState, flight_bytes: u64) {
        each!(self, a => a.on_ecn_echo(w, flight_bytes))
    }

    fn marked_fraction(&self) -> Option<f64> {
        each!(self, a => a.marked_fraction())
    }
}

/// Congestion window and slow-start threshold, in bytes, and the algorithm that adjusts them.
#[derive(Clone, Debug)]
pub(crate) struct Congestion<C> {
    pub(crate) window: CongestionState,
    pub(crate) algo: C,
    /// The time of the ACK being processed ([`Self::on_ack`] precedes [`Self::on_new_ack`]).
    ack_time: Time,
}

impl<C: CongestionControl> Congestion<C> {
    pub(crate) fn new(mss_bytes: u32, initial_cwnd_segments: u32, algo: C) -> Self {
        Congestion {
            window: CongestionState::new(mss_bytes, initial_cwnd_segments),
            algo,
            ack_time: Time::ZERO,
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

    /// Undo of a reduction proved spurious (Linux `tcp_undo_cwnd_reduction`): ssthresh back to
    /// what it was.
    pub(crate) fn restore_ssthresh(&mut self, ssthresh_bytes: u64) {
        self.window.ssthresh_bytes = ssthresh_bytes;
    }

    /// A loss: ssthresh = the algorithm's loss threshold (RFC 5681 Sec. 3.2 eq. (4) unless it says
    /// otherwise). Returns the new ssthresh.
    pub(crate) fn reduce_ssthresh(&mut self, flight_bytes: u64) -> u64 {
        let ss = self.algo.ssthresh_on_loss(&self.window, flight_bytes);
        self.window.ssthresh_bytes = ss;
        self.window.ca_acked_bytes = 0;
        ss
    }

    /// RFC 5681 Sec. 3.1: after a retransmission timeout cwnd is the loss window, one segment; the
    /// first timeout of a segment sets ssthresh as a loss does, a repeated one holds it. `now` and
    /// `snd_nxt` are the timeout's, for the algorithm's own reset.
    pub(crate) fn on_timeout(&mut self, flight_bytes: u64, first_timeout: bool, now: Time, snd_nxt: u64) {
        if first_timeout {
            self.reduce_ssthresh(flight_bytes);
        }
        self.window.cwnd_bytes = self.window.mss_bytes;
        self.window.ca_acked_bytes = 0;
        self.algo.on_timeout(now, snd_nxt);
    }

    /// New data is about to leave with nothing in flight; the last data left at `last_send`.
    pub(crate) fn on_tx_start(&mut self, now: Time, last_send: Time) {
        self.algo.on_tx_start(now, last_send);
    }

    pub(crate) fn restart_after_idle(&mut self) {
        self.window.restart_after_idle();
    }

    /// The algorithm's bookkeeping for every acceptable ACK.
    pub(crate) fn on_ack(&mut self, ack: AckEvent) {
        self.ack_time = ack.now;
        self.algo.on_ack(&mut self.window, &ack);
    }

    /// RFC 5681 Sec. 3.1: slow start grows cwnd by min(N, SMSS) per ACK of N new bytes; congestion
    /// avoidance is the algorithm's increase for the bytes it credits (RFC 5681's one SMSS per cwnd of
    /// acknowledged bytes, byte counting per RFC 3465, unless it says otherwise). Called for the ACK
    /// [`Self::on_ack`] last saw.
    pub(crate) fn on_new_ack(&mut self, acked_bytes: u64) {
        if acked_bytes == 0 {
            return;
        }
        let w = &mut self.window;
        if w.cwnd_bytes < w.ssthresh_bytes {
            w.cwnd_bytes += acked_bytes.min(w.mss_bytes);
        } else {
            let credit = self.algo.ca_credit(acked_bytes);
            self.algo.ca_increase(w, credit, self.ack_time);
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

    /// RFC 5681 Sec. 3.2 eq. (4): ssthresh = max(FlightSize / 2, 2 SMSS), whatever the algorithm
    /// (MPTCP's penalisation halves this way). Returns the new ssthresh.
    pub(crate) fn reduce_ssthresh(&mut self, flight_bytes: u64) -> u64 {
        self.ssthresh_bytes = (flight_bytes / 2).max(2 * self.mss_bytes);
        self.ca_acked_bytes = 0;
        self.ssthresh_bytes
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
        c.on_timeout(8000, true, Time::ZERO, 0);
        assert_eq!(c.cwnd_bytes(), 1000);
        assert_eq!(c.ssthresh_bytes(), 4000);
    }
}
