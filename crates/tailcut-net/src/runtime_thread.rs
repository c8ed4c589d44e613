//! The thread that owns a runtime's sockets and engines, as a `Client` or `Server` holds it. Its loop
//! sleeps in epoll, which a channel cannot wake, so the owner wakes it through one end of a socket
//! pair (the loop watches the other); dropping the handle stops and joins the thread.

use crate::driver::STOP_BYTE;
use std::io;
use std::os::unix::net::UnixDatagram;
use std::thread::JoinHandle;

pub(crate) struct RuntimeThread {
    wake: UnixDatagram,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl RuntimeThread {
    /// Starts `body` on a thread named `name`; `wake` is the owner's end of the pair whose other end
    /// the body's driver watches.
    pub(crate) fn spawn(
        name: &str,
        wake: UnixDatagram,
        body: impl FnOnce() -> io::Result<()> + Send + 'static,
    ) -> io::Result<RuntimeThread> {
        // Never blocks the owner: a full buffer means a wake-up is pending (see `wake`), and a
        // loop that has died leaves its end open in the state callers still share.
        wake.set_nonblocking(true)?;
        let thread = std::thread::Builder::new().name(name.into()).spawn(body)?;
        Ok(RuntimeThread {
            wake,
            thread: Some(thread),
        })
    }

    /// Makes the loop look at its command channel. A full socket buffer means a wake-up is pending
    /// already, so a failed send loses nothing.
    pub(crate) fn wake(&self) {
        let _ = self.wake.send(&[1]);
    }

    /// Stops the loop and waits for it: the loop's own error, or an error if it panicked.
    pub(crate) fn stop(&mut self) -> io::Result<()> {
        let _ = self.wake.send(&[STOP_BYTE]);
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("runtime thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for RuntimeThread {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
