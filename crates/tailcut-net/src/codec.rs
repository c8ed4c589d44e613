//! How each scheme's engine packets travel in the datagram after the runtime's preamble, and which
//! path (socket) a packet leaves on. One implementation per engine type.
//!
//! - CloudBurst: the engine's own bytes (Fig. 4 header and symbol); every packet names its path.
//! - TCP (and the schemes built on it): the TCP-in-UDP encapsulation (`tailcut_proto::wire::tcp_udp`,
//!   `docs/net.md`) of the packet's `TcpHeader` and the payload the engine wrote; one path, or the
//!   spraying label.
//! - MPTCP (and FUSO): the same encapsulation (the DSS travels in it); sub-flow `i` is path `i`. The
//!   engine numbers its sub-flows by port (sub-flow `i` uses its base port + `i`); the runtime gives
//!   both ends base port 0, so a sub-flow's port is its path.

use crate::frame::{SCHEME_CLOUDBURST, SCHEME_MPTCP, SCHEME_TCP};
use tailcut_proto::cloudburst::CloudBurstEndpoint;
use tailcut_proto::mptcp::MptcpEndpoint;
use tailcut_proto::tcp::TcpEndpoint;
use tailcut_proto::wire::tcp_udp;
use tailcut_proto::{Ecn, Engine, FiveTuple, Header, Packet, Route};

pub trait Codec: Engine {
    /// The preamble's scheme byte.
    const SCHEME: u8;
    /// Datagrams start with the runtime's preamble; without it (DCQUIC) they are the engine's bytes
    /// alone, as any peer of the protocol sends them.
    const PREAMBLE: bool = true;

    /// The path (client socket) `pkt` leaves on, before it is taken modulo the sockets.
    fn path_of(pkt: &Packet) -> usize {
        match pkt.route {
            Route::Path(p) => p as usize,
            Route::Ecmp => 0,
        }
    }

    /// Appends the datagram bytes of `pkt`, whose payload the engine wrote to `payload`; false if the
    /// packet has no encoding (it is then not sent).
    fn encode(pkt: &Packet, payload: &[u8], out: &mut Vec<u8>) -> bool;

    /// Most bytes [`Codec::encode_head`] puts before the payload. Not 0: the engine appends its
    /// payload to a buffer that already holds this much room (and the preamble's), and the header
    /// is written into the room in front of it, so the payload is not copied again.
    const HEAD_ROOM: usize = 0;

    /// Appends the bytes of `pkt` that go before its `carried` payload bytes (at most
    /// [`Codec::HEAD_ROOM`]); false if the packet has no encoding. Only called when `HEAD_ROOM > 0`.
    fn encode_head(_pkt: &Packet, _carried: usize, _out: &mut Vec<u8>) -> bool {
        false
    }

    /// The packet and the engine's bytes of a datagram that arrived on `path` with `ecn`; `None` if
    /// malformed.
    fn decode(bytes: &[u8], ecn: Ecn, path: u8) -> Option<(Packet, &[u8])>;
}

impl Codec for CloudBurstEndpoint {
    const SCHEME: u8 = SCHEME_CLOUDBURST;

    fn encode(_pkt: &Packet, payload: &[u8], out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(payload);
        true
    }

    /// The engine parses its own header (and counts what does not parse).
    fn decode(bytes: &[u8], ecn: Ecn, _path: u8) -> Option<(Packet, &[u8])> {
        let pkt = Packet {
            ecn,
            ..Packet::default()
        };
        Some((pkt, bytes))
    }
}

impl Codec for TcpEndpoint {
    const HEAD_ROOM: usize = tcp_udp::MAX_HEADER_BYTES;
    const SCHEME: u8 = SCHEME_TCP;

    fn encode(pkt: &Packet, payload: &[u8], out: &mut Vec<u8>) -> bool {
        encode_tcp(pkt, payload, out)
    }

    fn encode_head(pkt: &Packet, carried: usize, out: &mut Vec<u8>) -> bool {
        encode_tcp_head(pkt, carried, out)
    }

    fn decode(bytes: &[u8], ecn: Ecn, _path: u8) -> Option<(Packet, &[u8])> {
        decode_tcp(bytes, ecn, FiveTuple::default())
    }
}

impl Codec for MptcpEndpoint {
    const HEAD_ROOM: usize = tcp_udp::MAX_HEADER_BYTES;
    const SCHEME: u8 = SCHEME_MPTCP;

    fn path_of(pkt: &Packet) -> usize {
        usize::from(pkt.tuple.src_port)
    }

    fn encode(pkt: &Packet, payload: &[u8], out: &mut Vec<u8>) -> bool {
        encode_tcp(pkt, payload, out)
    }

    fn encode_head(pkt: &Packet, carried: usize, out: &mut Vec<u8>) -> bool {
        encode_tcp_head(pkt, carried, out)
    }

    /// The sub-flow is the path: its ports are the path's number.
    fn decode(bytes: &[u8], ecn: Ecn, path: u8) -> Option<(Packet, &[u8])> {
        let port = u16::from(path);
        let tuple = FiveTuple {
            src_port: port,
            dst_port: port,
            ..FiveTuple::default()
        };
        decode_tcp(bytes, ecn, tuple)
    }
}

fn encode_tcp(pkt: &Packet, payload: &[u8], out: &mut Vec<u8>) -> bool {
    pkt.tcp()
        .is_some_and(|h| tcp_udp::build(h, pkt.trimmed, payload, out).is_ok())
}

fn encode_tcp_head(pkt: &Packet, carried: usize, out: &mut Vec<u8>) -> bool {
    pkt.tcp()
        .is_some_and(|h| tcp_udp::build_header(h, pkt.trimmed, carried, out).is_ok())
}

fn decode_tcp(bytes: &[u8], ecn: Ecn, tuple: FiveTuple) -> Option<(Packet, &[u8])> {
    let seg = tcp_udp::parse(bytes).ok()?;
    let pkt = Packet {
        tuple,
        ecn,
        size_bytes: bytes.len() as u32,
        trimmed: seg.trimmed,
        header: Header::Tcp(seg.header),
        ..Packet::default()
    };
    Some((pkt, seg.payload))
}
