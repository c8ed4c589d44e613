//! The floor of any RPC runtime over UDP sockets (`tailcut-net bench --scheme udp-floor`): the
//! runtime's own socket layer ([`crate::io`]: GSO lanes, GRO `recvmmsg`, the same buffers) moving a
//! message and its echo with no transport engine at all. A message is cut into datagrams of a
//! 12-byte header and up to `segment` payload bytes (the TCP family's 8,872-byte MSS at a 9,000-byte
//! path), leaves in GSO batches, and the receiver copies each payload into the message, which is the
//! least a receiver must do. A receiver acknowledges what it has after each `recvmmsg`, and a sender
//! keeps at most [`WINDOW`] bytes unacknowledged (the runtime's TCP receive window), so a message
//! larger than the socket buffers does not overflow them. No retransmission, congestion control,
//! timer or thread hand-off: a lost datagram fails the call.
//!
//! Why it exists: issue #42 asks tailcut's TCP over UDP for 1.5x kernel TCP's latency at every size.
//! Kernel TCP on loopback copies each byte twice (into an skb, out of it); a stack over UDP sockets
//! copies it at least four times (into the batch, into the kernel, out of it, into the message).
//! This row measures what those copies and system calls cost on their own, so the benchmark can
//! tell a runtime's overhead from the floor of its design.

use crate::io::{PathSocket, RxBufs, TxLanes};
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use tailcut_proto::Ecn;
use tailcut_sys::poll::Poller;

/// Bytes a sender may have sent beyond the receiver's last acknowledgement (less where the socket's
/// receive buffer is smaller, [`FloorEnd::bind`]).
pub const WINDOW: usize = 1 << 20;
/// Socket buffers: a whole window fits (the kernel caps it at `net.core.[rw]mem_max`).
const BUFFER_BYTES: usize = 4 << 20;
const HEADER: usize = 12;
const DATA: u8 = 0;
const ACK: u8 = 1;
/// A wait this long without a datagram fails the call.
const IDLE_MS: i32 = 1_000;

/// One end: a socket on loopback, its send lane, receive slab and poller.
pub struct FloorEnd {
    sock: [PathSocket; 1],
    lanes: TxLanes,
    rx: RxBufs,
    poller: Poller,
    ready: Vec<u64>,
    segment: usize,
    /// [`WINDOW`], or half the receive buffer the kernel granted (capped by `net.core.rmem_max`; the
    /// kernel reports twice what it accounts payload against), as both ends bind alike.
    window: usize,
    datagram: Vec<u8>,
}

