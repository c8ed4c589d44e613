//! The path MTU the kernel knows for a connected socket (`IP_MTU` / `IPV6_MTU`): the outgoing
//! interface's MTU unless a smaller one was learnt from ICMP.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `ipv6` selects `IPV6_MTU`; the socket must be connected.
pub fn path_mtu(sock: BorrowedFd<'_>, ipv6: bool) -> io::Result<u32> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `mtu` has `len` writable bytes; the kernel writes at most `len` and updates it.
    crate::check(unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    u32::try_from(mtu).map_err(|_| io::Error::other("negative path MTU"))
}
