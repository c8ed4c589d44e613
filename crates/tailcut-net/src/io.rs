//! Sockets and batches. Sends: a drain's datagrams for one (socket, destination) are queued in that
//! path's lane and leave as one GSO send (equal segments, the last may be shorter); receives take up
//! to [`RX_SLOTS`] GRO super-datagrams per `recvmmsg`. All buffers are allocated once and reused.

use quinn_udp::{EcnCodepoint, RecvMeta, Transmit, UdpSocketState};
use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use tailcut_proto::Ecn;

/// Largest UDP payload of one GSO send or GRO receive.
pub const MAX_BATCH_BYTES: usize = 65_000;
/// Largest single datagram the runtime sends (IPv4 UDP payload limit).
pub const MAX_DATAGRAM_BYTES: usize = 65_507;
/// Receive slots per `recvmmsg`.
pub const RX_SLOTS: usize = 8;
const RX_SLOT_BYTES: usize = 65_536;

pub struct PathSocket {
    pub socket: UdpSocket,
    state: UdpSocketState,
}

impl PathSocket {
    /// Binds `addr` nonblocking, with large buffers (a burst of coded packets must not overflow the
    /// default 208 KB) and quinn-udp's GRO and IP_RECVTOS options.
    pub fn bind(addr: SocketAddr, buffer_bytes: usize) -> io::Result<PathSocket> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        let state = UdpSocketState::new((&socket).into())?;
        // quinn-udp 0.6 turns receive timestamps on, which crowd the ECN byte out of a GRO batch's
        // control messages (`tailcut_sys::timestamps`).
        tailcut_sys::timestamps::disable_rx_timestamps(socket.as_fd())?;
        // Unprivileged processes get the sysctl cap instead; that is fine.
        let _ = state.set_send_buffer_size((&socket).into(), buffer_bytes);
        let _ = state.set_recv_buffer_size((&socket).into(), buffer_bytes);
        Ok(PathSocket { socket, state })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Marks every datagram with DSCP `dscp` (the upper six bits of the TOS / traffic class byte),
    /// so switches that classify by it queue the scheme apart (CloudBurst's class, Sec. IV-B). The
    /// ECN bits stay per datagram: quinn-udp sets them in a control message only when a datagram
    /// is ECN-capable, and that message carries the ECN codepoint alone, so a scheme that marks
    /// ECN must not have a DSCP (none does).
    pub fn set_dscp(&self, dscp: u8) -> io::Result<()> {
        if dscp == 0 {
            return Ok(());
        }
        let s = socket2::SockRef::from(&self.socket);
        let tos = u32::from(dscp) << 2;
        match self.socket.local_addr()? {
            SocketAddr::V4(_) => s.set_tos_v4(tos),
            SocketAddr::V6(_) => s.set_tclass_v6(tos),
        }
    }

    fn max_segments(&self) -> usize {
        self.state.max_gso_segments().max(1)
    }

    fn send(&self, dest: SocketAddr, ecn: Ecn, contents: &[u8], segment: usize) -> io::Result<()> {
        let ecn = match ecn {
            Ecn::NotEct => None,
            Ecn::Ect0 => Some(EcnCodepoint::Ect0),
            Ecn::Ce => Some(EcnCodepoint::Ce),
        };
        let t = Transmit {
            destination: dest,
            ecn,
            contents,
            segment_size: (contents.len() > segment).then_some(segment),
            src_ip: None,
        };
        self.state.try_send((&self.socket).into(), &t)
    }
}

/// Datagrams queued for one path during a drain.
#[derive(Debug, Default)]
struct Lane {
    sock: usize,
    dest: Option<SocketAddr>,
    /// The ECN codepoint of every datagram of the batch (one `IP_TOS` per send).
    ecn: Ecn,
    buf: Vec<u8>,
    segment: usize,
    count: usize,
    /// The last datagram was shorter than `segment`: GSO allows that only at the end.
    closed: bool,
}

/// Send-side counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCounters {
    pub datagrams: u64,
    pub sends: u64,
    /// Datagrams the kernel refused (buffer full or unreachable): UDP loss, as on a wire.
    pub send_errors: u64,
    /// The largest datagram (UDP payload) handed to the kernel.
    pub max_datagram: u64,
}

/// Per-path send lanes.
pub struct TxLanes {
    lanes: Vec<Lane>,
    pub counters: TxCounters,
}

impl TxLanes {
    pub fn new(paths: usize) -> TxLanes {
        TxLanes {
            lanes: (0..paths)
                .map(|_| Lane {
                    buf: Vec::with_capacity(MAX_BATCH_BYTES + MAX_DATAGRAM_BYTES),
                    ..Lane::default()
                })
                .collect(),
            counters: TxCounters::default(),
        }
    }

