//! Termination signals as a readable fd (`signalfd`), so a single-threaded event loop can clean up
//! (remove its firewall rules) on SIGINT, SIGTERM or SIGHUP instead of dying in the default handler.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

/// The blocked termination signals, readable when one is pending.
pub struct TermSignals {
    fd: File,
}

impl TermSignals {
    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (threads started later inherit the
    /// mask) and returns an fd that becomes readable when one arrives. Call it before starting
    /// threads, or a signal may be delivered to a thread that does not block it.
    pub fn block() -> io::Result<TermSignals> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it before any other use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, writable sigset_t for every call below; the signal numbers are
        // valid constants; pthread_sigmask does not keep the pointer.
        unsafe {
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            crate::check(libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()))?;
        }
        // SAFETY: -1 creates a new fd; `set` is valid for the call; on success we own the fd.
        let fd = unsafe {
            OwnedFd::from_raw_fd(crate::check(libc::signalfd(
                -1,
                &set,
                libc::SFD_NONBLOCK | libc::SFD_CLOEXEC,
            ))?)
        };
        Ok(TermSignals { fd: File::from(fd) })
    }

    /// The pending signal's number, if one is pending.
    pub fn take(&mut self) -> Option<u32> {
        // struct signalfd_siginfo is 128 bytes; ssi_signo is its first u32.
        let mut buf = [0u8; 128];
        match self.fd.read(&mut buf) {
            Ok(128) => Some(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]])),
            _ => None,
        }
    }
}

impl AsFd for TermSignals {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
