//! Cubic (RFC 9438) as Linux runs it: `net/ipv4/tcp_cubic.c` of Linux 6.x is the reference, and
//! each function below names the kernel function it re-implements. Where RFC 9438 and Linux differ,
//! Linux wins (this models a Linux host):
//!
//! - beta_cubic = 717/1024 (`beta`), C = 41 * 10 / 1024 = 0.4004 (`bic_scale` = 41): both kept as
//!   Linux's integers, so the window arithmetic is Linux's integer arithmetic.
//! - Time is in jiffies (1/`hz` s, `tcp_jiffies32`): the cubic's t, its epoch, the once-per-jiffy
//!   recomputation and the 1 s without delay samples after a reduction. RTTs are in microseconds
//!   (`tcp_mstamp`), HyStart's clock too.
//! - The window grows towards W_cubic(t + delay_min), not W_cubic(t + SRTT) (`bictcp_update`), with
//!   delay_min rounded *up* to whole jiffies (`usecs_to_jiffies`): at datacenter RTTs the cubic is
//!   evaluated one jiffy ahead.
//! - The Reno-friendly estimate grows by one segment per `8 * (1024 + beta) / 3 / (1024 - beta) / 8`
//!   windows of ACKed data (integer `beta_scale` = 15: 15/8 cwnd), RFC 9438 Sec. 4.3's alpha_cubic
//!   rounded as Linux rounds it.
//! - The loss threshold comes from cwnd, not FlightSize (`cubictcp_recalc_ssthresh`).
//! - Slow start ends by Linux's HyStart (ACK train and delay increase), not HyStart++ (RFC 9406,
//!   which Linux does not implement).
//!
//! # Segments and bytes
//!
//! Linux counts cwnd in segments and `bictcp_update` sets `cnt`: cwnd grows by one segment per `cnt`
//! segments ACKed (`tcp_cong_avoid_ai`, with `snd_cwnd_cnt` counting ACKed segments). Here cwnd is
//! in bytes, so Cubic's own state (W_max, origin, the Reno estimate, cnt) is in whole segments of
//! `cwnd_bytes / mss` as Linux's is, and the ACK counters are in bytes: `ack_cnt` (the Reno
//! estimate's) counts ACKed bytes against `delta * mss`, and the shared `ca_acked_bytes` plays
//! `snd_cwnd_cnt`, counting credited bytes against `cnt * mss`. For full-sized segments that is
//! Linux's count exactly. Linux counts every delivered segment (cumulatively or by SACK, `acked` of
//! `tcp_cong_control`); tailcut counts cumulatively ACKed bytes, which sums to the same over a
//! window but arrives later when SACK fills a hole.

use super::{AckEvent, CongestionControl, CongestionState};
use crate::tcp::config::CubicConfig;
use crate::time::Time;

/// Linux `BICTCP_BETA_SCALE`: beta is in 1/1024 units.
const BETA_SCALE: u64 = 1024;
/// Linux `BICTCP_HZ`: the cubic's time is in 1/2^10 s.
const BICTCP_HZ: u32 = 10;
/// Linux `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test may fire.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// Linux `HYSTART_DELAY_MIN` / `HYSTART_DELAY_MAX`: the delay threshold's clamp, microseconds.
const HYSTART_DELAY_MIN_US: u64 = 4_000;
const HYSTART_DELAY_MAX_US: u64 = 16_000;
/// `hystart_ack_delay`'s cap on the pacing cushion (`USEC_PER_MSEC`).
const ACK_DELAY_CAP_US: u64 = 1_000;

