//! RED (Floyd & Jacobson 1993) with the "gentle" extension: an EWMA of the queue, a drop (or, with
//! `mark`, CE-mark) probability rising linearly from 0 at `min_th` to `max_p` at `max_th` and on to 1
//! at 2 `max_th`, spread by the count since the last signal, and the idle-time correction of the
//! average.

use super::{Decision, DropCause};
use rand::Rng as _;
use tailcut_proto::rng::Rng;

pub(super) struct Red {
    min_th: u64,
    max_th: u64,
    max_p: f64,
    w_q: f64,
    mark: bool,
    avg_bytes: f64,
    /// Packets since the last mark/drop (RED's `count`), -1 when below min_th.
    count: i64,
    /// When the queue went idle, for the idle-time correction of the average.
    idle_since_ns: Option<u64>,
}

impl Red {
    pub(super) fn new(min_th: u64, max_th: u64, max_p: f64, w_q: f64, mark: bool) -> Red {
        Red {
            min_th,
            max_th,
            max_p,
            w_q,
            mark,
            avg_bytes: 0.0,
            count: -1,
            idle_since_ns: None,
        }
    }

    /// The verdict on one arrival. The random draw is made for every arrival, signalled or not, so
    /// the port's stream advances the same way whatever the queue holds.
    pub(super) fn decide(
        &mut self,
        fits: bool,
        ect: bool,
        q_bytes: u64,
        now_ns: u64,
        typical_tx_ns: u64,
        rng: &mut Rng,
    ) -> Decision {
        let u: f64 = rng.random();
        let signal = self.should_signal(q_bytes, now_ns, typical_tx_ns, u);
        if !fits {
            return Decision::Drop(DropCause::Overflow);
        }
        if !signal {
            return Decision::Admit { marked: false };
        }
        if self.mark && ect {
            Decision::Admit { marked: true }
        } else {
            Decision::Drop(DropCause::Aqm)
        }
    }

    /// `q_bytes` is the instantaneous queue; `tx_time_ns` the time to send a typical packet, used to
    /// age the average across idle periods (Floyd & Jacobson Sec. 4).
    fn should_signal(&mut self, q_bytes: u64, now_ns: u64, tx_time_ns: u64, u: f64) -> bool {
        let w_q = self.w_q;
        if let Some(idle) = self.idle_since_ns.take() {
            let m = (now_ns.saturating_sub(idle) / tx_time_ns.max(1)) as i32;
            self.avg_bytes *= (1.0 - w_q).powi(m.min(1_000_000));
        }
        self.avg_bytes = (1.0 - w_q) * self.avg_bytes + w_q * q_bytes as f64;
        let avg = self.avg_bytes;
        let (min_th, max_th) = (self.min_th as f64, self.max_th as f64);
        if avg < min_th {
            self.count = -1;
            return false;
        }
        self.count += 1;
        let max_p = self.max_p;
        let pb = if avg < max_th {
            max_p * (avg - min_th) / (max_th - min_th)
        } else if avg < 2.0 * max_th {
            max_p + (1.0 - max_p) * (avg - max_th) / max_th
        } else {
            1.0
        };
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { pb / denom };
        if u < pa {
            self.count = 0;
            true
        } else {
            false
        }
    }

    pub(super) fn went_idle(&mut self, now_ns: u64) {
        self.idle_since_ns = Some(now_ns);
    }
}
