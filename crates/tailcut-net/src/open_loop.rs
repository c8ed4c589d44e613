//! Open-loop (Poisson) load for `tailcut-net bench --poisson RATE`: calls start at the arrival times
//! of a Poisson process whatever the earlier calls are doing, so a slow call makes the later ones
//! queue, as a server's many clients see it. A closed loop hides that: it waits for each call before
//! the next, so its latency never includes the queue its own slowness built.
//!
//! A pool of worker threads takes the arrivals in order; each sleeps until its arrival's time (an
//! absolute `clock_nanosleep` with a 1 ns timer slack, no spinning: the machine runs both ends) and
//! makes the call. A call's latency counts from its arrival time, so a call that waited for a free
//! worker, or for the host to run its worker, includes the wait. With too few workers for the load,
//! the arrivals fall behind; [`OpenLoop::behind`] says how many started more than 1 ms late.

use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tailcut_proto::rng::Rng as SeededRng;
use tailcut_sys::clock::{monotonic_ns, set_timer_slack_ns, sleep_until_ns};

/// A call is "behind" its arrival when it starts more than this late (ns).
pub const BEHIND_NS: u64 = 1_000_000;

/// What an open-loop run measured.
#[derive(Debug, Default)]
pub struct OpenLoop {
    /// Per call after the warm-up: from its arrival time to its response, ns.
    pub latency_ns: Vec<u64>,
    /// Calls that started more than [`BEHIND_NS`] after their arrival time.
    pub behind: usize,
    /// From the first measured arrival to the last response, ns.
    pub span_ns: u64,
}

/// `warmup + count` arrivals at `rate` per second (exponential gaps from `seed`), made by one thread
/// per entry of `workers` with `call(worker, i)`; the first `warmup` are not measured. The first
/// error ends the run.
pub fn run<W: Send>(
    rate: f64,
    warmup: usize,
    count: usize,
    seed: u64,
    workers: Vec<W>,
    call: &(dyn Fn(&mut W, usize) -> Result<(), String> + Sync),
) -> Result<OpenLoop, String> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!("--poisson: the rate must be > 0 calls/s, got {rate}"));
    }
    if workers.is_empty() {
        return Err("--workers: at least one".into());
    }
    let n = warmup + count;
    let mut rng = SeededRng::seed_from_u64(seed);
    let mut at = Vec::with_capacity(n);
    // Start a few ms out, so the workers are parked before the first arrival.
    let mut t = monotonic_ns() + 5_000_000;
    for _ in 0..n {
        // Exponential gap: -ln(U) / rate, U in (0, 1].
        let u: f64 = 1.0 - rng.random::<f64>();
        t += (-u.ln() / rate * 1e9) as u64;
        at.push(t);
    }
    let next = AtomicUsize::new(0);
    let out = Mutex::new((vec![0u64; n], 0usize, 0u64));
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for mut w in workers {
            let (at, next, out, failed) = (&at, &next, &out, &failed);
            s.spawn(move || {
                let _ = set_timer_slack_ns(1);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || failed.lock().is_ok_and(|f| f.is_some()) {
                        return;
                    }
                    sleep_until_ns(at[i]);
                    let started = monotonic_ns();
                    if let Err(e) = call(&mut w, i) {
                        if let Ok(mut f) = failed.lock() {
                            f.get_or_insert(format!("call {i}: {e}"));
                        }
                        return;
                    }
                    let done = monotonic_ns();
                    if let Ok(mut o) = out.lock() {
                        o.0[i] = done - at[i];
                        if i >= warmup {
                            o.1 += usize::from(started > at[i] + BEHIND_NS);
                            o.2 = o.2.max(done);
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let (lat, behind, last) = out.into_inner().unwrap_or_else(|e| e.into_inner());
    let first = at.get(warmup).copied().unwrap_or(0);
    Ok(OpenLoop {
        latency_ns: lat[warmup..].to_vec(),
        behind,
        span_ns: last.saturating_sub(first),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every arrival is called once, the measured ones span what their rate gives, and a latency
    /// counts from the arrival.
    #[test]
    fn every_arrival_is_called_once_at_the_rate() {
        let calls = Mutex::new(vec![0u32; 2_100]);
        let r = run(20_000.0, 100, 2_000, 7, vec![(); 4], &|_, i| {
            calls.lock().unwrap()[i] += 1;
            Ok(())
        })
        .unwrap();
        assert!(calls.into_inner().unwrap().iter().all(|&c| c == 1));
        assert_eq!(r.latency_ns.len(), 2_000);
        // 2,000 arrivals at 20,000/s span ~100 ms (these draws: over 90), and no response comes
        // before its arrival, so neither the last.
        assert!(r.span_ns >= 90_000_000, "{} ns", r.span_ns);
        assert!(r.latency_ns.iter().all(|&l| l > 0));
    }

    #[test]
    fn an_error_ends_the_run_and_names_the_call() {
        let e = run(1_000.0, 0, 10, 1, vec![(); 2], &|_, i| {
            if i == 3 {
                Err("boom".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(e, "call 3: boom");
        assert!(run(0.0, 0, 1, 1, vec![()], &|_, _| Ok(())).is_err());
        assert!(run(1.0, 0, 1, 1, Vec::<()>::new(), &|_, _| Ok(())).is_err());
    }
}