/// Cubic's parameters and state (Linux `struct bictcp` and the module's precomputed scales).
#[derive(Clone, Debug)]
pub(crate) struct Cubic {
    // Parameters.
    /// beta * 1024 (Linux `beta`, 717).
    beta: u64,
    /// Linux `beta_scale` = 8 (1024 + beta) / 3 / (1024 - beta): the Reno estimate grows by one
    /// segment per `cwnd * beta_scale / 8` ACKed segments.
    reno_scale: u64,
    /// Linux `cube_rtt_scale` = bic_scale * 10 (C * 1024).
    cube_rtt_scale: u64,
    /// Linux `cube_factor` = 2^40 / (bic_scale * 10): K = cbrt(cube_factor * (W_max - cwnd)) in
    /// 1/1024 s.
    cube_factor: u64,
    fast_convergence: bool,
    tcp_friendliness: bool,
    hystart: bool,
    hystart_ack_train: bool,
    hystart_delay: bool,
    hystart_low_window: u64,
    hystart_ack_delta_us: u64,
    gso_max_size: u64,
    hz: u64,

    // `struct bictcp`, segments unless named otherwise.
    /// Segments to ACK per one-segment increase.
    cnt: u64,
    /// W_max: cwnd before the last reduction (less with fast convergence).
    last_max_cwnd: u64,
    /// cwnd and jiffy of the last `bictcp_update` that recomputed `cnt`.
    last_cwnd: u64,
    last_time: u64,
    /// The cubic's plateau (W_max, or cwnd when the epoch began above W_max).
    origin_point: u64,
    /// K, 1/1024 s.
    k: u64,
    /// Least RTT seen, microseconds (0: none yet).
    delay_min_us: u64,
    /// Jiffy the current congestion-avoidance epoch began (Linux's 0 is `None`).
    epoch_start: Option<u64>,
    /// Bytes ACKed towards the Reno estimate's next segment.
    ack_cnt_bytes: u64,
    /// The Reno estimate W_est.
    tcp_cwnd: u64,

    // HyStart.
    sample_cnt: u32,
    /// Slow start's end was found (HyStart is done until the next timeout).
    found: bool,
    /// Microseconds: the round's beginning and the last ACK of its train.
    round_start_us: u64,
    last_ack_us: u64,
    /// The round ends when snd_una passes this.
    end_seq: u64,
    /// Least RTT of the round, microseconds.
    curr_rtt_us: u64,
}

