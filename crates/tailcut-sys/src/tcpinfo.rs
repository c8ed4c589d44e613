//! `TCP_INFO` of a connected socket: the kernel's per-connection counters.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The fields tailcut reads from `struct tcp_info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Consecutive RTO backoffs now (`tcpi_backoff`).
    pub backoff: u8,
    /// Smoothed RTT in microseconds (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Current retransmission timeout in microseconds (`tcpi_rto`).
    pub rto_us: u32,
    /// Options the connection negotiated (`tcpi_options`: `TCPI_OPT_*` bits).
    pub options: u8,
}

/// `tcpi_options` bit: ECN was negotiated (RFC 3168).
pub const TCPI_OPT_ECN: u8 = 8;

pub fn tcp_info(sock: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    // SAFETY: tcp_info is plain old data; all-zero is a valid value.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `ti` has `len` writable bytes; the kernel writes at most `len` and updates it.
    crate::check(unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    })?;
    Ok(TcpInfo {
        total_retrans: ti.tcpi_total_retrans,
        backoff: ti.tcpi_backoff,
        rtt_us: ti.tcpi_rtt,
        rto_us: ti.tcpi_rto,
        options: ti.tcpi_options,
    })
}
