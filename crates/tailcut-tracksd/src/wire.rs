//! IPv4 or IPv6 TCP as the agent sees it: the header fields the T-RACKs shim reads, parsed from a packet's
//! first bytes (NFQUEUE copies only the headers, so the payload is usually absent and its length comes
//! from the IP total length), and the one packet the agent writes: a spoofed ACK toward the local TCP.
//!
//! Every length is checked before a field is read: the input is whatever a real stack or a hostile
//! peer sent, and a packet this module rejects is passed to the kernel untouched.

use crate::addr6::V6Addrs;
use tailcut_proto::{Addr, FiveTuple, Header, Packet, Proto, Seq, TcpFlags, TcpHeader};

/// IP protocol number (IPv6: next header) of TCP (RFC 790).
const IPPROTO_TCP: u8 = 6;
/// The fixed IPv6 header (RFC 8200 Sec. 3).
const IPV6_HEADER: usize = 40;

/// TCP option kinds (RFC 9293 Sec. 3.2, RFC 2018, RFC 7323).
const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WSCALE: u8 = 3;
const OPT_SACK_PERMITTED: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMPS: u8 = 8;

/// Why a packet is not handed to the shim (each is counted; the packet passes unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// The named field is inconsistent with the bytes present.
    Malformed(&'static str),
    /// IPv4 but not TCP.
    NotTcp,
    /// A fragment after the first: no TCP header to read.
    Fragment,
}