    /// Starts a datagram on `path` to `dest` from socket `sock`, flushing the lane first if the
    /// datagram could not join its batch; `write` appends the bytes and returns nothing. GSO needs
    /// equal sizes, so the batch is closed after a shorter datagram, and a longer one starts anew.
    pub fn push(
        &mut self,
        socks: &[PathSocket],
        path: usize,
        sock: usize,
        dest: SocketAddr,
        ecn: Ecn,
        datagram: &[u8],
    ) {
        let Some(lane) = self.lanes.get_mut(path) else {
            return;
        };
        let len = datagram.len();
        self.counters.max_datagram = self.counters.max_datagram.max(len as u64);
        let joins = lane.count > 0
            && lane.sock == sock
            && lane.dest == Some(dest)
            && lane.ecn == ecn
            && !lane.closed
            && len <= lane.segment
            && lane.buf.len() + len <= MAX_BATCH_BYTES
            && lane.count < socks.get(sock).map_or(1, PathSocket::max_segments);
        if !joins {
            Self::flush_lane(lane, socks, &mut self.counters);
            lane.sock = sock;
            lane.dest = Some(dest);
            lane.ecn = ecn;
            lane.segment = len;
        }
        lane.buf.extend_from_slice(datagram);
        lane.count += 1;
        lane.closed = len < lane.segment;
        self.counters.datagrams += 1;
    }

    /// Sends everything queued.
    pub fn flush(&mut self, socks: &[PathSocket]) {
        for lane in &mut self.lanes {
            Self::flush_lane(lane, socks, &mut self.counters);
        }
    }

    fn flush_lane(lane: &mut Lane, socks: &[PathSocket], c: &mut TxCounters) {
        if lane.count == 0 {
            return;
        }
        if let (Some(s), Some(dest)) = (socks.get(lane.sock), lane.dest) {
            c.sends += 1;
            if s.send(dest, lane.ecn, &lane.buf, lane.segment).is_err() {
                c.send_errors += lane.count as u64;
            }
        }
        lane.buf.clear();
        lane.count = 0;
        lane.closed = false;
    }
}

/// Receive buffers: [`RX_SLOTS`] slots of 64 KiB, allocated once.
pub struct RxBufs {
    /// An anonymous mapping, not a `Vec`: the kernel zeroes its pages when they are first touched.
    /// A zeroed `Vec` of 512 KiB was a `memset` of all of it for every client (glibc's `calloc`
    /// serves it from the heap once a freed mapping of that size has raised its mmap threshold):
    /// 0.5 M instructions, a twelfth of a fresh DCQUIC call's set-up and handshake.
    slab: memmap2::MmapMut,
    meta: [RecvMeta; RX_SLOTS],
}

impl RxBufs {
    pub fn new() -> io::Result<RxBufs> {
        Ok(RxBufs {
            slab: memmap2::MmapMut::map_anon(RX_SLOTS * RX_SLOT_BYTES)?,
            meta: [RecvMeta::default(); RX_SLOTS],
        })
    }
}

impl RxBufs {
    /// Bytes of a datagram the last [`RxBufs::recv`] reported at `offset` (empty if out of range).
    pub fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        self.slab
            .get(offset..offset.saturating_add(len))
            .unwrap_or_default()
    }
}

/// One received datagram.
pub struct Datagram<'a> {
    pub from: SocketAddr,
    /// Where `bytes` starts in the receive slab (see [`RxBufs::bytes`]).
    pub offset: usize,
    pub ecn: Ecn,
    pub bytes: &'a [u8],
}

impl RxBufs {
    /// One `recvmmsg`; calls `each` for every datagram (GRO super-datagrams are split by their
    /// stride). Returns how many slots were filled (0 when nothing was waiting).
    pub fn recv(&mut self, s: &PathSocket, mut each: impl FnMut(Datagram<'_>)) -> io::Result<usize> {
        let n = {
            let mut chunks = self.slab.chunks_mut(RX_SLOT_BYTES);
            let mut slices: [IoSliceMut<'_>; RX_SLOTS] =
                std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or_default()));
            match s.state.recv((&s.socket).into(), &mut slices, &mut self.meta) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
                Err(e) => return Err(e),
            }
        };
        for (i, m) in self.meta[..n].iter().enumerate() {
            let slot = &self.slab[i * RX_SLOT_BYTES..][..m.len.min(RX_SLOT_BYTES)];
            let ecn = match m.ecn {
                Some(EcnCodepoint::Ce) => Ecn::Ce,
                Some(_) => Ecn::Ect0,
                None => Ecn::NotEct,
            };
            // An empty datagram is still one (chunks of nothing are none): the caller counts it.
            if slot.is_empty() {
                each(Datagram {
                    from: m.addr,
                    offset: i * RX_SLOT_BYTES,
                    ecn,
                    bytes: slot,
                });
                continue;
            }
            let stride = m.stride.max(1);
            for (j, bytes) in slot.chunks(stride).enumerate() {
                each(Datagram {
                    from: m.addr,
                    offset: i * RX_SLOT_BYTES + j * stride,
                    ecn,
                    bytes,
                });
            }
        }
        Ok(n)
    }
}

