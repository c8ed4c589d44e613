//! Cubic's arithmetic against RFC 9438's closed forms and Linux `tcp_cubic.c`'s behaviour, driven
//! ACK by ACK through the shared window ([`Congestion`]) as the sender drives it.

use super::*;
use crate::tcp::cc::Congestion;
use crate::time::Dur;

const MSS: u64 = 1000;
/// Linux's C: bic_scale 41 * 10 / 1024.
const C_LINUX: f64 = 410.0 / 1024.0;
/// Linux's beta: 717 / 1024.
const BETA_LINUX: f64 = 717.0 / 1024.0;

fn cubic(cfg: CubicConfig) -> Congestion<Cubic> {
    Congestion::new(MSS as u32, 10, Cubic::new(&cfg))
}

/// A sender's view for scripted ACKs: the window, the clock and the sequence space.
struct Drive {
    c: Congestion<Cubic>,
    now: Time,
    una: u64,
}

impl Drive {
    fn new(cfg: CubicConfig) -> Self {
        Drive {
            c: cubic(cfg),
            now: Time(1_000_000_000),
            una: 0,
        }
    }

    fn segs(&self) -> u64 {
        self.c.cwnd_bytes() / MSS
    }

    /// One ACK of one segment at `self.now` carrying an RTT sample of `rtt`; the window's data are
    /// outstanding (snd_nxt = snd_una + cwnd).
    fn ack(&mut self, rtt: Dur) {
        self.una += MSS;
        let nxt = self.una + self.c.cwnd_bytes();
        self.c.on_ack(AckEvent {
            now: self.now,
            acked_bytes: MSS,
            ece: false,
            snd_una: self.una,
            snd_nxt: nxt,
            rtt: Some(rtt),
            srtt: Some(rtt),
        });
        self.c.on_new_ack(MSS);
    }

    /// One round trip of `rtt`: a window of per-segment ACKs spread evenly over it.
    fn round(&mut self, rtt: Dur) {
        let n = self.segs().max(1);
        let start = self.now;
        for i in 0..n {
            self.now = start + Dur(rtt.0 * i / n);
            self.ack(rtt);
        }
        self.now = start + rtt;
    }

    /// A loss with cwnd at `w` segments: the window as the sender leaves it after recovery
    /// (cwnd = ssthresh). Returns ssthresh in segments.
    fn loss_at(&mut self, w: u64) -> u64 {
        self.c.set_cwnd_bytes(w * MSS);
        let ss = self.c.reduce_ssthresh(w * MSS / 2);
        self.c.set_cwnd_bytes(ss);
        ss / MSS
    }
}

/// RFC 9438 Sec. 4.2 eq. 1 and 2: W_cubic(t) = C (t - K)^3 + W_max, K = cbrt(W_max (1 - beta) / C),
/// with Linux's C and beta.
fn w_cubic(t: f64, w_max: f64) -> f64 {
    let k = (w_max * (1.0 - BETA_LINUX) / C_LINUX).cbrt();
    C_LINUX * (t - k).powi(3) + w_max
}

/// RFC 9438 Sec. 4.2 / Linux `bictcp_update`: after a loss at W_max = 1000 segments on a 100 ms path
/// (where the cubic, not the Reno estimate, sets the pace), cwnd follows the closed form
/// W_cubic(t) within a segment, at points in the concave part, at the plateau t = K and in the
/// convex part. K itself is Linux's: cbrt(cube_factor (W_max - cwnd)) in 1/1024 s.
#[test]
fn window_follows_the_closed_form_after_a_loss() {
    let rtt = Dur::from_millis(100);
    let mut d = Drive::new(CubicConfig::default());
    assert_eq!(d.loss_at(1000), 700);
    let k = (1000.0 * (1.0 - BETA_LINUX) / C_LINUX).cbrt();
    // The epoch begins at the first ACK in congestion avoidance.
    let epoch = d.now;
    d.round(rtt);
    let k_linux = d.c.algo.k as f64 / 1024.0;
    // Linux's K is for W_max - cwnd = 300 segments, the closed form's for 1000 (1 - beta) = 299.8.
    let k_300 = (300.0 / C_LINUX).cbrt();
    assert!((k_linux - k_300).abs() < 1.0 / 1024.0, "K {k_linux} vs {k_300}");
    assert!((k - k_300).abs() < 0.005);
    let mut worst: f64 = 0.0;
    for t in [1.0, 3.0, 6.0, k, 10.5, 12.0] {
        while (d.now - epoch).as_secs_f64() < t {
            d.round(rtt);
        }
        let el = (d.now - epoch).as_secs_f64();
        let want = w_cubic(el, 1000.0);
        let got = d.c.cwnd_bytes() as f64 / MSS as f64;
        worst = worst.max((got - want).abs());
        assert!(
            (got - want).abs() <= 1.0,
            "t = {el:.2} s: cwnd {got} segments, W_cubic {want:.2}"
        );
    }
    assert!(worst <= 1.0);
}

