//! Simulated and real time as integer nanoseconds.
//!
//! Engines never read a clock: every input carries `now: Time`, handed in by the driver (the simulator's
//! event loop, or a real runtime that maps its monotonic clock onto `Time`).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant, in nanoseconds since the driver's epoch (simulation start).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    pub fn saturating_sub(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

/// The earlier of two optional deadlines. Engines fold their timers with it on every poll; an
/// iterator over an array of options (`flatten().min()`) costs several times as many instructions.
#[inline]
pub fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (Some(x), None) => Some(x),
        (None, y) => y,
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Dur {
        Dur(ns)
    }
    pub const fn from_micros(us: u64) -> Dur {
        Dur(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Dur {
        Dur(ms * 1_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn mul_f64(self, k: f64) -> Dur {
        Dur((self.0 as f64 * k).round().max(0.0) as u64)
    }
    pub fn saturating_mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<Time> for Time {
    type Output = Dur;
    /// Saturates at zero: a span is never negative.
    fn sub(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Add for Dur {
    type Output = Dur;
    fn add(self, o: Dur) -> Dur {
        Dur(self.0.saturating_add(o.0))
    }
}

impl Sub for Dur {
    type Output = Dur;
    fn sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / 1_000_000_000, self.0 % 1_000_000_000)
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000 {
            write!(f, "{:.3}ms", self.0 as f64 / 1e6)
        } else {
            write!(f, "{:.3}us", self.0 as f64 / 1e3)
        }
    }
}

/// Time to serialise `bytes` onto a link of `rate_bps`, rounded up to the next nanosecond.
pub fn serialization_time(bytes: u64, rate_bps: u64) -> Dur {
    debug_assert!(rate_bps > 0);
    if bytes < (1 << 31) {
        // Fits in u64: avoids a 128-bit division on the per-packet path.
        return Dur((bytes * 8_000_000_000).div_ceil(rate_bps));
    }
    let bits = bytes as u128 * 8 * 1_000_000_000;
    Dur(bits.div_ceil(rate_bps as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_of_a_full_packet_at_10g() {
        assert_eq!(serialization_time(1500, 10_000_000_000), Dur(1200));
        assert_eq!(serialization_time(1, 3), Dur(2_666_666_667));
    }

    #[test]
    fn spans_saturate() {
        assert_eq!(Time(5) - Time(9), Dur(0));
        assert_eq!(Time(u64::MAX) + Dur(1), Time(u64::MAX));
    }
}
