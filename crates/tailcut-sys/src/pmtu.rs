//! The path MTU the kernel knows for a connected socket (`IP_MTU` / `IPV6_MTU`): the outgoing
//! interface's MTU unless a smaller one was learnt from ICMP.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

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

/// The kernel's MTU of the route from `local` (`None`: the unspecified address of `remote`'s
/// family, so the routes pick the source) to `remote`, read from a throwaway UDP socket connected
/// along it: connecting a UDP socket sends nothing, and `IP_MTU` needs a connected socket.
pub fn route_mtu(local: Option<IpAddr>, remote: SocketAddr) -> io::Result<u32> {
    let local = local.unwrap_or(if remote.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    });
    let s = UdpSocket::bind(SocketAddr::new(local, 0))?;
    s.connect(remote)?;
    path_mtu(s.as_fd(), remote.is_ipv6())
}

#[cfg(test)]
mod tests {
    use super::route_mtu;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
    use std::os::fd::AsFd;

    /// With or without a local address, the probe reads what a socket connected along the same
    /// route reads (loopback's MTU, which every test host has).
    #[test]
    fn the_route_probe_reads_the_connected_sockets_mtu() {
        let remote = SocketAddr::from((Ipv4Addr::LOCALHOST, 9));
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        s.connect(remote).unwrap();
        let want = super::path_mtu(s.as_fd(), false).unwrap();
        assert!(want >= 576, "{want}");
        assert_eq!(route_mtu(None, remote).unwrap(), want);
        assert_eq!(
            route_mtu(Some(IpAddr::from(Ipv4Addr::LOCALHOST)), remote).unwrap(),
            want
        );
    }
}
