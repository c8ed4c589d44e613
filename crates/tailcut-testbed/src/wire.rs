//! IPv4 packets as the emulator sees them: the fields the port model and routing need, read from the
//! bytes with every length checked first (input comes from real stacks and must never panic the
//! loop), and the two rewrites the fabric makes: setting CE with the header checksum fixed, and
//! cutting the payload of a `tailcut-net` TCP-in-UDP datagram (CP).

use tailcut_proto::wire::{preamble, tcp_udp};
use tailcut_proto::{Addr, Ecn, FiveTuple, Header, Packet, Proto, Route};

/// Why a read packet cannot enter the fabric (each counted, never fatal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Not IPv4, or a header shorter than its own length fields say.
    Malformed,
    /// IPv4, but not TCP or UDP (ICMP, IGMP, ...): the port model keys on a 5-tuple.
    Protocol,
    /// A fragment after the first: it has no transport header to hash.
    Fragment,
    /// The destination is no address of the table.
    UnknownDst,
}

/// IPv4 protocol numbers carried (RFC 790).
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// Parses `bytes` (one IPv4 packet) into the simulator's packet record; `addr_of` maps an IPv4
/// address to its table entry. The ECN codepoint ECT(1) is treated as ECN-capable like ECT(0): the
/// port model only asks whether a packet is ECN-capable, and the bits on the wire are left as sent.
pub fn parse(bytes: &[u8], addr_of: impl Fn(u32) -> Option<Addr>) -> Result<Packet, Reject> {
    if bytes.len() < 20 || bytes[0] >> 4 != 4 {
        return Err(Reject::Malformed);
    }
    let ihl = usize::from(bytes[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
    if ihl < 20 || total < ihl || total > bytes.len() {
        return Err(Reject::Malformed);
    }
    let frag_offset = u16::from_be_bytes([bytes[6], bytes[7]]) & 0x1fff;
    if frag_offset != 0 {
        return Err(Reject::Fragment);
    }
    let proto = match bytes[9] {
        IPPROTO_TCP => Proto::Tcp,
        IPPROTO_UDP => Proto::Udp,
        _ => return Err(Reject::Protocol),
    };
    let l4 = &bytes[ihl..total];
    let header_len = match proto {
        Proto::Tcp if l4.len() >= 20 => usize::from(l4[12] >> 4) * 4,
        Proto::Udp if l4.len() >= 8 => 8,
        _ => return Err(Reject::Malformed),
    };
    if header_len < 8 || header_len > l4.len() {
        return Err(Reject::Malformed);
    }
    let ip = |o: usize| u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    let dst = addr_of(ip(16)).ok_or(Reject::UnknownDst)?;
    // A source outside the table (no NIC has it) still hashes consistently; it maps to an address
    // no route uses, so only the destination decides forwarding.
    let src = addr_of(ip(12)).unwrap_or(Addr(u32::MAX));
    Ok(Packet {
        tuple: FiveTuple {
            src,
            dst,
            src_port: u16::from_be_bytes([l4[0], l4[1]]),
            dst_port: u16::from_be_bytes([l4[2], l4[3]]),
            proto,
        },
        size_bytes: total as u32,
        ecn: ecn_of(bytes[1]),
        class: bytes[1] >> 2,
        priority: 0,
        route: Route::Ecmp,
        trimmed: false,
        header: Header::Datagram {
            payload_len: match proto {
                Proto::Udp => cuttable_bytes(&l4[header_len..]),
                Proto::Tcp => (l4.len() - header_len) as u32,
            },
        },
    })
}

/// The bytes of a UDP payload that a trimming port would cut, which is what the port model calls
/// the payload (a packet without any is admitted whole as a header, never counted as a cut). For a
/// `tailcut-net` TCP-in-UDP segment that is the segment's data, so a pure ACK or PACK is a header
/// as in the simulator; a control datagram is all header, but for an echo, which carries an
/// engine's datagram (only while a loaded server checks addresses) and is payload as unparsed
/// bytes are. Anything else (CloudBurst's symbols, QUIC, plain UDP) is payload after the UDP
/// header, as a switch that does not parse it sees it.
fn cuttable_bytes(udp_payload: &[u8]) -> u32 {
    match preamble::Preamble::parse_control(udp_payload) {
        Some((_, preamble::Control::Echo { .. })) => return udp_payload.len() as u32,
        Some(_) => return 0,
        None => {}
    }
    let segment = preamble::Preamble::parse(udp_payload)
        .filter(|(p, _)| preamble::carries_tcp_udp(p.scheme))
        .and_then(|(_, rest)| tcp_udp::parse(rest).ok());
    match segment {
        Some(seg) => seg.payload.len() as u32,
        None => udp_payload.len() as u32,
    }
}

/// The ECN field of a TOS byte (RFC 3168 Sec. 5): 10 = ECT(0), 01 = ECT(1), 11 = CE.
pub fn ecn_of(tos: u8) -> Ecn {
    match tos & 3 {
        0 => Ecn::NotEct,
        3 => Ecn::Ce,
        _ => Ecn::Ect0,
    }
}

/// Sets the CE codepoint of the IPv4 packet in `bytes` and updates its header checksum incrementally
/// (RFC 1624 Eqn. 3), as a router marking a packet must (RFC 3168 Sec. 5). Returns whether the packet
/// changed (false if it was already CE or too short to be one of ours).
pub fn set_ce(bytes: &mut [u8]) -> bool {
    if bytes.len() < 20 || bytes[1] & 3 == 3 {
        return false;
    }
    let old = u16::from_be_bytes([bytes[0], bytes[1]]);
    bytes[1] |= 3;
    let new = u16::from_be_bytes([bytes[0], bytes[1]]);
    let hc = u16::from_be_bytes([bytes[10], bytes[11]]);
    // HC' = ~(~HC + ~m + m')
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    let out = !(sum as u16);
    bytes[10..12].copy_from_slice(&out.to_be_bytes());
    true
}

/// The IPv4 header checksum of `header` computed from scratch (RFC 791), with the checksum field
/// taken as zero. Used by the tests to check [`set_ce`]'s incremental update.
pub fn header_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for (i, pair) in header.chunks(2).enumerate() {
        if i == 5 {
            continue;
        }
        let w = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(w);
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Whether the IPv4 header `header` (its full `ihl` bytes) carries a valid checksum, checked as a
/// receiver does (RFC 1071: the one's complement sum of all its 16-bit words, checksum included, is
/// 0xffff), so either representation of zero passes.
pub fn header_checksum_valid(header: &[u8]) -> bool {
    let mut sum: u32 = 0;
    for pair in header.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// What a CP switch does to a cut packet, for the one kind a host can use: a `tailcut-net` UDP
/// datagram carrying a TCP-in-UDP segment (the runtime's preamble with a TCP or MPTCP scheme byte).
/// Keeps the IPv4 and UDP headers, the preamble and the segment's header, sets the segment's trimmed
/// bit, and rewrites the IPv4 total length (header checksum fixed) and the UDP length (checksum
/// zeroed, which IPv4 allows). Returns false, and leaves `bytes` alone, for anything else (a kernel
/// TCP segment has no receiver for a cut packet).
pub fn cut_encapsulated(bytes: &mut Vec<u8>) -> bool {
    if bytes.len() < 20 || bytes[0] >> 4 != 4 || bytes[9] != IPPROTO_UDP {
        return false;
    }
    let udp = usize::from(bytes[0] & 0x0f) * 4;
    let seg = udp + 8 + preamble::PREAMBLE_BYTES;
    let ours = bytes
        .get(udp + 8..)
        .and_then(preamble::Preamble::parse)
        .is_some_and(|(p, _)| preamble::carries_tcp_udp(p.scheme));
    if udp < 20 || !ours || !tcp_udp::trim_from(bytes, seg) {
        return false;
    }
    let total = bytes.len() as u16;
    bytes[2..4].copy_from_slice(&total.to_be_bytes());
    bytes[udp + 4..udp + 6].copy_from_slice(&(total - udp as u16).to_be_bytes());
    bytes[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
    fix_header_checksum(bytes)
}

/// [`cut_encapsulated`]'s properties on any bytes: it never panics; when it cuts, the result is shorter,
/// its IPv4 total length is its length, its header checksum is valid, and after the preamble comes a
/// segment that parses, trimmed, with the header it had; when it does not, the bytes are unchanged.
pub fn check_cut(bytes: &[u8]) {
    let mut cut = bytes.to_vec();
    if !cut_encapsulated(&mut cut) {
        assert_eq!(cut, bytes, "cut_encapsulated changed bytes it says it left alone");
        return;
    }
    assert!(cut.len() <= bytes.len());
    assert_eq!(usize::from(u16::from_be_bytes([cut[2], cut[3]])), cut.len());
    let ihl = usize::from(cut[0] & 0x0f) * 4;
    assert!(header_checksum_valid(&cut[..ihl]));
    let at = ihl + 8 + preamble::PREAMBLE_BYTES;
    let after = tcp_udp::parse(&cut[at..]).expect("a cut segment parses");
    let before = tcp_udp::parse(&bytes[at..]).expect("it parsed before the cut");
    assert!(after.trimmed && after.payload.is_empty());
    assert_eq!(after.header, before.header);
}

/// Writes a valid header checksum into `bytes` if they hold an IPv4 header of a plausible length
/// (`ihl` >= 5 words, all present); returns whether it did. For the fuzz target and tests, which
/// could otherwise hardly reach the checksum property of [`set_ce`].
pub fn fix_header_checksum(bytes: &mut [u8]) -> bool {
    if bytes.len() < 20 {
        return false;
    }
    let ihl = usize::from(bytes[0] & 0x0f) * 4;
    if ihl < 20 || ihl > bytes.len() {
        return false;
    }
    let c = header_checksum(&bytes[..ihl]);
    bytes[10..12].copy_from_slice(&c.to_be_bytes());
    true
}

/// The address table the checks use: every 10.0.0.0/8 address is a host address (its low 16 bits the
/// index), anything else unknown, so both outcomes of the lookup are reached.
pub fn check_table(ip: u32) -> Option<Addr> {
    (ip >> 24 == 10).then_some(Addr(ip & 0xffff))
}

/// The properties of the fabric's packet path on any bytes, asserted (a failure panics): shared by the
/// cargo-fuzz target (`crates/tailcut-testbed/fuzz`) and the stable proptest.
///
/// - [`parse`] never panics, and what it accepts agrees with the bytes: `size_bytes` is the IPv4 total
///   length (within the buffer), the ECN codepoint and class are the TOS byte's, the payload fits.
/// - [`set_ce`] never panics; when it rewrites, it changes only the ECN bits (to CE) and the checksum
///   field, a header whose checksum was valid stays valid, parsing gives the same record with
///   `ecn = Ce`, and a second mark changes nothing. When it does not rewrite, the bytes are unchanged.
/// - [`cut_encapsulated`] as [`check_cut`] says.
pub fn check_packet(bytes: &[u8]) {
    check_cut(bytes);
    let parsed = parse(bytes, check_table);
    if let Ok(p) = &parsed {
        let total = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
        assert_eq!(p.size_bytes as usize, total);
        assert!(total <= bytes.len());
        assert_eq!(p.ecn, ecn_of(bytes[1]));
        assert_eq!(p.class, bytes[1] >> 2);
        assert!((p.payload_len() as usize) < total);
    }
    let mut marked = bytes.to_vec();
    let changed = set_ce(&mut marked);
    if !changed {
        assert_eq!(marked, bytes, "set_ce changed bytes it says it left alone");
        return;
    }
    assert_eq!(marked[1] & 3, 3, "CE set");
    assert_ne!(bytes[1] & 3, 3, "a CE packet is not marked again");
    assert_eq!(marked[1] >> 2, bytes[1] >> 2, "DSCP kept");
    for (i, (a, b)) in bytes.iter().zip(&marked).enumerate() {
        if ![1, 10, 11].contains(&i) {
            assert_eq!(a, b, "set_ce changed byte {i}");
        }
    }
    let ihl = usize::from(bytes[0] & 0x0f) * 4;
    if (20..=bytes.len()).contains(&ihl) && header_checksum_valid(&bytes[..ihl]) {
        assert!(
            header_checksum_valid(&marked[..ihl]),
            "a valid header checksum became invalid"
        );
    }
    if let Ok(p) = parsed {
        let again = parse(&marked, check_table).expect("a marked packet still parses");
        assert_eq!(again.ecn, Ecn::Ce);
        assert_eq!(
            Packet { ecn: p.ecn, ..again },
            p,
            "marking changed the parsed record beyond its ECN codepoint"
        );
    }
    assert!(!set_ce(&mut marked), "a second mark changes nothing");
}

#[cfg(test)]
mod tests;
