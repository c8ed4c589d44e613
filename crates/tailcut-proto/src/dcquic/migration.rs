//! Proactive connection migration's trigger (DCQUIC Sec. 3.4.1), as a pure rule over stream records.
//!
//! Each finished stream gives a record <StreamID, EstTime, EndTime, TotalBytes> and its completion time
//! per byte (Eq. 2). With the latest stream n, the rule (Eq. 4) fires when the mean per-byte time of
//! the last `w` streams exceeds `alpha` times the mean over the `W` streams before them.

use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Parameters of proactive migration (paper defaults W = 50, w = 10, alpha = 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationConfig {
    /// Migrate at all (clients only: QUIC lets only the client change its address).
    pub enabled: bool,
    /// W: long-term observation window, streams.
    pub long_window: u32,
    /// w: short-term observation window, streams (w < W).
    pub short_window: u32,
    /// alpha: the network fluctuation threshold.
    pub alpha: f64,
    /// How often an RPC still in flight is checked against the rule (its elapsed time is a lower
    /// bound on its completion time, so an outage shows without waiting for a FIN that never comes).
    pub check_interval: crate::Dur,
    /// Not in the paper: the rule fires only when the short window's streams also took at least this
    /// long on average (their completion times, not per byte). 0 = the paper's rule. On real hosts a
    /// thread descheduled for a few milliseconds makes microsecond RPCs look alpha times slower; a
    /// floor above the host's stalls and below the outage to detect tells the two apart.
    pub min_stall: crate::Dur,
    /// Not in the paper: after the client migrates away from a path, it does not migrate back onto it
    /// within this time; it takes the next path not held down, and stays put if every other path is.
    /// 0 = the paper's "next path" whatever it is. With two NICs the next path is always the one just
    /// left, so a migration on host jitter (or on a short blip of the new path) goes straight back
    /// onto a path that may still be failing, where the reset monitor needs W + w new records before
    /// it can leave again.
    pub hold_down: crate::Dur,
    /// Not in the paper: the rule fires only once this many streams have finished on the current path
    /// (records since the connection started or last changed path; in-flight streams do not count).
    /// 0 = the paper's rule, which needs W + w samples, the in-flight streams of the periodic check
    /// included. More history makes the long window's mean a steadier baseline right after a
    /// migration, when a few streams slowed by the path change itself would otherwise make it.
    pub min_history: u32,
    /// Not in the paper: each stream's time counts without the client host's own delay during it
    /// (what its driver reports, [`crate::dcquic::DcquicEngine::note_host_delay`]: on real sockets,
    /// how late the client's thread woke past its timer deadlines, a thread descheduled or busy).
    /// A slow host then no longer looks like a slow path, while a path that delays or drops
    /// datagrams still does: the client's timers keep firing on time, the responses do not come.
    /// false = the paper's rule. The simulator's hosts have no such delay (it is 0 there).
    pub exclude_host_delay: bool,
}

impl Default for MigrationConfig {
    fn default() -> Self {
        MigrationConfig {
            enabled: true,
            long_window: 50,
            short_window: 10,
            alpha: 2.0,
            check_interval: crate::Dur::from_millis(1),
            min_stall: crate::Dur(0),
            hold_down: crate::Dur(0),
            min_history: 0,
            exclude_host_delay: false,
        }
    }
}

impl MigrationConfig {
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError;
        if self.short_window == 0 || self.short_window >= self.long_window {
            return Err(ConfigError::new(
                "migration.short_window",
                format!(
                    "must be in 1..long_window ({}), got {}",
                    self.long_window, self.short_window
                ),
            ));
        }
        if self.alpha.is_nan() || self.alpha <= 0.0 {
            return Err(ConfigError::new(
                "migration.alpha",
                format!("must be > 0, got {}", self.alpha),
            ));
        }
        if self.check_interval.0 == 0 {
            return Err(ConfigError::new("migration.check_interval", "must be > 0"));
        }
        // Far beyond any window: a typo (e.g. a duration's nanoseconds) rather than a history.
        if self.min_history > MAX_MIN_HISTORY {
            return Err(ConfigError::new(
                "migration.min_history",
                format!(
                    "must be at most {MAX_MIN_HISTORY} streams, got {}",
                    self.min_history
                ),
            ));
        }
        // An hour of hold-down is no longer a guard but a ban; a longer value is a unit mistake.
        if self.hold_down > crate::Dur::from_millis(3_600_000) {
            return Err(ConfigError::new(
                "migration.hold_down",
                format!("must be at most 1h, got {}ns", self.hold_down.0),
            ));
        }
        Ok(())
    }
}

/// Upper bound of `migration.min_history`, streams.
pub const MAX_MIN_HISTORY: u32 = 1_000_000;