/// RFC 9438 Sec. 4.6 / Linux `cubictcp_recalc_ssthresh`: ssthresh = max(cwnd * 717 / 1024, 2)
/// segments, from cwnd (not FlightSize, which RFC 5681 would halve); ECN-Echo reduces the same way
/// (`tcp_enter_cwr` calls the same hook).
#[test]
fn ssthresh_after_a_loss_is_beta_times_cwnd() {
    let mut c = cubic(CubicConfig::default());
    c.set_cwnd_bytes(100 * MSS);
    // FlightSize 40 segments: RFC 5681 would give 20.
    assert_eq!(c.reduce_ssthresh(40 * MSS), 70 * MSS);
    assert_eq!(c.ssthresh_bytes(), 70 * MSS);
    c.set_cwnd_bytes(2 * MSS);
    assert_eq!(c.reduce_ssthresh(2 * MSS), 2 * MSS);
    let mut c = cubic(CubicConfig::default());
    c.set_cwnd_bytes(1000 * MSS);
    c.on_ecn_echo(10 * MSS);
    assert_eq!((c.cwnd_bytes(), c.ssthresh_bytes()), (700 * MSS, 700 * MSS));
    // A beta of 0.5 halves cwnd.
    let mut c = cubic(CubicConfig {
        beta: 0.5,
        ..CubicConfig::default()
    });
    c.set_cwnd_bytes(100 * MSS);
    assert_eq!(c.reduce_ssthresh(0), 50 * MSS);
}

/// RFC 9438 Sec. 4.7 / Linux `cubictcp_recalc_ssthresh`: a loss before W_max was regained sets
/// W_max = cwnd (1 + beta) / 2 (90 (1024 + 717) / 2048 = 76 segments), and the next epoch's cubic
/// plateaus there (origin point 76, K for 76 - 63 segments); without fast convergence W_max = cwnd.
#[test]
fn fast_convergence_lowers_w_max_when_a_loss_comes_early() {
    let rtt = Dur::from_millis(10);
    for (fc, w_max) in [(true, 76), (false, 90)] {
        let mut d = Drive::new(CubicConfig {
            fast_convergence: fc,
            ..CubicConfig::default()
        });
        d.loss_at(100);
        assert_eq!(d.c.algo.last_max_cwnd, 100);
        d.round(rtt);
        // The second loss at 90 < 100.
        assert_eq!(d.loss_at(90), 63);
        assert_eq!(d.c.algo.last_max_cwnd, w_max, "fast_convergence = {fc}");
        d.round(rtt);
        assert_eq!(d.c.algo.origin_point, w_max);
        assert_eq!(d.c.algo.k, cbrt_floor(d.c.algo.cube_factor * (w_max - 63)));
        // A loss above W_max takes cwnd as W_max either way.
        d.loss_at(200);
        assert_eq!(d.c.algo.last_max_cwnd, 200);
    }
}

