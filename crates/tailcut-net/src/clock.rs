//! The runtime's one clock read. Engines get `now` as a [`Time`] in nanoseconds since the runtime's
//! epoch; the timerfd deadlines are the same instants on `CLOCK_MONOTONIC`, so a deadline an engine
//! asks for is exactly what the kernel is told.

use tailcut_proto::Time;
use tailcut_sys::clock::monotonic_ns;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch_ns: u64,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            epoch_ns: monotonic_ns(),
        }
    }

    /// Now, since the epoch. This is the only place the runtime reads a clock.
    pub fn now(&self) -> Time {
        Time(monotonic_ns().saturating_sub(self.epoch_ns))
    }

    /// The epoch as an `Instant`, for engines whose library counts time in `Instant`s (quinn-proto);
    /// they are handed `epoch + now` and use only differences, so the two clock reads here (both
    /// `CLOCK_MONOTONIC`) agree to within the nanoseconds between them.
    #[allow(clippy::disallowed_methods)]
    pub fn instant_epoch(&self) -> std::time::Instant {
        let now = std::time::Instant::now();
        now.checked_sub(std::time::Duration::from_nanos(self.now().0))
            .unwrap_or(now)
    }

    /// `at` as an absolute `CLOCK_MONOTONIC` deadline for the timerfd (never 0, which disarms it).
    pub fn deadline_ns(&self, at: Time) -> u64 {
        self.epoch_ns.saturating_add(at.0).max(1)
    }
}