impl TxLanes {
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sending socket (as the lanes take it) and a receiving one on loopback, and its address.
    fn loopback_pair() -> ([PathSocket; 1], PathSocket, SocketAddr) {
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let tx = PathSocket::bind(loopback, 1 << 20).unwrap();
        let rx = PathSocket::bind(loopback, 1 << 20).unwrap();
        let to = rx.local_addr().unwrap();
        ([tx], rx, to)
    }

    /// What `each` makes of the first `n` datagrams `rx` receives (waiting a second at most).
    fn receive<T>(rx: &PathSocket, n: usize, mut each: impl FnMut(Datagram<'_>) -> T) -> Vec<T> {
        let mut bufs = RxBufs::new().unwrap();
        let mut got = Vec::new();
        for _ in 0..1000 {
            bufs.recv(rx, |d| got.push(each(d))).unwrap();
            if got.len() >= n {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        got
    }

    /// CloudBurst's sockets carry its class as their DSCP (the ECN bits stay clear for quinn-udp's
    /// per-datagram marks), and the other schemes' keep the default.
    #[test]
    fn cloudburst_sockets_carry_its_class_as_the_dscp() {
        let cfg = crate::NetConfig::default();
        assert_eq!(
            cfg.dscp(),
            1,
            "the paper's class, as the simulator's packets carry it"
        );
        let (tx, _, _) = loopback_pair();
        tx[0].set_dscp(cfg.dscp()).unwrap();
        assert_eq!(socket2::SockRef::from(&tx[0].socket).tos_v4().unwrap(), 1 << 2);
        let tcp = cfg.scheme_json("tcp", serde_json::Value::Null).unwrap();
        assert_eq!(tcp.dscp(), 0);
        let (plain, _, _) = loopback_pair();
        plain[0].set_dscp(tcp.dscp()).unwrap();
        assert_eq!(socket2::SockRef::from(&plain[0].socket).tos_v4().unwrap(), 0);
    }

    /// Ten equal datagrams and a shorter last one on one lane leave as one GSO send and arrive as
    /// eleven intact datagrams; a longer one after that starts a new batch.
    #[test]
    fn a_lane_batches_equal_datagrams_into_one_send_and_they_arrive_intact() {
        let (socks, rx, to) = loopback_pair();
        let mut lanes = TxLanes::new(1);
        let mut sent = Vec::new();
        for i in 0..10u8 {
            sent.push(vec![i; 1000]);
        }
        sent.push(vec![10; 300]);
        sent.push(vec![11; 1000]);
        for d in &sent {
            lanes.push(&socks, 0, 0, to, Ecn::NotEct, d);
        }
        lanes.flush(&socks);
        let gso = socks[0].max_segments() > 1;
        assert_eq!(lanes.counters.sends, if gso { 2 } else { 12 });
        assert_eq!(lanes.counters.datagrams, 12);
        assert_eq!(lanes.counters.send_errors, 0);
        assert_eq!(receive(&rx, sent.len(), |d| d.bytes.to_vec()), sent);
    }

    /// Datagrams leave with their ECN codepoint and arrive with it (`IP_TOS` out, `IP_RECVTOS` in);
    /// a change of codepoint starts a new batch.
    #[test]
    fn datagrams_carry_their_ecn_codepoint() {
        let (socks, rx, to) = loopback_pair();
        let mut lanes = TxLanes::new(1);
        let sent = [(Ecn::Ect0, 1u8), (Ecn::Ect0, 2), (Ecn::NotEct, 3), (Ecn::Ect0, 4)];
        for &(ecn, b) in &sent {
            lanes.push(&socks, 0, 0, to, ecn, &[b; 500]);
        }
        lanes.flush(&socks);
        let gso = socks[0].max_segments() > 1;
        assert_eq!(lanes.counters.sends, if gso { 3 } else { 4 });
        assert_eq!(receive(&rx, sent.len(), |d| (d.ecn, d.bytes[0])), sent);
    }

    /// A datagram of no bytes arrives as one (a flood test counted 6,463 of 6,464 datagrams: the
    /// empty one was received and never handed on).
    #[test]
    fn an_empty_datagram_arrives_as_one() {
        let (socks, rx, to) = loopback_pair();
        socks[0].socket.send_to(&[], to).unwrap();
        socks[0].socket.send_to(&[7], to).unwrap();
        assert_eq!(receive(&rx, 2, |d| d.bytes.to_vec()), [vec![], vec![7]]);
    }
}
