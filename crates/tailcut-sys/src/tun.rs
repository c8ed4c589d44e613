//! TUN devices: layer-3 virtual NICs whose packets a user-space program reads and writes.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// Opens a new TUN device named `name` in the calling thread's network namespace, without the packet
/// information header (each read is one IP packet) and nonblocking. Offloads are set to none
/// explicitly: the flags outlive the fd on a persistent device, and with none the kernel segments and
/// checksums every packet before the emulator sees it, so each read is one wire packet.
pub fn open(name: &str) -> io::Result<File> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{name}'"),
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &b) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = b as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `ifr` is, on a /dev/net/tun fd.
    crate::check(unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut ifr) })?;
    // SAFETY: TUNSETOFFLOAD takes its flags by value.
    crate::check(unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETOFFLOAD, 0 as libc::c_ulong) })?;
    Ok(file)
}