/// RFC 9438 Sec. 4.3 / Linux `bictcp_update` (`tcp_friendliness`): on a 1 ms path after a loss at
/// 20 segments the cubic barely moves in 300 round trips (K = 2.5 s: W_cubic(0.3 s) = 15.9), while
/// the Reno estimate W_est grows by one segment per 15/8 windows of ACKs (Linux's integer
/// beta_scale = 15), 8/15 of a segment per RTT, about 160 segments: with friendliness cwnd follows
/// W_est, without it cwnd stays on the cubic. Linux's way of getting there is reproduced too: with
/// the window unchanged `bictcp_update` returns before the friendliness check for HZ/32 jiffies
/// (31 ms at HZ = 1000), so for the first 31 ms cwnd stays at 14.
#[test]
fn reno_friendly_region_dominates_at_small_rtt_and_window() {
    let rtt = Dur::from_millis(1);
    let run = |friendly: bool, rounds: u32| {
        let mut d = Drive::new(CubicConfig {
            tcp_friendliness: friendly,
            ..CubicConfig::default()
        });
        assert_eq!(d.loss_at(20), 14);
        for _ in 0..rounds {
            d.round(rtt);
        }
        (d.segs(), d.c.algo.tcp_cwnd)
    };
    assert_eq!(Cubic::new(&CubicConfig::default()).reno_scale, 15);
    // The first cubic target, W_cubic(1 jiffy) = 15 (Linux floors C (t - K)^3 = 5.99 to 5), buys one
    // segment; then 30 ms frozen by the HZ/32 rule.
    assert_eq!(run(true, 30), (15, 14));
    let (friendly, w_est) = run(true, 300);
    let (cubic_only, _) = run(false, 300);
    let reno = 14.0 + 300.0 * 8.0 / 15.0;
    assert!(
        (w_est as f64) > 0.85 * reno && (w_est as f64) <= 1.02 * reno,
        "W_est {w_est}, Reno {reno:.0}"
    );
    assert!(
        friendly + 3 >= w_est && friendly <= w_est + 3,
        "cwnd {friendly}, W_est {w_est}"
    );
    // On the cubic: within a segment and a half, the half being Linux's granularity at an RTT of one
    // jiffy (the target is W_cubic one jiffy ahead, floored, and `cnt` lasts the whole jiffy).
    let cubic_want = w_cubic(0.3, 20.0);
    assert!(
        (cubic_only as f64 - cubic_want).abs() <= 1.5,
        "cubic alone {cubic_only}, W_cubic {cubic_want:.1}"
    );
}

/// Feed HyStart (Linux `cubictcp_acked` / `hystart_update`): one round of `n` ACKs at `rtt`,
/// `spacing` apart, cwnd held at `cwnd` segments (as when the sender is not allowed to grow, so the
/// window condition is what is tested). Returns whether slow start ended, and after which ACK.
fn hystart_round(d: &mut Drive, cwnd: u64, n: u64, rtt: Dur, spacing: Dur) -> Option<u64> {
    // Close the previous round: snd_una passes its end.
    d.una = d.una.max(d.c.algo.end_seq);
    for i in 1..=n {
        d.c.set_cwnd_bytes(cwnd * MSS);
        d.una += MSS;
        let nxt = d.una + cwnd * MSS;
        d.c.on_ack(AckEvent {
            now: d.now,
            acked_bytes: MSS,
            ece: false,
            snd_una: d.una,
            snd_nxt: nxt,
            rtt: Some(rtt),
            srtt: Some(rtt),
        });
        d.now += spacing;
        if d.c.algo.found {
            assert_eq!(d.c.ssthresh_bytes(), cwnd * MSS, "ssthresh = cwnd");
            return Some(i);
        }
    }
    assert_eq!(d.c.ssthresh_bytes(), u64::MAX);
    None
}

fn delay_only() -> CubicConfig {
    CubicConfig {
        hystart_ack_train: false,
        ..CubicConfig::default()
    }
}

