//! Delivering spoofed ACKs to the local TCP: an `IPPROTO_RAW` socket per family (the header is
//! ours) sending to the local address. The packet loops back through `lo` into the local stack as if
//! the peer had sent it; this works with strict `rp_filter` too, and the agent's taps (NIC only) do
//! not see it again.

use crate::addr6::V6Addrs;
use crate::wire;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use tailcut_proto::Packet;

/// IPPROTO_RAW: with it the kernel sends our IP header as built (IP_HDRINCL, and IPv6's
/// equivalent since Linux 4.5).
const IPPROTO_RAW: i32 = 255;

pub struct Injector {
    v4: Socket,
    /// `None` on a host without IPv6 (its spoofs are then counted as injection errors).
    v6: Option<Socket>,
}

impl Injector {
    pub fn new() -> io::Result<Injector> {
        let v4 = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(IPPROTO_RAW)))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot open a raw IPv4 socket: {e}")))?;
        let v6 = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::from(IPPROTO_RAW))).ok();
        Ok(Injector { v4, v6 })
    }

    /// Sends the spoofed ACK `pkt` to its destination (the local sender); an IPv6 connection's
    /// addresses come from `addrs`.
    pub fn send(&self, pkt: &Packet, addrs: &V6Addrs) -> io::Result<()> {
        let bytes = wire::spoofed_ack(pkt, addrs)
            .ok_or_else(|| io::Error::other("injection without a TCP header or a known IPv6 address"))?;
        if bytes[0] >> 4 == 6 {
            let v6 = self
                .v6
                .as_ref()
                .ok_or_else(|| io::Error::other("no raw IPv6 socket"))?;
            let dst: [u8; 16] = bytes[24..40].try_into().expect("an IPv6 header");
            let to = SockAddr::from(SocketAddrV6::new(Ipv6Addr::from(dst), 0, 0, 0));
            return v6.send_to(&bytes, &to).map(drop);
        }
        let to = SockAddr::from(SocketAddrV4::new(Ipv4Addr::from(pkt.tuple.dst.0), 0));
        self.v4.send_to(&bytes, &to).map(drop)
    }
}
