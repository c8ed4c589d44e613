//! Network namespaces: a new anonymous one for the calling thread, and switching a thread into one.
//! Namespaces are per thread on Linux, so a helper thread can enter one without moving the process.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

/// Moves the calling thread into a new network namespace and returns a handle to it. Nothing is named
/// in /run/netns: the namespace lives while the handle, a device fd inside it or a process in it does.
pub fn unshare_new() -> io::Result<OwnedFd> {
    // SAFETY: unshare takes flags by value; CLONE_NEWNET affects only the calling thread.
    crate::check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

/// The network namespace the calling thread is in.
pub fn current() -> io::Result<OwnedFd> {
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

/// Moves the calling thread into the network namespace `ns`.
pub fn enter(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `ns` is an open fd for the borrow's duration; setns checks that it names a netns.
    crate::check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}
