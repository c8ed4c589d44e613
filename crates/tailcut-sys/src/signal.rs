//! Termination signals as a readable fd (`signalfd`), so a single-threaded event loop can clean up
//! (remove its firewall rules) on SIGINT, SIGTERM or SIGHUP instead of dying in the default handler;
//! or, for a process with threads and child programs, caught by a handler ([`TermNotice`]).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals both kinds take.
const TERMINATION: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Write end of the pipe [`TermNotice`]'s handler writes each signal's number to; -1 before.
static NOTICE_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn note_termination(sig: libc::c_int) {
    let fd = NOTICE_PIPE.load(Ordering::Relaxed);
    let byte = sig as u8;
    // SAFETY: errno is this thread's; write(2) is async-signal-safe and reads one byte of `byte`,
    // which lives through the call. A failed write (the pipe full of earlier signals) loses nothing
    // that matters: the first one is what is read. errno is restored for the code this interrupted.
    unsafe {
        let errno = *libc::__errno_location();
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// SIGINT, SIGTERM and SIGHUP caught for the whole process instead of ending it: each is noted, and
/// [`TermNotice::wait`] returns the first. Unlike [`TermSignals`] nothing is blocked, so any thread
/// may take the signal, and the programs the process starts get the default actions back (exec
/// resets caught signals; a blocked mask would be inherited).
pub struct TermNotice {
    read: File,
}

impl TermNotice {
    /// Installs the handler. Once per process: a second call fails.
    pub fn install() -> io::Result<TermNotice> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two c_ints for pipe2 to fill.
        crate::check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
        // SAFETY: pipe2 succeeded: both fds are open and now owned here.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        if NOTICE_PIPE
            .compare_exchange(-1, write.as_raw_fd(), Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(io::Error::other("termination signals are handled already"));
        }
        // The handler writes to it for the rest of the process's life.
        std::mem::forget(write);
        // Blocking reads: only the handler's writes must not block.
        // SAFETY: F_SETFL on an fd we own, with plain flags.
        crate::check(unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, 0) })?;
        // SAFETY: sigaction is plain data, zeroed then filled; the handler is an extern "C" fn of the
        // right signature that only makes async-signal-safe calls; sigaction does not keep the pointer.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_termination as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            for sig in TERMINATION {
                crate::check(libc::sigaction(sig, &action, std::ptr::null_mut()))?;
            }
        }
        Ok(TermNotice {
            read: File::from(read),
        })
    }

    /// Blocks until a termination signal arrives (or has arrived); its number.
    pub fn wait(&mut self) -> io::Result<u32> {
        let mut b = [0u8; 1];
        loop {
            match self.read.read(&mut b) {
                Ok(1) => return Ok(u32::from(b[0])),
                Ok(_) => return Err(io::Error::other("the signal pipe closed")),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

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
            for sig in TERMINATION {
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

#[cfg(test)]
mod tests {
    use super::TermNotice;

    /// A caught SIGTERM is noted instead of ending the test process, and a second handler is refused.
    #[test]
    fn a_termination_signal_is_noted_not_fatal() {
        let mut notice = TermNotice::install().unwrap();
        // SAFETY: raise with a valid signal number, whose handler is installed above.
        assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
        assert_eq!(notice.wait().unwrap(), libc::SIGTERM as u32);
        assert!(TermNotice::install().is_err());
    }
}
