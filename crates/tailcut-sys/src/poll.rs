//! Readiness of many fds plus one nanosecond deadline: `epoll` with a `timerfd` in its set, because
//! `epoll_wait` alone counts in milliseconds and a real-time port needs microseconds.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

pub struct Poller {
    epoll: OwnedFd,
    timer: OwnedFd,
}

/// The token [`Poller::wait`] reports when the deadline passed.
pub const TIMER_TOKEN: u64 = u64::MAX;

impl Poller {
    pub fn new() -> io::Result<Poller> {
        // SAFETY: plain fd-creating calls; on success we own the returned fds.
        let epoll = unsafe { OwnedFd::from_raw_fd(crate::check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        // SAFETY: as above.
        let timer = unsafe {
            OwnedFd::from_raw_fd(crate::check(libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            ))?)
        };
        let p = Poller { epoll, timer };
        p.add(p.timer.as_fd(), TIMER_TOKEN)?;
        Ok(p)
    }

    /// Reports `token` while `fd` is readable (level-triggered: a reader may stop before draining it).
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: valid fds and a valid event record; the kernel copies the record.
        crate::check(unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut ev,
            )
        })
        .map(drop)
    }

    /// Arms the deadline at `at_ns` on `CLOCK_MONOTONIC` (0 disarms it).
    pub fn set_deadline(&self, at_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid timer fd and spec; the old value is not requested.
        crate::check(unsafe {
            libc::timerfd_settime(
                self.timer.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })
        .map(drop)
    }

    /// Waits for readiness (`timeout_ms` = -1: until the deadline or an fd; 0: just look) and
    /// appends the ready tokens to `out` (cleared first; its capacity is reused).
    pub fn wait(&self, out: &mut Vec<u64>, timeout_ms: i32) -> io::Result<()> {
        const MAX: usize = 64;
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; MAX];
        out.clear();
        // SAFETY: `evs` has room for MAX events and lives across the call.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), evs.as_mut_ptr(), MAX as i32, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        for ev in &evs[..n as usize] {
            if ev.u64 == TIMER_TOKEN {
                let mut buf = [0u8; 8];
                // SAFETY: reads at most 8 bytes into `buf`; a nonblocking timerfd may return EAGAIN,
                // which is harmless here.
                unsafe { libc::read(self.timer.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
            }
            out.push(ev.u64);
        }
        Ok(())
    }
}