impl FloorEnd {
    /// Binds `addr`; datagrams carry up to `segment` payload bytes.
    pub fn bind(addr: SocketAddr, segment: usize) -> io::Result<FloorEnd> {
        let sock = PathSocket::bind(addr, BUFFER_BYTES)?;
        let poller = Poller::new()?;
        poller.add(sock.socket.as_fd(), 0)?;
        let granted = socket2::SockRef::from(&sock.socket).recv_buffer_size()?;
        Ok(FloorEnd {
            window: WINDOW.min(granted / 2).max(segment.max(1) + HEADER),
            sock: [sock],
            lanes: TxLanes::new(1),
            rx: RxBufs::new()?,
            poller,
            ready: Vec::new(),
            segment: segment.max(1),
            datagram: Vec::with_capacity(HEADER + segment.max(1)),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock[0].local_addr()
    }

    /// Blocks until the socket is readable (an error after [`IDLE_MS`] of silence).
    fn wait(&mut self) -> io::Result<()> {
        self.poller.wait(&mut self.ready, IDLE_MS)?;
        if self.ready.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the udp floor lost a datagram (nothing for 1 s)",
            ));
        }
        Ok(())
    }

    /// Sends `msg` to `to` within the window, reading the peer's acknowledgements (and ignoring
    /// anything else: the previous message's data cannot be waiting, the exchange is in lock step).
    pub fn send(&mut self, to: SocketAddr, msg: &[u8]) -> io::Result<()> {
        let total = u32::try_from(msg.len()).map_err(|_| io::Error::other("message over 4 GB"))?;
        let (mut sent, mut acked) = (0usize, 0usize);
        loop {
            while sent < msg.len().max(1) && sent - acked < self.window {
                let end = (sent + self.segment).min(msg.len());
                self.datagram.clear();
                self.datagram.extend_from_slice(&[DATA, 0, 0, 0]);
                self.datagram.extend_from_slice(&total.to_be_bytes());
                self.datagram.extend_from_slice(&(sent as u32).to_be_bytes());
                self.datagram.extend_from_slice(&msg[sent..end]);
                self.lanes.push(&self.sock, 0, 0, to, Ecn::NotEct, &self.datagram);
                sent = end.max(1);
            }
            self.lanes.flush(&self.sock);
            if self.lanes.counters.send_errors > 0 {
                return Err(io::Error::other("the kernel refused a datagram"));
            }
            if sent >= msg.len() {
                return Ok(());
            }
            self.wait()?;
            let rx = &mut self.rx;
            rx.recv(&self.sock[0], |d| {
                if d.bytes.len() >= 8 && d.bytes[0] == ACK {
                    let n = u32::from_be_bytes(d.bytes[4..8].try_into().expect("4 bytes"));
                    acked = acked.max(n as usize);
                }
            })?;
        }
    }

    /// Receives one whole message into `msg` (its previous contents replaced), acknowledging the
    /// bytes so far after every `recvmmsg`; returns who sent it.
    pub fn receive(&mut self, msg: &mut Vec<u8>) -> io::Result<SocketAddr> {
        let (mut got, mut total, mut from) = (0usize, None::<usize>, None);
        msg.clear();
        loop {
            if total.is_some_and(|t| got >= t.max(1)) {
                return from.ok_or_else(|| io::Error::other("no sender"));
            }
            self.wait()?;
            let mut bad = false;
            let rx = &mut self.rx;
            let n = rx.recv(&self.sock[0], |d| {
                if d.bytes.len() < HEADER || d.bytes[0] != DATA {
                    return;
                }
                let word = |i: usize| u32::from_be_bytes(d.bytes[i..i + 4].try_into().expect("4")) as usize;
                let (t, off) = (word(4), word(8));
                let body = &d.bytes[HEADER..];
                if *total.get_or_insert(t) != t || off + body.len() > t {
                    bad = true;
                    return;
                }
                if msg.len() < t {
                    msg.resize(t, 0);
                }
                msg[off..off + body.len()].copy_from_slice(body);
                got += body.len().max(usize::from(t == 0));
                from = Some(d.from);
            })?;
            if bad {
                return Err(io::Error::other("a datagram of another message"));
            }
            if let (Some(to), true) = (from, n > 0) {
                let mut ack = [ACK, 0, 0, 0, 0, 0, 0, 0];
                ack[4..].copy_from_slice(&(got as u32).to_be_bytes());
                self.lanes.push(&self.sock, 0, 0, to, Ecn::NotEct, &ack);
                self.lanes.flush(&self.sock);
            }
        }
    }
}

/// The echo server's end: answers every message with itself until its socket has been silent for
/// [`IDLE_MS`] (the bench's client has gone).
pub fn serve_echo(mut end: FloorEnd) {
    let mut msg = Vec::new();
    while let Ok(from) = end.receive(&mut msg) {
        if end.send(from, &msg).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages from empty to several windows come back byte-exact.
    #[test]
    fn echoes_messages_of_every_size_intact() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = FloorEnd::bind(lo, 8_872).unwrap();
        let to = server.local_addr().unwrap();
        let t = std::thread::spawn(move || serve_echo(server));
        let mut client = FloorEnd::bind(lo, 8_872).unwrap();
        let mut back = Vec::new();
        for size in [0usize, 1, 100, 8_872, 8_873, 100_000, 3 * WINDOW + 5] {
            let req: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
            client.send(to, &req).unwrap();
            client.receive(&mut back).unwrap();
            assert_eq!(back, req, "size {size}");
        }
        drop(client);
        t.join().unwrap();
    }
}
