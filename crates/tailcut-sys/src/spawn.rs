//! Starting a program inside a network namespace, tied to the life of the thread that starts it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Spawns `cmd` inside the network namespace `ns`. The child gets SIGKILL when the thread that spawns
/// it exits (PR_SET_PDEATHSIG is per thread, not per process): call this from a thread that lives as
/// long as the child should, so a crashed or killed emulator leaves no process behind.
pub fn spawn_in_netns(cmd: &mut Command, ns: BorrowedFd<'_>) -> io::Result<Child> {
    let fd = ns.as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe syscalls
    // (setns, prctl, getppid) on values copied in; `fd` stays open in the child until exec (it is
    // close-on-exec, and the borrow keeps it open in the parent during the fork).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            die_with(parent)
        })
    };
    cmd.spawn()
}

/// In a child between fork and exec: SIGKILL when the thread that forked it exits. Only
/// async-signal-safe calls (prctl, getppid).
fn die_with(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and no pointers.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // The parent may have died between fork and prctl: then no signal will ever come.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::other("parent exited before the child started"));
    }
    Ok(())
}

/// Spawns `cmd` in the caller's namespaces with the same tie as [`spawn_in_netns`]: SIGKILL when the
/// calling thread exits. For helpers that hold a machine-wide kernel object (the testbed's DCTCP
/// loader holds a registered congestion control), so that the object goes with the emulator.
pub fn spawn_tied_to_thread(cmd: &mut Command) -> io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe syscalls
    // (prctl, getppid) on values copied in.
    unsafe { cmd.pre_exec(move || die_with(parent)) };
    cmd.spawn()
}

/// Makes the calling process get SIGKILL when its parent thread exits (for helper binaries started
/// without [`spawn_in_netns`]).
pub fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl with plain integer arguments.
    crate::check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) })
        .map(drop)
}