impl Cubic {
    /// `cubictcp_register` (the scales) and `cubictcp_init` (a fresh state, HyStart's round
    /// starting at time 0 and sequence 0, where a connection starts).
    pub(crate) fn new(c: &CubicConfig) -> Self {
        let beta = ((c.beta * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE - 1);
        // C = bic_scale * 10 / 1024, bic_scale an integer (41 for 0.4).
        let bic_scale = ((c.c * BETA_SCALE as f64 / 10.0).round() as u64).max(1);
        let cube_rtt_scale = bic_scale * 10;
        let mut s = Cubic {
            beta,
            reno_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            cube_rtt_scale,
            cube_factor: ((1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale).max(1),
            fast_convergence: c.fast_convergence,
            tcp_friendliness: c.tcp_friendliness,
            hystart: c.hystart,
            hystart_ack_train: c.hystart_ack_train,
            hystart_delay: c.hystart_delay,
            hystart_low_window: u64::from(c.hystart_low_window_segments),
            hystart_ack_delta_us: c.hystart_ack_delta.0 / 1_000,
            gso_max_size: u64::from(c.gso_max_size_bytes),
            hz: u64::from(c.hz.max(1)),
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin_point: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start: None,
            ack_cnt_bytes: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start_us: 0,
            last_ack_us: 0,
            end_seq: 0,
            curr_rtt_us: u64::MAX,
        };
        s.hystart_reset(Time::ZERO, 0);
        s
    }

    /// `tcp_jiffies32`: the kernel tick count at `t`.
    fn jiffies(&self, t: Time) -> u64 {
        (u128::from(t.0) * u128::from(self.hz) / 1_000_000_000) as u64
    }

    /// `usecs_to_jiffies`: rounds up.
    fn usecs_to_jiffies(&self, us: u64) -> u64 {
        (u128::from(us) * u128::from(self.hz)).div_ceil(1_000_000) as u64
    }

    /// `bictcp_reset`: forget the window history, HyStart's result and the least RTT (a timeout).
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.origin_point = 0;
        self.k = 0;
        self.delay_min_us = 0;
        self.epoch_start = None;
        self.ack_cnt_bytes = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// `bictcp_hystart_reset`: a new HyStart round begins at `now`; it ends when `snd_una` passes
    /// `snd_nxt` as it is now.
    fn hystart_reset(&mut self, now: Time, snd_nxt: u64) {
        self.round_start_us = now.0 / 1_000;
        self.last_ack_us = self.round_start_us;
        self.end_seq = snd_nxt;
        self.curr_rtt_us = u64::MAX;
        self.sample_cnt = 0;
    }

    /// `bictcp_update`: the number of ACKed segments per one-segment increase (`cnt`) for a window
    /// of `cwnd` segments, at jiffy `now`, `acked_bytes` having just been ACKed. RFC 9438 Sec. 4.2
    /// (the cubic, W_cubic(t) = C (t - K)^3 + W_max, K = cbrt(W_max (1 - beta) / C)), Sec. 4.3 (the
    /// Reno-friendly region) and Sec. 4.4-4.5 (the target), in Linux's integers.
    fn update(&mut self, cwnd: u64, acked_bytes: u64, now: u64, mss: u64) {
        self.ack_cnt_bytes += acked_bytes;
        // Same window and less than 1/32 s since the last computation: keep cnt (Linux returns
        // before the Reno-friendly check too).
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= self.hz / 32 {
            return;
        }
        // At most once per jiffy the cubic is evaluated; within the same jiffy only the
        // Reno-friendly bound is refreshed. A reduction clears the epoch and so forces it.
        if !(self.epoch_start.is_some() && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            let epoch = match self.epoch_start {
                Some(e) => e,
                None => {
                    // The epoch begins at the first increase after a reduction (RFC 9438 Sec. 4.2:
                    // t is the time since the start of the current congestion avoidance stage).
                    self.epoch_start = Some(now);
                    self.ack_cnt_bytes = acked_bytes;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.k = 0;
                        self.origin_point = cwnd;
                    } else {
                        // K in 1/1024 s: cbrt((W_max - cwnd) / C) scaled by 2^10 (Linux's
                        // `cubic_root` is a table lookup and one Newton step, ~0.2% off; this is the
                        // exact integer cube root).
                        self.k = cbrt_floor(self.cube_factor * (self.last_max_cwnd - cwnd));
                        self.origin_point = self.last_max_cwnd;
                    }
                    now
                }
            };
            // t in 1/1024 s, one delay_min ahead: the window aims at where the cubic will be when
            // this window's data is ACKed (RFC 9438 Sec. 4.2's W_cubic(t + RTT)).
            let t = ((now.saturating_sub(epoch) + self.usecs_to_jiffies(self.delay_min_us)) << BICTCP_HZ)
                / self.hz;
            let offs = t.abs_diff(self.k);
            // C (t - K)^3 in segments: cube_rtt_scale * offs^3 / 2^(10 + 3 * 10).
            let delta = (u128::from(self.cube_rtt_scale) * u128::from(offs).pow(3)) >> (10 + 3 * BICTCP_HZ);
            let delta = u64::try_from(delta).unwrap_or(u64::MAX);
            let target = if t < self.k {
                self.origin_point.saturating_sub(delta)
            } else {
                self.origin_point.saturating_add(delta)
            };
            // RFC 9438 Sec. 4.4 / 4.5: grow by (target - cwnd) / cwnd per ACKed segment, that is one
            // segment per cwnd / (target - cwnd); at or above the target, almost not at all.
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            // No W_max yet (the first epoch after slow start, or after a timeout): at least 5% per
            // RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // RFC 9438 Sec. 4.3: W_est grows by one segment per cwnd * beta_scale / 8 ACKed segments
        // (alpha_cubic = 3 (1 - beta) / (1 + beta) per RTT); when it is ahead of cwnd, grow at least
        // as fast as it would.
        if self.tcp_friendliness {
            let per_segment = ((cwnd * self.reno_scale) >> 3).max(1) * mss;
            if self.ack_cnt_bytes > per_segment {
                let n = (self.ack_cnt_bytes - 1) / per_segment;
                self.ack_cnt_bytes -= n * per_segment;
                self.tcp_cwnd += n;
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }
        // At most one segment per two ACKed: 1.5x per RTT.
        self.cnt = self.cnt.max(2);
    }

    /// `hystart_ack_delay`: the cushion for TSO/GRO batching Linux adds to the ACK-train threshold,
    /// min(1 ms, 4 GSO sizes at the pacing rate), microseconds. Linux's `tcp_update_pacing_rate`:
    /// rate = mss * cwnd * ratio / SRTT, ratio 200% while cwnd < ssthresh / 2 and 120% after. No
    /// SRTT yet: Linux leaves the rate undivided, so huge, and the cushion about 0.
    fn ack_delay_us(&self, w: &CongestionState, srtt_ns: Option<u64>) -> u64 {
        let srtt_ns = match srtt_ns {
            Some(s) if s > 0 && self.gso_max_size > 0 => u128::from(s),
            _ => return 0,
        };
        let ratio: u128 = if w.cwnd_bytes < w.ssthresh_bytes / 2 {
            200
        } else {
            120
        };
        let cwnd = u128::from(w.cwnd_bytes / w.mss_bytes);
        // Bytes per second: mss * cwnd * ratio / 100 / srtt.
        let rate = u128::from(w.mss_bytes) * cwnd * ratio * 10_000_000 / srtt_ns;
        if rate == 0 {
            return ACK_DELAY_CAP_US;
        }
        let us = u128::from(self.gso_max_size) * 4 * 1_000_000 / rate;
        u64::try_from(us).unwrap_or(u64::MAX).min(ACK_DELAY_CAP_US)
    }

    /// `hystart_update`: one RTT sample of `delay_us` in slow start, cwnd at least the low window.
    /// Either detection ends slow start at the current window: ssthresh = cwnd.
    fn hystart_update(&mut self, w: &mut CongestionState, delay_us: u64, ack: &AckEvent) {
        // A round is one window of data: it ends when snd_una passes the snd_nxt it began with.
        if ack.snd_una > self.end_seq {
            self.hystart_reset(ack.now, ack.snd_nxt);
        }
        if self.hystart_ack_train {
            let now_us = ack.now.0 / 1_000;
            // ACKs at most hystart_ack_delta apart continue the train; the round's train is too long
            // once it spans more than half the least RTT (plus the batching cushion): the ACK clock
            // is as long as the path can carry, so the window is full. Linux halves the threshold
            // unless the socket paces (`SK_PACING_NONE`, no fq qdisc), as modelled here.
            if now_us.saturating_sub(self.last_ack_us) <= self.hystart_ack_delta_us {
                self.last_ack_us = now_us;
                let threshold = (self.delay_min_us + self.ack_delay_us(w, ack.srtt.map(|d| d.0))) >> 1;
                if now_us.saturating_sub(self.round_start_us) > threshold {
                    self.found = true;
                    w.ssthresh_bytes = w.cwnd_bytes;
                }
            }
        }
        if self.hystart_delay {
            // The round's least RTT, after 8 samples, above delay_min by more than
            // clamp(delay_min / 8, 4 ms, 16 ms): a queue is building.
            self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh = (self.delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.curr_rtt_us > self.delay_min_us + thresh {
                    self.found = true;
                    w.ssthresh_bytes = w.cwnd_bytes;
                }
            }
        }
    }
}

impl CongestionControl for Cubic {
    /// `cubictcp_acked`: each RTT sample updates delay_min (not within a second of an epoch's
    /// start, when the queue a reduction drains would still inflate it) and feeds HyStart while in
    /// slow start at or above `hystart_low_window`.
    fn on_ack(&mut self, w: &mut CongestionState, ack: &AckEvent) {
        let Some(rtt) = ack.rtt else { return };
        if let Some(e) = self.epoch_start {
            if self.jiffies(ack.now).saturating_sub(e) < self.hz {
                return;
            }
        }
        let delay_us = (rtt.0 / 1_000).max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay_us {
            self.delay_min_us = delay_us;
        }
        if !self.found
            && self.hystart
            && w.cwnd_bytes < w.ssthresh_bytes
            && w.cwnd_bytes / w.mss_bytes >= self.hystart_low_window
        {
            self.hystart_update(w, delay_us, ack);
        }
    }

    /// `cubictcp_cong_avoid` past slow start: `bictcp_update`, then `tcp_cong_avoid_ai` in bytes
    /// (one segment per `cnt` segments' worth of credited bytes, several if the ACK covers them;
    /// credit left from a larger `cnt` first buys one segment, as Linux does).
    fn ca_increase(&mut self, w: &mut CongestionState, credited_bytes: u64, now: Time) {
        let mss = w.mss_bytes;
        let cwnd = (w.cwnd_bytes / mss).max(1);
        let now_j = self.jiffies(now);
        self.update(cwnd, credited_bytes, now_j, mss);
        let per_segment = self.cnt.max(1) * mss;
        if w.ca_acked_bytes >= per_segment {
            w.ca_acked_bytes = 0;
            w.cwnd_bytes += mss;
        }
        w.ca_acked_bytes += credited_bytes;
        if w.ca_acked_bytes >= per_segment {
            let n = w.ca_acked_bytes / per_segment;
            w.ca_acked_bytes -= n * per_segment;
            w.cwnd_bytes += n * mss;
        }
    }

    /// `cubictcp_recalc_ssthresh`: the epoch ends; W_max = cwnd, or with fast convergence (RFC 9438
    /// Sec. 4.7) cwnd (1 + beta) / 2 when cwnd never regained the previous W_max; ssthresh =
    /// max(cwnd * beta, 2) segments, from cwnd (RFC 9438 Sec. 4.6 says cwnd too), not FlightSize.
    fn ssthresh_on_loss(&mut self, w: &CongestionState, _flight_bytes: u64) -> u64 {
        let cwnd = w.cwnd_bytes / w.mss_bytes;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd * self.beta / BETA_SCALE).max(2) * w.mss_bytes
    }

    /// `cubictcp_state(TCP_CA_Loss)`: a timeout forgets everything (W_max, delay_min, HyStart's
    /// result) and starts a HyStart round that ends past the current snd_nxt.
    fn on_timeout(&mut self, now: Time, snd_nxt: u64) {
        self.reset();
        self.hystart_reset(now, snd_nxt);
    }

    /// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: after an application-limited pause the epoch moves
    /// forward by the idle time (never past now), so the cubic resumes where it left off rather than
    /// jumping ahead by the pause.
    fn on_tx_start(&mut self, now: Time, last_send: Time) {
        let now_j = self.jiffies(now);
        let delta = now_j.saturating_sub(self.jiffies(last_send));
        if let Some(e) = self.epoch_start.as_mut() {
            if delta > 0 {
                *e = (*e + delta).min(now_j);
            }
        }
    }
}

/// The integer cube root, rounded down.
fn cbrt_floor(a: u64) -> u64 {
    let mut x = (a as f64).cbrt() as u64;
    let cube = |x: u64| u128::from(x).pow(3);
    while x > 0 && cube(x) > u128::from(a) {
        x -= 1;
    }
    while cube(x + 1) <= u128::from(a) {
        x += 1;
    }
    x
}

#[cfg(test)]
mod tests;
