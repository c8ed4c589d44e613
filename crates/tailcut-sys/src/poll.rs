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

    /// A second poller on the same timer (a duplicate of its fd: arming either arms both) and none of
    /// the other fds, for a second thread that takes turns with this poller's one at the same fds.
    pub fn sibling(&self) -> io::Result<Poller> {
        // SAFETY: as in `new`.
        let epoll = unsafe { OwnedFd::from_raw_fd(crate::check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        let p = Poller {
            epoll,
            timer: self.timer.try_clone()?,
        };
        p.add(p.timer.as_fd(), TIMER_TOKEN)?;
        Ok(p)
    }

    /// Reports `token` while `fd` is readable (level-triggered: a reader may stop before draining it).
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, true)
    }

    /// Stops (`on` false) or resumes reporting `fd` (added before with `token`); the timer's fd is
    /// [`Poller::timer`]. A thread asleep in [`Poller::wait`] is not woken by an fd it stopped
    /// listening to; resumed, a still-readable fd is reported at once. The kernel still reports
    /// EPOLLERR and EPOLLHUP of an fd not listened to (it always adds them): fine for the UDP
    /// sockets here (unconnected, no `IP_RECVERR`), not for an fd that can be in error for long.
    pub fn listen(&self, fd: BorrowedFd<'_>, token: u64, on: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, on)
    }

    /// The timer's fd, for [`Poller::listen`].
    pub fn timer(&self) -> BorrowedFd<'_> {
        self.timer.as_fd()
    }

    fn ctl(&self, op: libc::c_int, fd: BorrowedFd<'_>, token: u64, on: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: if on { libc::EPOLLIN as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: valid fds and a valid event record; the kernel copies the record.
        crate::check(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixDatagram;

    #[test]
    fn a_sibling_shares_the_timer_and_an_fd_not_listened_to_is_not_reported() {
        let p = Poller::new().unwrap();
        let q = p.sibling().unwrap();
        let (a, b) = UnixDatagram::pair().unwrap();
        p.add(b.as_fd(), 7).unwrap();
        q.add(b.as_fd(), 7).unwrap();
        a.send(&[1]).unwrap();
        let mut out = Vec::new();
        p.listen(b.as_fd(), 7, false).unwrap();
        p.wait(&mut out, 0).unwrap();
        assert!(out.is_empty());
        q.wait(&mut out, 0).unwrap();
        assert_eq!(out, vec![7]);
        p.listen(b.as_fd(), 7, true).unwrap();
        p.wait(&mut out, 0).unwrap();
        assert_eq!(out, vec![7], "readable when listened to again");
        // Armed through one poller (at 1 ns: long past), the timer fires in the other.
        p.listen(p.timer(), TIMER_TOKEN, false).unwrap();
        p.set_deadline(1).unwrap();
        q.wait(&mut out, 1_000).unwrap();
        assert!(out.contains(&TIMER_TOKEN));
        p.listen(p.timer(), TIMER_TOKEN, true).unwrap();
        p.wait(&mut out, 0).unwrap();
        assert!(!out.contains(&TIMER_TOKEN), "the sibling's wait read it");
    }
}