/// The path to migrate to from `current` among `n` paths, with `hold_down`: the first of
/// `current + 1, current + 2, ...` (cyclically) that was not left less than `hold_down` before `now`
/// (`left_at[i]`: when the client last migrated away from path `i`; missing = never). None if every
/// other path is held down (or there is no other path). With `hold_down` 0 it is `current + 1` mod n,
/// the paper's next path.
pub fn next_path(
    current: usize,
    n: usize,
    left_at: &[Option<Time>],
    now: Time,
    hold_down: crate::Dur,
) -> Option<usize> {
    (1..n).map(|k| (current + k) % n).find(|&i| {
        left_at
            .get(i)
            .copied()
            .flatten()
            .is_none_or(|t| now.saturating_sub(t) >= hold_down)
    })
}

/// One finished stream (Sec. 3.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamRecord {
    pub id: u64,
    pub start: Time,
    pub end: Time,
    /// Offset + length of the frame with FIN (Eq. 1).
    pub total_bytes: u64,
}

impl StreamRecord {
    /// Eq. 2, in ns per byte.
    pub fn time_per_byte(&self) -> f64 {
        self.end.saturating_sub(self.start).0 as f64 / self.total_bytes.max(1) as f64
    }
}

/// The last W + w stream records of one connection on its current path.
#[derive(Clone, Debug)]
pub struct Monitor {
    long: usize,
    short: usize,
    alpha: f64,
    /// `min_stall` in ns.
    min_stall: f64,
    /// Per-byte completion times, oldest first, at most W + w.
    samples: VecDeque<f64>,
    /// Their total bytes (to size the provisional sample of a stream whose length is unknown).
    bytes: VecDeque<u64>,
    /// `min_history`: records needed on this path before the rule may fire.
    min_history: u64,
    /// Records since the last reset (not capped at W + w).
    recorded: u64,
}

impl Monitor {
    pub fn new(cfg: &MigrationConfig) -> Monitor {
        let cap = (cfg.long_window + cfg.short_window) as usize;
        Monitor {
            long: cfg.long_window as usize,
            short: cfg.short_window as usize,
            alpha: cfg.alpha,
            min_stall: cfg.min_stall.0 as f64,
            samples: VecDeque::with_capacity(cap),
            bytes: VecDeque::with_capacity(cap),
            min_history: cfg.min_history as u64,
            recorded: 0,
        }
    }

    /// Adds a finished stream; true if the rule now fires.
    pub fn record(&mut self, r: &StreamRecord) -> bool {
        if self.samples.len() == self.long + self.short {
            self.samples.pop_front();
            self.bytes.pop_front();
        }
        self.samples.push_back(r.time_per_byte());
        self.bytes.push_back(r.total_bytes);
        self.recorded += 1;
        self.fires(&[])
    }

    /// Mean total bytes of the recorded streams (0 if none).
    pub fn mean_bytes(&self) -> u64 {
        if self.bytes.is_empty() {
            return 0;
        }
        self.bytes.iter().sum::<u64>() / self.bytes.len() as u64
    }

    /// Eq. 4 over the records followed by `provisional` (per-byte time, bytes) of streams still in
    /// flight, in opening order; and, with `min_stall`, the short window's mean completion time at
    /// least that. Needs W + w samples in all, and `min_history` records.
    pub fn fires(&self, provisional: &[(f64, u64)]) -> bool {
        let n = self.samples.len() + provisional.len();
        if n < self.long + self.short || self.recorded < self.min_history {
            return false;
        }
        let at = |i: usize| -> (f64, u64) {
            if i < self.samples.len() {
                (self.samples[i], self.bytes[i])
            } else {
                provisional[i - self.samples.len()]
            }
        };
        let short_start = n - self.short;
        let long_start = short_start - self.long;
        let short: f64 = (short_start..n).map(|i| at(i).0).sum::<f64>() / self.short as f64;
        let long: f64 = (long_start..short_start).map(|i| at(i).0).sum::<f64>() / self.long as f64;
        let stalled = || {
            let t: f64 = (short_start..n).map(|i| at(i).0 * at(i).1.max(1) as f64).sum();
            t / self.short as f64 >= self.min_stall
        };
        short > self.alpha * long && stalled()
    }

    /// Mean per-byte time of the newest W samples (the baseline a provisional sample is compared to).
    pub fn recent_mean(&self) -> f64 {
        let k = self.samples.len().min(self.long);
        if k == 0 {
            return 0.0;
        }
        self.samples.iter().rev().take(k).sum::<f64>() / k as f64
    }

    /// Forgets the records: they describe the path just left.
    pub fn reset(&mut self) {
        self.samples.clear();
        self.bytes.clear();
        self.recorded = 0;
    }

    /// Records since the last reset.
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}