/// Linux `hystart_update` (HYSTART_DELAY): after HYSTART_MIN_SAMPLES = 8 samples of a round, the
/// 9th checks the round's least RTT against delay_min + clamp(delay_min / 8, 4 ms, 16 ms), strictly;
/// slow start ends with ssthresh = cwnd. A 1 ms path needs more than 4 ms of queueing (the clamp's
/// floor), a 40 ms path more than 5 ms, a 200 ms path more than 16 ms (its ceiling).
#[test]
fn hystart_delay_exits_after_eight_samples_above_the_clamped_threshold() {
    let sp = Dur::from_micros(10);
    for (base_us, thresh_us) in [(1_000, 4_000), (40_000, 5_000), (200_000, 16_000)] {
        let base = Dur::from_micros(base_us);
        // Just at the threshold: no exit.
        let mut d = Drive::new(delay_only());
        assert_eq!(hystart_round(&mut d, 16, 20, base, sp), None);
        assert_eq!(d.c.algo.delay_min_us, base_us);
        assert_eq!(
            hystart_round(&mut d, 16, 20, Dur::from_micros(base_us + thresh_us), sp),
            None
        );
        // One microsecond above it: the 9th sample of the round ends slow start.
        let mut d = Drive::new(delay_only());
        assert_eq!(hystart_round(&mut d, 16, 20, base, sp), None);
        assert_eq!(
            hystart_round(&mut d, 16, 20, Dur::from_micros(base_us + thresh_us + 1), sp),
            Some(9),
            "base {base_us} us"
        );
        // Found stays found: HyStart is done until a timeout resets it (`cubictcp_state`).
        assert!(d.c.algo.found);
        d.c.on_timeout(16 * MSS, true, d.now, d.una + 16 * MSS);
        assert!(!d.c.algo.found && d.c.algo.delay_min_us == 0);
    }
}

/// Linux `cubictcp_acked`: HyStart runs only from `hystart_low_window` = 16 segments on. At 15 the
/// same RTT increase does not end slow start, at 16 it does; a configured low window of 8 lets it
/// fire at 15.
#[test]
fn hystart_does_not_exit_below_the_low_window() {
    let sp = Dur::from_micros(10);
    let base = Dur::from_millis(1);
    let high = Dur::from_millis(10);
    let mut d = Drive::new(delay_only());
    assert_eq!(hystart_round(&mut d, 15, 20, base, sp), None);
    assert_eq!(hystart_round(&mut d, 15, 40, high, sp), None);
    assert_eq!(hystart_round(&mut d, 16, 20, high, sp), Some(9));
    let mut d = Drive::new(CubicConfig {
        hystart_low_window_segments: 8,
        ..delay_only()
    });
    assert_eq!(hystart_round(&mut d, 15, 20, base, sp), None);
    assert_eq!(hystart_round(&mut d, 15, 20, high, sp), Some(9));
    // HyStart off: never.
    let mut d = Drive::new(CubicConfig {
        hystart: false,
        ..CubicConfig::default()
    });
    assert_eq!(hystart_round(&mut d, 32, 20, base, sp), None);
    assert_eq!(hystart_round(&mut d, 32, 40, high, sp), None);
}

/// Linux `hystart_update` (HYSTART_ACK_TRAIN): ACKs at most `hystart_ack_delta_us` = 2 ms apart form
/// a train; once the round's train spans more than (delay_min + `hystart_ack_delay`) / 2 slow start
/// ends. Without the cushion (no GSO) on a 1 ms path: past 500 us, so the 7th ACK 100 us apart
/// (600 us after the round began). ACKs 2.1 ms apart never form a train.
#[test]
fn hystart_ack_train_detection() {
    let rtt = Dur::from_millis(1);
    let train_only = |gso| CubicConfig {
        hystart_delay: false,
        gso_max_size_bytes: gso,
        ..CubicConfig::default()
    };
    let mut d = Drive::new(train_only(0));
    assert_eq!(hystart_round(&mut d, 16, 6, rtt, Dur::from_micros(100)), None);
    // The next round: 500 us after its start is not yet past the threshold, 600 us is.
    assert_eq!(hystart_round(&mut d, 16, 20, rtt, Dur::from_micros(100)), Some(7));
    // Sparse ACKs: no train.
    let mut d = Drive::new(train_only(0));
    assert_eq!(hystart_round(&mut d, 16, 40, rtt, Dur::from_micros(2_100)), None);
    // Just within the delta: a train.
    let mut d = Drive::new(train_only(0));
    assert!(hystart_round(&mut d, 16, 40, rtt, Dur::from_micros(2_000)).is_some());
}

