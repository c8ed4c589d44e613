//! IPv4 packets as the emulator sees them: the fields the port model and routing need, read from the
//! bytes with every length checked first (input comes from real stacks and must never panic the
//! loop), and the one rewrite the fabric makes: setting CE with the header checksum fixed.

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
            payload_len: (l4.len() - header_len) as u32,
        },
    })
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

#[cfg(test)]
mod tests;