/// A TCP segment as the shim sees it, plus what the shim's `Packet` has no room for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Addresses are the IPv4 addresses themselves (`Addr(u32)`, host byte order). `window` holds the
    /// 16-bit field as a later segment of the connection would carry it: the raw field, except on a
    /// SYN-ACK with a window scale option, whose (never scaled, RFC 7323 Sec. 2.2) window is shifted
    /// down by that scale. The shim copies it into spoofed ACKs, which carry no SYN and are scaled by
    /// the local TCP, so a spoof made from the SYN-ACK advertises the window the peer offered.
    pub packet: Packet,
    /// The MSS option (SYN and SYN-ACK only).
    pub mss: Option<u16>,
    pub sack_permitted: bool,
    /// Whether the segment carried the timestamps option (its values are in `packet`).
    pub timestamps: bool,
    /// An IPv6 packet's source and destination addresses (`packet` then has placeholders).
    pub v6: Option<([u8; 16], [u8; 16])>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parses the IPv4 or IPv6 packet whose first bytes are `bytes` (possibly fewer than its total
/// length). An IPv6 packet's addresses are in [`Segment::v6`]; its `packet` carries placeholder
/// addresses (0) until the caller names them ([`crate::addr6::V6Addrs`]). IPv6 extension headers
/// are not followed: such a packet is `NotTcp` and passes untouched.
pub fn parse(bytes: &[u8]) -> Result<Segment, Reject> {
    let (ihl, total, src, dst, v6) = match bytes.first().map(|b| b >> 4) {
        Some(4) => {
            if bytes.len() < 20 {
                return Err(Reject::Malformed("ipv4 header length"));
            }
            let ihl = usize::from(bytes[0] & 0x0f) * 4;
            if ihl < 20 || ihl > bytes.len() {
                return Err(Reject::Malformed("ipv4 ihl"));
            }
            let total = usize::from(be16(bytes, 2));
            if total < ihl {
                return Err(Reject::Malformed("ipv4 total length"));
            }
            if bytes[9] != IPPROTO_TCP {
                return Err(Reject::NotTcp);
            }
            if be16(bytes, 6) & 0x1fff != 0 {
                return Err(Reject::Fragment);
            }
            (ihl, total, Addr(be32(bytes, 12)), Addr(be32(bytes, 16)), None)
        }
        Some(6) => {
            if bytes.len() < IPV6_HEADER {
                return Err(Reject::Malformed("ipv6 header length"));
            }
            if bytes[6] != IPPROTO_TCP {
                return Err(Reject::NotTcp);
            }
            let total = IPV6_HEADER + usize::from(be16(bytes, 4));
            let addr = |at: usize| -> [u8; 16] { bytes[at..at + 16].try_into().expect("16 bytes") };
            (IPV6_HEADER, total, Addr(0), Addr(0), Some((addr(8), addr(24))))
        }
        _ => return Err(Reject::Malformed("ip version")),
    };
    let tcp = &bytes[ihl..];
    if tcp.len() < 20 || total - ihl < 20 {
        return Err(Reject::Malformed("tcp header length"));
    }
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < 20 || doff > tcp.len() || doff > total - ihl {
        return Err(Reject::Malformed("tcp data offset"));
    }
    let mut seg = Segment {
        packet: Packet::default(),
        mss: None,
        sack_permitted: false,
        timestamps: false,
        v6,
    };
    let mut h = TcpHeader {
        seq: Seq(be32(tcp, 4)),
        ack: Seq(be32(tcp, 8)),
        flags: TcpFlags(tcp[13]),
        window: u32::from(be16(tcp, 14)),
        payload_len: (total - ihl - doff) as u32,
        ..TcpHeader::default()
    };
    let wscale = parse_options(&tcp[20..doff], &mut h, &mut seg)?;
    if let Some(w) = wscale {
        if h.flags.contains(TcpFlags::SYN) && h.flags.contains(TcpFlags::ACK) {
            h.window >>= w;
        }
    }
    seg.packet = Packet {
        tuple: FiveTuple {
            src,
            dst,
            src_port: be16(tcp, 0),
            dst_port: be16(tcp, 2),
            proto: Proto::Tcp,
        },
        size_bytes: total as u32,
        header: Header::Tcp(h),
        ..Packet::default()
    };
    Ok(seg)
}

/// The options area (RFC 9293 Sec. 3.1): single-byte EOL and NOP, else kind, length, value. An option
/// whose length is short for its kind or runs past the header rejects the packet: the kernel will
/// judge it, the shim must not act on half-read values.
/// Returns the window scale option's shift, if any (capped at 14, RFC 7323 Sec. 2.3).
fn parse_options(mut opts: &[u8], h: &mut TcpHeader, seg: &mut Segment) -> Result<Option<u32>, Reject> {
    let mut wscale = None;
    while let Some(&kind) = opts.first() {
        match kind {
            OPT_EOL => break,
            OPT_NOP => {
                opts = &opts[1..];
                continue;
            }
            _ => {}
        }
        let len = usize::from(*opts.get(1).ok_or(Reject::Malformed("tcp option length"))?);
        if len < 2 || len > opts.len() {
            return Err(Reject::Malformed("tcp option length"));
        }
        let val = &opts[2..len];
        match kind {
            OPT_MSS if val.len() == 2 => seg.mss = Some(be16(val, 0)),
            OPT_WSCALE if val.len() == 1 => wscale = Some(u32::from(val[0].min(14))),
            OPT_SACK_PERMITTED if val.is_empty() => seg.sack_permitted = true,
            OPT_SACK if val.len().is_multiple_of(8) => {
                for b in val.chunks_exact(8) {
                    h.sack.push(Seq(be32(b, 0)), Seq(be32(b, 4)));
                }
            }
            OPT_TIMESTAMPS if val.len() == 8 => {
                h.ts_val = be32(val, 0);
                h.ts_ecr = be32(val, 4);
                seg.timestamps = true;
            }
            OPT_MSS | OPT_WSCALE | OPT_SACK_PERMITTED | OPT_SACK | OPT_TIMESTAMPS => {
                return Err(Reject::Malformed("tcp option length"));
            }
            // Unknown options (window scale, MPTCP, TCP-AO, ...) are skipped by their length.
            _ => {}
        }
        opts = &opts[len..];
    }
    Ok(wscale)
}

/// The Internet checksum (RFC 1071) over `parts`, each summed as if concatenated: every part but the
/// last has an even length here.
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u64 = 0;
    for part in parts {
        let mut words = part.chunks_exact(2);
        for w in &mut words {
            sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            sum += u64::from(*last) << 8;
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The TCP header of the spoofed ACK `pkt`, checksum zero: ports, sequence numbers, flags, window,
/// and the options (timestamps when `timestamps`, then as many of the SACK blocks as fit).
fn tcp_header(pkt: &Packet, timestamps: bool) -> Option<Vec<u8>> {
    let h = pkt.tcp()?;
    let mut opts: Vec<u8> = Vec::with_capacity(40);
    if timestamps {
        opts.extend_from_slice(&[OPT_NOP, OPT_NOP, OPT_TIMESTAMPS, 10]);
        opts.extend_from_slice(&h.ts_val.to_be_bytes());
        opts.extend_from_slice(&h.ts_ecr.to_be_bytes());
    }
    // 40 option bytes: 3 blocks fit beside the timestamps, 4 without (RFC 2018 Sec. 3).
    let room = (40 - opts.len() - 4) / 8;
    let blocks: Vec<(Seq, Seq)> = h.sack.iter().take(room).collect();
    if !blocks.is_empty() {
        opts.extend_from_slice(&[OPT_NOP, OPT_NOP, OPT_SACK, (2 + 8 * blocks.len()) as u8]);
        for (l, r) in blocks {
            opts.extend_from_slice(&l.0.to_be_bytes());
            opts.extend_from_slice(&r.0.to_be_bytes());
        }
    }
    let mut t = vec![0u8; 20 + opts.len()];
    t[0..2].copy_from_slice(&pkt.tuple.src_port.to_be_bytes());
    t[2..4].copy_from_slice(&pkt.tuple.dst_port.to_be_bytes());
    t[4..8].copy_from_slice(&h.seq.0.to_be_bytes());
    t[8..12].copy_from_slice(&h.ack.0.to_be_bytes());
    t[12] = ((t.len() / 4) as u8) << 4;
    t[13] = h.flags.0;
    t[14..16].copy_from_slice(&(h.window.min(0xffff) as u16).to_be_bytes());
    t[20..].copy_from_slice(&opts);
    Some(t)
}

/// Writes the spoofed ACK `pkt` (from the shim's injection queue: the peer's last ACK with its ACK
/// number, flags and SACK blocks set by the shim) as IPv4+TCP bytes with both checksums. `timestamps`
/// says whether the connection uses the timestamps option: the kernel drops a segment without it on
/// such a connection, and the shim keeps the template's values (RFC 7323 Sec. 5.3 only needs them not
/// to go backwards). Returns `None` for a packet without a TCP header.
pub fn build_ack(pkt: &Packet, timestamps: bool) -> Option<Vec<u8>> {
    let t = tcp_header(pkt, timestamps)?;
    let total = 20 + t.len();
    let mut b = vec![0u8; 20];
    // IPv4 header: DF set, TTL 64, ID 0 (the kernel fills it for IP_HDRINCL sockets).
    b[0] = 0x45;
    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    b[6] = 0x40;
    b[8] = 64;
    b[9] = IPPROTO_TCP;
    b[12..16].copy_from_slice(&pkt.tuple.src.0.to_be_bytes());
    b[16..20].copy_from_slice(&pkt.tuple.dst.0.to_be_bytes());
    let ip_sum = checksum(&[&b[..20]]);
    b[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    // RFC 9293 Sec. 3.1: the checksum covers a pseudo-header of addresses, protocol and length.
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&pkt.tuple.src.0.to_be_bytes());
    pseudo[4..8].copy_from_slice(&pkt.tuple.dst.0.to_be_bytes());
    pseudo[9] = IPPROTO_TCP;
    pseudo[10..12].copy_from_slice(&(t.len() as u16).to_be_bytes());
    b.extend_from_slice(&t);
    let tcp_sum = checksum(&[&pseudo, &b[20..]]);
    b[36..38].copy_from_slice(&tcp_sum.to_be_bytes());
    Some(b)
}

/// [`build_ack`] for an IPv6 connection between `src` and `dst` (the shim's packet carries address
/// ids): hop limit 64, no flow label, the TCP checksum over the IPv6 pseudo-header (RFC 8200 Sec.
/// 8.1).
pub fn build_ack_v6(pkt: &Packet, src: [u8; 16], dst: [u8; 16], timestamps: bool) -> Option<Vec<u8>> {
    let t = tcp_header(pkt, timestamps)?;
    let mut b = vec![0u8; IPV6_HEADER];
    b[0] = 0x60;
    b[4..6].copy_from_slice(&(t.len() as u16).to_be_bytes());
    b[6] = IPPROTO_TCP;
    b[7] = 64;
    b[8..24].copy_from_slice(&src);
    b[24..40].copy_from_slice(&dst);
    let mut pseudo = [0u8; 40];
    pseudo[0..16].copy_from_slice(&src);
    pseudo[16..32].copy_from_slice(&dst);
    pseudo[32..36].copy_from_slice(&(t.len() as u32).to_be_bytes());
    pseudo[39] = IPPROTO_TCP;
    b.extend_from_slice(&t);
    let tcp_sum = checksum(&[&pseudo, &b[IPV6_HEADER..]]);
    b[IPV6_HEADER + 16..IPV6_HEADER + 18].copy_from_slice(&tcp_sum.to_be_bytes());
    Some(b)
}

/// Makes the headers `ip` (as [`build_ack`] or [`build_ack_v6`] write them) claim `payload` bytes
/// after them in the IP length field, capped at its 16 bits: a data segment as a header-only copy
/// shows it. The IPv4 header checksum is not updated.
pub fn claim_payload(ip: &mut [u8], payload: usize) {
    if ip[0] >> 4 == 6 {
        let len = (ip.len() - IPV6_HEADER + payload).min(0xffff);
        ip[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    } else {
        let total = (ip.len() + payload).min(0xffff);
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    }
}

/// The bytes the agent injects for the shim's packet `pkt`: the timestamps option when the template
/// carried timestamps (an ACK copied from a connection that uses them has a non-zero value or echo),
/// as the connection expects. An IPv6 connection's addresses come from `addrs`; `None` when the
/// packet has no TCP header or names an IPv6 address the table no longer holds.
pub fn spoofed_ack(pkt: &Packet, addrs: &V6Addrs) -> Option<Vec<u8>> {
    let h = pkt.tcp()?;
    let timestamps = h.ts_val != 0 || h.ts_ecr != 0;
    if V6Addrs::is_id(pkt.tuple.src) || V6Addrs::is_id(pkt.tuple.dst) {
        let (src, dst) = (addrs.addr(pkt.tuple.src)?, addrs.addr(pkt.tuple.dst)?);
        return build_ack_v6(pkt, src, dst, timestamps);
    }
    build_ack(pkt, timestamps)
}

#[cfg(test)]
mod tests;
