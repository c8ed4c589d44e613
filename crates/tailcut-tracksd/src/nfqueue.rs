//! NFQUEUE over a raw netlink socket (`NETLINK_NETFILTER`, subsystem `NFNL_SUBSYS_QUEUE`): bind a
//! queue, receive queued packets' headers, return verdicts. About 200 lines of message layout instead
//! of the unmaintained `nfq` crate (one maintainer, last release 2022, hides its fd): the socket is a
//! plain socket2 socket, so this needs no `unsafe`. Layouts are those of
//! `include/uapi/linux/netfilter/nfnetlink_queue.h` and `netlink.h`.

use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};

const AF_NETLINK: i32 = 16;
const ENOBUFS: i32 = 105;
const NETLINK_NETFILTER: i32 = 12;
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
/// Accept packets when the queue is full instead of dropping them: the agent must never cost a
/// connection a packet (`--queue-bypass` covers the agent being absent; this covers it being slow).
const NFQA_CFG_F_FAIL_OPEN: u32 = 1;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
/// Netfilter hooks (`enum nf_inet_hooks`).
pub const HOOK_LOCAL_IN: u8 = 1;
pub const HOOK_LOCAL_OUT: u8 = 3;
/// Bytes of each packet copied to user space: a 60 B IPv4 header plus a 60 B TCP header at most.
pub const COPY_RANGE: u32 = crate::tap::CAPTURE_BYTES as u32;

/// One queued packet: its id for the verdict, the hook it was queued at, and its first bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    pub id: u32,
    pub hook: u8,
    pub bytes: Vec<u8>,
}

/// A bound NFQUEUE queue.
pub struct NfQueue {
    sock: Socket,
    queue: u16,
    seq: u32,
    buf: Vec<u8>,
    /// Times the socket buffer overflowed (ENOBUFS): packets the agent never saw. The kernel could
    /// not deliver them to the socket, so fail-open accepted them; only the shim missed them.
    overflows: u64,
}

/// Appends one netlink attribute (native-endian header, value padded to 4 bytes).
fn put_attr(msg: &mut Vec<u8>, kind: u16, value: &[u8]) {
    msg.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(value);
    msg.resize(msg.len().next_multiple_of(4), 0);
}

impl NfQueue {
    /// Binds queue `queue` in the calling thread's network namespace, copying [`COPY_RANGE`] bytes of
    /// each packet, fail-open. Fails if another process holds the queue.
    pub fn bind(queue: u16, max_len: u32) -> io::Result<NfQueue> {
        let sock = Socket::new(
            Domain::from(AF_NETLINK),
            Type::RAW,
            Some(Protocol::from(NETLINK_NETFILTER)),
        )?;
        // Bursts of a few hundred queued headers must not overflow the socket (ENOBUFS loses them;
        // fail-open then accepts them, but the shim misses the packets).
        let _ = sock.set_recv_buffer_size(4 << 20);
        let mut q = NfQueue {
            sock,
            queue,
            seq: 0,
            buf: vec![0; 1 << 16],
            overflows: 0,
        };
        // An unbound netlink socket is bound to a kernel-chosen port id on its first send.
        q.config(NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0])?;
        let mut params = COPY_RANGE.to_be_bytes().to_vec();
        params.push(NFQNL_COPY_PACKET);
        q.config(NFQA_CFG_PARAMS, &params)?;
        q.config(NFQA_CFG_QUEUE_MAXLEN, &max_len.to_be_bytes())?;
        // FLAGS and MASK travel in one message: the kernel applies the flags under the mask.
        q.config_pair(
            (NFQA_CFG_FLAGS, &NFQA_CFG_F_FAIL_OPEN.to_be_bytes()),
            (NFQA_CFG_MASK, &NFQA_CFG_F_FAIL_OPEN.to_be_bytes()),
        )?;
        q.sock.set_nonblocking(true)?;
        Ok(q)
    }

    fn header(&mut self, msg_type: u16, flags: u16) -> Vec<u8> {
        self.seq = self.seq.wrapping_add(1);
        let mut m = Vec::with_capacity(64);
        m.extend_from_slice(&0u32.to_ne_bytes()); // length, set in `send`
        m.extend_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | msg_type).to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&self.seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        // nfgenmsg: family AF_UNSPEC, version 0, resource id = queue number (big-endian).
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&self.queue.to_be_bytes());
        m
    }

    fn send(&self, mut m: Vec<u8>) -> io::Result<()> {
        let len = m.len() as u32;
        m[0..4].copy_from_slice(&len.to_ne_bytes());
        self.sock.send(&m).map(drop)
    }

    /// Sends one config attribute with an ACK requested, and waits for the kernel's answer.
    fn config(&mut self, kind: u16, value: &[u8]) -> io::Result<()> {
        let mut m = self.header(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK);
        put_attr(&mut m, kind, value);
        self.send(m)?;
        self.wait_ack()
    }

    fn config_pair(&mut self, a: (u16, &[u8]), b: (u16, &[u8])) -> io::Result<()> {
        let mut m = self.header(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK);
        put_attr(&mut m, a.0, a.1);
        put_attr(&mut m, b.0, b.1);
        self.send(m)?;
        self.wait_ack()
    }

    /// Reads until the `NLMSG_ERROR` answering the last request (error 0 is the ACK).
    fn wait_ack(&mut self) -> io::Result<()> {
        loop {
            let n = (&self.sock).read(&mut self.buf)?;
            for (ty, body) in messages(&self.buf[..n]) {
                if ty == NLMSG_ERROR && body.len() >= 4 {
                    let err = i32::from_ne_bytes([body[0], body[1], body[2], body[3]]);
                    return if err == 0 {
                        Ok(())
                    } else {
                        Err(io::Error::from_raw_os_error(-err))
                    };
                }
            }
        }
    }

    /// Appends every packet queued now to `out` (nonblocking; returns at once when none is).
    pub fn recv(&mut self, out: &mut Vec<Queued>) -> io::Result<()> {
        loop {
            let n = match (&self.sock).read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(ENOBUFS) => {
                    self.overflows += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            parse_datagram(&self.buf[..n], out);
        }
    }

    /// Accepts (`accept`) or drops the packet `id`. The kernel keeps the original bytes: only the
    /// verdict travels back.
    pub fn verdict(&mut self, id: u32, accept: bool) -> io::Result<()> {
        let mut m = self.header(NFQNL_MSG_VERDICT, NLM_F_REQUEST);
        let mut v = if accept { NF_ACCEPT } else { NF_DROP }.to_be_bytes().to_vec();
        v.extend_from_slice(&id.to_be_bytes());
        put_attr(&mut m, NFQA_VERDICT_HDR, &v);
        self.send(m)
    }
}