/// Linux `hystart_ack_delay`: the ACK-train threshold gets a TSO/GRO cushion of
/// min(1 ms, 4 * gso_max_size / pacing rate), the rate being 2 * cwnd * mss / SRTT in early slow
/// start (`tcp_update_pacing_rate`). On the 1 ms path with 16 segments of 1000 bytes the rate is
/// 32 MB/s, 4 * 64 KB take 8.2 ms: capped at 1 ms, the threshold is (1 ms + 1 ms) / 2 = 1 ms, and
/// the 12th ACK 100 us apart (1.1 ms) ends slow start. On a 20 us datacenter path with 64 segments
/// the cushion is 4 * 65536 / (2 * 64 * 1000 / 20 us) = 40 us.
#[test]
fn hystart_ack_train_threshold_has_linux_cushion() {
    let cfg = CubicConfig {
        hystart_delay: false,
        ..CubicConfig::default()
    };
    let mut d = Drive::new(cfg);
    assert_eq!(
        hystart_round(&mut d, 16, 6, Dur::from_millis(1), Dur::from_micros(100)),
        None
    );
    assert_eq!(
        hystart_round(&mut d, 16, 20, Dur::from_millis(1), Dur::from_micros(100)),
        Some(12)
    );
    let mut d = Drive::new(cfg);
    d.c.set_cwnd_bytes(64 * MSS);
    assert_eq!(d.c.algo.ack_delay_us(&d.c.window, Some(20_000)), 40);
    assert_eq!(d.c.algo.ack_delay_us(&d.c.window, None), 0);
}

/// Linux `cubictcp_cwnd_event(CA_EVENT_TX_START)`: an idle period moves the epoch forward by the idle
/// time (in jiffies, never past now), so cwnd resumes on the curve where it stopped.
#[test]
fn idle_shifts_the_epoch() {
    let mut d = Drive::new(CubicConfig::default());
    d.loss_at(100);
    d.round(Dur::from_millis(10));
    let e = d.c.algo.epoch_start.unwrap();
    let last = d.now;
    d.now += Dur::from_millis(500);
    d.c.on_tx_start(d.now, last);
    assert_eq!(d.c.algo.epoch_start, Some(e + 500));
    // A pause longer than the epoch's age: the epoch is at most now.
    let mut d = Drive::new(CubicConfig::default());
    d.loss_at(100);
    d.round(Dur::from_millis(10));
    d.c.algo.epoch_start = Some(d.c.algo.jiffies(d.now) - 1);
    let last = Time(d.now.0 - 5_000_000);
    d.c.on_tx_start(d.now, last);
    assert_eq!(d.c.algo.epoch_start, Some(d.c.algo.jiffies(d.now)));
}

/// Determinism and sanity over many paths: the same inputs give the same window, cwnd never drops
/// in congestion avoidance, never grows more than 1.5x per round (cnt >= 2), and a later loss never
/// leaves ssthresh below 2 segments.
#[test]
fn deterministic_and_bounded_over_many_paths() {
    for (rtt_us, w) in [(20, 8), (100, 30), (1_000, 200), (30_000, 500), (200_000, 64)] {
        let run = || {
            let mut d = Drive::new(CubicConfig::default());
            d.loss_at(w);
            let mut trace = Vec::new();
            for _ in 0..40 {
                let before = d.segs();
                d.round(Dur::from_micros(rtt_us));
                let after = d.segs();
                assert!(
                    after >= before && after * 2 <= before * 3 + 2,
                    "{before} -> {after}"
                );
                trace.push(after);
            }
            d.loss_at(1);
            assert_eq!(d.c.ssthresh_bytes(), 2 * MSS);
            trace
        };
        assert_eq!(run(), run());
    }
}

#[test]
fn integer_cube_root() {
    for a in [0u64, 1, 7, 8, 9, 26, 27, 1 << 40, u64::MAX / 3, 999_999_999_999] {
        let x = cbrt_floor(a);
        assert!(u128::from(x).pow(3) <= u128::from(a) && u128::from(x + 1).pow(3) > u128::from(a));
    }
}
