//! The kernel's clocks in nanoseconds. The monotonic one is the clock `timerfd` deadlines are given in,
//! which is why the emulator reads it rather than `std::time::Instant` (whose value cannot be handed to
//! the kernel); the process's CPU clock is what benchmarks charge calls with.

/// Clock `id` in nanoseconds (inlined: the emulator reads the monotonic clock once per event).
#[inline]
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the callers' clocks always exist on Linux.
    let ret = unsafe { libc::clock_gettime(id, &mut ts) };
    debug_assert_eq!(ret, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time of the whole process (every thread, user and system) in nanoseconds: what a benchmark
/// charges to the calls it made (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Timer slack of the calling thread: how late the kernel may fire its sleeps to batch wake-ups
/// (50 us by default, which would be lateness on every hop).
pub fn set_timer_slack_ns(ns: u64) -> std::io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value and touches no memory of ours.
    let ret = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    crate::check(ret).map(drop)
}

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch (what capture files are stamped with).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// Sleeps until `at_ns` on `CLOCK_MONOTONIC` (returns at once if it has passed). An absolute deadline
/// does not drift by the time spent computing the relative one; with a 1 ns timer slack
/// ([`set_timer_slack_ns`]) it wakes as close to `at_ns` as the scheduler allows.
pub fn sleep_until_ns(at_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining time is not requested (absolute sleep).
        let ret = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        // A signal handler interrupts the sleep (EINTR): sleep again to the same deadline.
        if ret != libc::EINTR {
            return;
        }
    }
}