impl NfQueue {
    /// Times the netlink socket overflowed (see the field).
    pub fn overflows(&self) -> u64 {
        self.overflows
    }
}

impl AsFd for NfQueue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

/// Appends the queued packets of one netlink datagram, as the kernel (or anything else able to write to
/// the socket) sent it, to `out`; whatever does not parse is skipped.
pub fn parse_datagram(buf: &[u8], out: &mut Vec<Queued>) {
    for (ty, body) in messages(buf) {
        if ty == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET {
            if let Some(q) = parse_packet(body) {
                out.push(q);
            }
        }
    }
}

/// The message the kernel sends for one queued packet: `NFQNL_MSG_PACKET` with the packet id, the
/// hook and the packet's bytes, written over `out`. What the tests and the fuzz driver feed
/// [`parse_datagram`].
pub fn packet_message(id: u32, hook: u8, bytes: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.resize(16, 0);
    out.extend_from_slice(&[2, 0, 0, 0]);
    let mut hdr = id.to_be_bytes().to_vec();
    hdr.extend_from_slice(&[8, 0, hook]);
    put_attr(out, NFQA_PACKET_HDR, &hdr);
    put_attr(out, NFQA_PAYLOAD, bytes);
    let len = out.len() as u32;
    out[0..4].copy_from_slice(&len.to_ne_bytes());
    out[4..6].copy_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET).to_ne_bytes());
}

/// Splits a netlink datagram into (message type, body after the 16-byte header); stops at the first
/// length that does not fit.
fn messages(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if buf.len() < 16 {
            return None;
        }
        let len = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if len < 16 || len > buf.len() {
            return None;
        }
        let ty = u16::from_ne_bytes([buf[4], buf[5]]);
        let body = &buf[16..len];
        buf = &buf[len.next_multiple_of(4).min(buf.len())..];
        Some((ty, body))
    })
}

/// A `NFQNL_MSG_PACKET` body: nfgenmsg (4 bytes) then attributes.
fn parse_packet(body: &[u8]) -> Option<Queued> {
    let mut attrs = body.get(4..)?;
    let (mut id, mut hook, mut bytes) = (None, 0, Vec::new());
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        // The top two bits flag nesting and byte order.
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
        if len < 4 || len > attrs.len() {
            break;
        }
        let val = &attrs[4..len];
        match kind {
            // struct nfqnl_msg_packet_hdr { __be32 packet_id; __be16 hw_protocol; __u8 hook; }
            NFQA_PACKET_HDR if val.len() >= 7 => {
                id = Some(u32::from_be_bytes([val[0], val[1], val[2], val[3]]));
                hook = val[6];
            }
            NFQA_PAYLOAD => bytes = val.to_vec(),
            _ => {}
        }
        attrs = &attrs[len.next_multiple_of(4).min(attrs.len())..];
    }
    Some(Queued { id: id?, hook, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_message_gives_id_hook_and_payload() {
        let mut m = Vec::new();
        packet_message(42, HOOK_LOCAL_OUT, &[0x45, 1, 2], &mut m);
        let mut out = Vec::new();
        parse_datagram(&m, &mut out);
        assert_eq!(
            out,
            vec![Queued {
                id: 42,
                hook: HOOK_LOCAL_OUT,
                bytes: vec![0x45, 1, 2]
            }]
        );
        // Two messages in one datagram, the second after the first's padding.
        let first = m.len();
        let mut two = m.clone();
        packet_message(43, HOOK_LOCAL_IN, &[0x45], &mut m);
        two.resize(first.next_multiple_of(4), 0);
        two.extend_from_slice(&m);
        out.clear();
        parse_datagram(&two, &mut out);
        assert_eq!(out.iter().map(|q| q.id).collect::<Vec<_>>(), vec![42, 43]);
    }

    proptest::proptest! {
        /// Whatever the socket delivers, splitting and parsing never panic.
        #[test]
        fn arbitrary_datagrams_never_panic(buf in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            for (_, body) in messages(&buf) {
                let _ = parse_packet(body);
            }
            let _ = parse_packet(&buf);
        }
    }

    #[test]
    fn truncated_messages_yield_nothing() {
        for n in 0..40 {
            let buf = vec![0xffu8; n];
            for (_, body) in messages(&buf) {
                let _ = parse_packet(body);
            }
        }
        assert!(parse_packet(&[0, 0]).is_none());
    }
}
