//! The packet tap: how the agent sees the host's TCP packets and says what becomes of them. The shim
//! does not care where packets come from; a backend is a readable fd, a batch receive and a verdict.
//! NFQUEUE ([`crate::nfq_tap`]) is the one backend so far; a tc-BPF ring-buffer tap (packets never
//! wait for user space) is the production path still to be written (docs/tracks.md).

use std::io;
use std::os::fd::AsFd;

/// Which way a tapped packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapDir {
    /// Leaving the host on the NIC (the local senders' data).
    Egress,
    /// Arriving on the NIC (the peers' ACKs).
    Ingress,
}

/// One tapped packet: the backend's id for its verdict, its direction and its first bytes (at least
/// the IPv4 and TCP headers when the packet has them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tapped {
    pub id: u32,
    pub dir: TapDir,
    pub bytes: Vec<u8>,
}

pub trait PacketTap: AsFd {
    /// Appends the packets available now to `out` without blocking (the fd is readable when some are).
    fn recv(&mut self, out: &mut Vec<Tapped>) -> io::Result<()>;
    /// Lets packet `id` through (`pass`) or drops it. Every received packet gets exactly one verdict.
    fn verdict(&mut self, id: u32, pass: bool) -> io::Result<()>;
    /// Packets the backend let through unseen because the agent fell behind (counted, not fatal).
    fn missed(&self) -> u64 {
        0
    }
}
