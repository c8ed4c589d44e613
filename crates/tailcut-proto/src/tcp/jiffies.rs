//! Linux's timer granularity (`timer_hz`): when a TCP timer armed for a duration really fires.
//!
//! Linux keeps its TCP timers in jiffies (1/HZ s; HZ = 250 on the testbed's kernels, 4 ms) and runs
//! them on the timer wheel (`kernel/time/timer.c`). A timer armed at `now` for `d` is set to
//! `expires = jiffies + usecs_to_jiffies(d)` (rounded up to whole jiffies), and the wheel files it in
//! the first level whose range holds `expires - jiffies`: level L covers up to 63 x 8^L jiffies in
//! buckets of 8^L jiffies. `calc_index` rounds the expiry up to the next bucket boundary strictly
//! after it ("a timer does not fire early", also when armed at the edge of a tick), and the bucket
//! fires at its tick. So at HZ = 250 a 5 ms minimum RTO (2 jiffies) fires 8-12 ms after it was
//! armed, and the 1 s SYN timeout (250 jiffies, level 1) 1.0-1.032 s after.
//!
//! With `timer_hz = 0` (the default) timers are exact to the nanosecond.

use crate::{Dur, Time};

/// Buckets per wheel level (`LVL_SIZE`, 64) less one: the range a level covers before the next.
const LEVEL_SPAN: u64 = 63;
/// Each level's buckets are 8 times the previous level's (`LVL_CLK_SHIFT` = 3).
const LEVEL_SHIFT: u32 = 3;

/// The clock the sender's timers run on: exact, or Linux's jiffies on the timer wheel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimerClock {
    /// Nanoseconds per jiffy; 0 = exact timers.
    jiffy_ns: u64,
}

impl TimerClock {
    /// A clock at `hz` ticks per second (0: exact).
    pub(crate) fn new(hz: u32) -> Self {
        TimerClock {
            jiffy_ns: if hz == 0 { 0 } else { 1_000_000_000 / hz as u64 },
        }
    }

    /// `d` in whole jiffies, rounded up (`usecs_to_jiffies`); a floor such as `tcp_rto_min_us` is
    /// kept in jiffies, so 5 ms is 8 ms at HZ = 250.
    pub(crate) fn round_up(self, d: Dur) -> Dur {
        if self.jiffy_ns == 0 {
            return d;
        }
        Dur(d.0.div_ceil(self.jiffy_ns) * self.jiffy_ns)
    }

    /// When a timer armed at `now` for `d` fires.
    pub(crate) fn at(self, now: Time, d: Dur) -> Time {
        let j = self.jiffy_ns;
        if j == 0 {
            return now + d;
        }
        let clk = now.0 / j;
        let n = d.0.div_ceil(j);
        let expires = clk + n;
        // The level whose range holds the delta (`calc_wheel_index`), then the next bucket boundary
        // after the expiry at that level's granularity (`calc_index`).
        let mut level = 0;
        while level < 8 && n >= LEVEL_SPAN << (LEVEL_SHIFT * level) {
            level += 1;
        }
        let shift = LEVEL_SHIFT * level;
        let tick = ((expires >> shift) + 1) << shift;
        Time(tick.saturating_mul(j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ250: u64 = 4_000_000;

    #[test]
    fn exact_without_hz() {
        let c = TimerClock::new(0);
        assert_eq!(c.at(Time(1_234), Dur(5_000)), Time(6_234));
        assert_eq!(c.round_up(Dur(5_000_000)), Dur(5_000_000));
    }

    /// `usecs_to_jiffies(5000)` at HZ = 250 is 2 jiffies: `tcp_rto_min_us = 5000` acts as 8 ms.
    #[test]
    fn a_floor_rounds_up_to_whole_jiffies() {
        let c = TimerClock::new(250);
        assert_eq!(c.round_up(Dur::from_millis(5)), Dur::from_millis(8));
        assert_eq!(c.round_up(Dur::from_millis(8)), Dur::from_millis(8));
        assert_eq!(c.round_up(Dur(1)), Dur::from_millis(4));
    }

    /// Level 0: a 2-jiffy timer armed mid-tick fires at the third tick boundary, never early: 8 to
    /// 12 ms after it was armed.
    #[test]
    fn a_short_timer_fires_at_a_tick_one_jiffy_late_at_most() {
        let c = TimerClock::new(250);
        // Armed exactly at a tick: jiffies + 2, rounded to the bucket after it: tick 3.
        assert_eq!(c.at(Time(10 * HZ250), Dur::from_millis(8)), Time(13 * HZ250));
        // Armed just before the next tick: still tick 3 of the current count, 8 ms + 1 ns later.
        assert_eq!(c.at(Time(11 * HZ250 - 1), Dur::from_millis(8)), Time(13 * HZ250));
        // A 5 ms timeout is 2 jiffies as well.
        assert_eq!(c.at(Time(10 * HZ250), Dur::from_millis(5)), Time(13 * HZ250));
        for now in [0, 1, HZ250 / 2, HZ250 - 1, 7 * HZ250 + 3] {
            let fires = c.at(Time(now), Dur::from_millis(8)).0 - now;
            assert!((8_000_000..=12_000_000).contains(&fires), "{now}: {fires}");
        }
    }

    /// Level 1 (63 to 503 jiffies) has 8-jiffy buckets: the 1 s SYN timeout (250 jiffies) fires
    /// 1.0 to 1.032 s after it was armed.
    #[test]
    fn a_long_timer_falls_in_a_coarser_level() {
        let c = TimerClock::new(250);
        // clk 0, expires 250: bucket (250 >> 3) + 1 = 32, tick 256.
        assert_eq!(c.at(Time::ZERO, Dur::from_millis(1_000)), Time(256 * HZ250));
        for now in 0..64u64 {
            let t = Time(now * HZ250 + 17);
            let fires = c.at(t, Dur::from_millis(1_000)).0 - t.0;
            assert!((1_000_000_000..=1_032_000_000).contains(&fires), "{now}: {fires}");
        }
        // 62 jiffies stays in level 0, 63 goes to level 1.
        assert_eq!(c.at(Time::ZERO, Dur(62 * HZ250)), Time(63 * HZ250));
        assert_eq!(c.at(Time::ZERO, Dur(63 * HZ250)), Time(64 * HZ250));
    }
}
