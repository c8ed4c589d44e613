//! Delivering spoofed ACKs to the local TCP: an `IPPROTO_RAW` socket (the header is ours) sending to
//! the local address. The packet loops back through `lo` into the local stack as if the peer had sent
//! it; this works with strict `rp_filter` too, and the agent's rules (NIC only) do not queue it again.

use crate::wire;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use tailcut_proto::Packet;

pub struct Injector {
    sock: Socket,
}

impl Injector {
    pub fn new() -> io::Result<Injector> {
        // IPPROTO_RAW (255) implies IP_HDRINCL: the kernel sends our IPv4 header as built.
        let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(255)))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot open a raw IPv4 socket: {e}")))?;
        Ok(Injector { sock })
    }

    /// Sends the spoofed ACK `pkt` to its destination (the local sender).
    pub fn send(&self, pkt: &Packet) -> io::Result<()> {
        let bytes =
            wire::spoofed_ack(pkt).ok_or_else(|| io::Error::other("injection without a TCP header"))?;
        let dst = SockAddr::from(SocketAddrV4::new(Ipv4Addr::from(pkt.tuple.dst.0), 0));
        self.sock.send_to(&bytes, &dst).map(drop)
    }
}
