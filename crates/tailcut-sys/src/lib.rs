//! tailcut-sys: safe wrappers around the Linux calls tailcut's real-network parts need and that no
//! safe crate in the build offers: TUN ioctls, network-namespace switching, `epoll` and `timerfd`
//! with nanosecond deadlines, the monotonic clock, thread priority and CPU affinity, `TCP_INFO`, termination signals as an fd, receive timestamps off (`timestamps`), and
//! starting a program inside a namespace that dies with its parent. `probe`: whether this machine can
//! run the real-network tests at all. The rest of the workspace forbids
//! `unsafe`; every block here states why it is sound.

pub mod clock;
pub mod link;
pub mod netns;
pub mod pmtu;
pub mod poll;
pub mod probe;
pub mod sched;
pub mod signal;
pub mod spawn;
pub mod tcpinfo;
pub mod timestamps;
pub mod tun;

use std::io;

/// Turns a libc return value into an `io::Result`, reading `errno` on -1.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
