//! Facts about a network interface of the calling thread's namespace. `/sys/class/net` shows the
//! namespace sysfs was mounted in, not the thread's, so these ask the kernel through a socket.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The interface's link type (`ARPHRD_*`: 1 Ethernet, 772 loopback, 65534 none, as on a TUN device).
pub fn link_type(name: &str) -> io::Result<u16> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{name}'"),
        ));
    }
    // SAFETY: socket() takes plain integers; a valid result is a new fd that we own.
    let fd = crate::check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just returned by socket() and is owned by nothing else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &b) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = b as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads the name from and writes the hardware address into one ifreq.
    crate::check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut ifr) })?;
    // SAFETY: SIOCGIFHWADDR filled the union's hwaddr member.
    Ok(unsafe { ifr.ifr_ifru.ifru_hwaddr }.sa_family)
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_is_loopback_and_a_missing_interface_is_an_error() {
        assert_eq!(super::link_type("lo").unwrap(), 772);
        assert!(super::link_type("tailcut-none0").is_err());
        assert!(super::link_type("").is_err());
    }
}
