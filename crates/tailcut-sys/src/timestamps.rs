//! Receive timestamps off (`SO_TIMESTAMPNS`). quinn-udp 0.6 turns them on for every socket it
//! sets up, and its control-message buffer, sized for the messages it asks for, then has no room
//! left for the ECN byte (`IP_TOS`) beside a GRO batch's segment size and the timestamp: the kernel
//! truncates the list and the batch arrives as Not-ECT. tailcut reads its own clock at each wake-up
//! and wants the ECN marks, so it turns the timestamps off again.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Clears `SO_TIMESTAMPNS` on `sock`.
pub fn disable_rx_timestamps(sock: BorrowedFd<'_>) -> io::Result<()> {
    set_rx_timestamps(sock, false)
}

fn set_rx_timestamps(sock: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let value = libc::c_int::from(on);
    // SAFETY: the option value is a live `c_int` whose size is passed; the kernel only reads it.
    crate::check(unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn timestamps_on(sock: BorrowedFd<'_>) -> bool {
        let mut v: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` has `len` writable bytes; the kernel writes at most `len` and updates it.
        let r = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0);
        v != 0
    }

    #[test]
    fn a_socket_with_timestamps_on_has_them_off_after() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        set_rx_timestamps(s.as_fd(), true).unwrap();
        assert!(timestamps_on(s.as_fd()));
        disable_rx_timestamps(s.as_fd()).unwrap();
        assert!(!timestamps_on(s.as_fd()));
    }
}
