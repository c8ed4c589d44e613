//! The packet tap: how the agent sees the host's TCP packets and says what becomes of them. The shim
//! does not care where packets come from; a backend is a readable fd, a batch receive and a verdict.
//! Two backends: NFQUEUE ([`crate::nfq_tap`]: packets wait in the kernel for the agent's verdict)
//! and tc-BPF ([`crate::bpf_tap`]: packets never wait; the kernel drops duplicate ACKs itself from
//! the flows the agent mirrors into it).

use crate::addr6::V6Addrs;
use std::io;
use std::os::fd::AsFd;
use tailcut_proto::tracks::Tracks;

/// Bytes of a packet the agent looks at, from the IP header on: IPv4 (<= 60) and TCP (<= 60)
/// headers. Both backends copy no more.
pub const CAPTURE_BYTES: usize = 128;

/// Which way a tapped packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapDir {
    /// Leaving the host on the NIC (the local senders' data).
    Egress,
    /// Arriving on the NIC (the peers' ACKs).
    Ingress,
}

/// One tapped packet: the backend's id for its verdict, its direction and its first bytes (at least
/// the IPv4 and TCP headers when the packet has them), held inline so a batch allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tapped {
    pub id: u32,
    pub dir: TapDir,
    len: usize,
    buf: [u8; CAPTURE_BYTES],
    /// `Some(dropped)` when the backend decided in the kernel and the packet has gone.
    pub kernel_dropped: Option<bool>,
    /// When the packet crossed the hook (`CLOCK_MONOTONIC` ns), for a backend whose copies reach
    /// the agent later: the shim must time packets as they passed, not as they were read, or a
    /// batch read at once looks like zero RTTs. `None`: the packet is waiting now.
    pub at_ns: Option<u64>,
}

impl Tapped {
    /// A packet's first `bytes` (cut at [`CAPTURE_BYTES`]).
    pub fn new(id: u32, dir: TapDir, bytes: &[u8], kernel_dropped: Option<bool>) -> Tapped {
        let len = bytes.len().min(CAPTURE_BYTES);
        let mut buf = [0u8; CAPTURE_BYTES];
        buf[..len].copy_from_slice(&bytes[..len]);
        Tapped {
            id,
            dir,
            len,
            buf,
            kernel_dropped,
            at_ns: None,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

pub trait PacketTap: AsFd {
    /// Appends the packets available now to `out` without blocking (the fd is readable when some are).
    fn recv(&mut self, out: &mut Vec<Tapped>) -> io::Result<()>;
    /// Lets packet `id` through (`pass`) or drops it. Every received packet that waits for it
    /// ([`Tapped::kernel_dropped`] is `None`) gets exactly one verdict.
    fn verdict(&mut self, id: u32, pass: bool) -> io::Result<()>;
    /// Packets the backend let through unseen because the agent fell behind (counted, not fatal).
    fn missed(&self) -> u64 {
        0
    }
    /// Tells the kernel which flows are recovering (for a backend that drops duplicates itself).
    fn mirror_recovering(&mut self, _shim: &Tracks, _addrs: &V6Addrs) {}
    /// The backend's own counters for the JSON lines.
    fn extra_counters(&self) -> Option<serde_json::Value> {
        None
    }
}
