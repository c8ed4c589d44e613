use super::*;
use proptest::prelude::*;

/// A UDP packet 10.1.0.1:5000 -> 10.1.0.2:6000 with `payload` bytes and TOS `tos`, valid checksum.
fn udp(tos: u8, payload: usize) -> Vec<u8> {
    let total = 20 + 8 + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[1] = tos;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = IPPROTO_UDP;
    p[12..16].copy_from_slice(&[10, 1, 0, 1]);
    p[16..20].copy_from_slice(&[10, 1, 0, 2]);
    p[20..22].copy_from_slice(&5000u16.to_be_bytes());
    p[22..24].copy_from_slice(&6000u16.to_be_bytes());
    let c = header_checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

fn table(ip: u32) -> Option<Addr> {
    match ip {
        0x0a01_0001 => Some(Addr(0)),
        0x0a01_0002 => Some(Addr(1)),
        _ => None,
    }
}

#[test]
fn udp_packet_becomes_the_simulator_record() {
    let p = parse(&udp(0x02, 100), table).unwrap();
    assert_eq!(p.tuple.src, Addr(0));
    assert_eq!(p.tuple.dst, Addr(1));
    assert_eq!((p.tuple.src_port, p.tuple.dst_port), (5000, 6000));
    assert_eq!(p.tuple.proto, Proto::Udp);
    assert_eq!(p.size_bytes, 128);
    assert_eq!(p.ecn, Ecn::Ect0);
    assert_eq!(p.payload_len(), 100);
}

#[test]
fn ecn_codepoints_and_rejections() {
    assert_eq!(ecn_of(0), Ecn::NotEct);
    assert_eq!(ecn_of(1), Ecn::Ect0, "ECT(1) is ECN-capable");
    assert_eq!(ecn_of(2), Ecn::Ect0);
    assert_eq!(ecn_of(3), Ecn::Ce);
    let mut p = udp(0, 10);
    p[16..20].copy_from_slice(&[10, 9, 9, 9]);
    assert_eq!(parse(&p, table), Err(Reject::UnknownDst));
    let mut p = udp(0, 10);
    p[9] = 1;
    assert_eq!(parse(&p, table), Err(Reject::Protocol));
    let mut p = udp(0, 10);
    p[7] = 1;
    assert_eq!(parse(&p, table), Err(Reject::Fragment));
    assert_eq!(parse(&udp(0, 10)[..27], table), Err(Reject::Malformed));
}

/// A UDP packet whose payload is `preamble(scheme) | segment`, lengths and checksum valid.
fn encapsulated(scheme: u8, payload_len: u32) -> Vec<u8> {
    let h = tailcut_proto::TcpHeader {
        payload_len,
        ..tailcut_proto::TcpHeader::default()
    };
    let mut seg = Vec::new();
    let pre = preamble::Preamble {
        scheme,
        path: 0,
        association: 7,
    };
    pre.write(&mut seg);
    tcp_udp::build(&h, false, &vec![0xab; payload_len as usize], &mut seg).unwrap();
    let mut p = udp(0x02, seg.len());
    p[28..].copy_from_slice(&seg);
    p[24..26].copy_from_slice(&((8 + seg.len()) as u16).to_be_bytes());
    p
}

#[test]
fn a_cut_encapsulated_segment_keeps_its_headers_and_says_it_was_cut() {
    let mut p = encapsulated(preamble::SCHEME_TCP, 1000);
    assert!(cut_encapsulated(&mut p));
    // IPv4 20 + UDP 8 + preamble 12 + the segment's 28-byte header.
    assert_eq!(p.len(), 68);
    assert_eq!(u16::from_be_bytes([p[2], p[3]]), 68);
    assert_eq!(u16::from_be_bytes([p[24], p[25]]), 48);
    assert!(header_checksum_valid(&p[..20]));
    let seg = tcp_udp::parse(&p[40..]).unwrap();
    assert!(seg.trimmed);
    assert_eq!(seg.header.payload_len, 1000, "the receiver learns what was cut");
    let rec = parse(&p, table).unwrap();
    assert_eq!(rec.payload_len(), 0, "a cut segment has nothing left to cut");
    // Anything else is left alone: CloudBurst's datagrams, plain UDP, a segment already cut.
    for mut other in [encapsulated(preamble::SCHEME_CLOUDBURST, 1000), udp(0, 100)] {
        let before = other.clone();
        assert!(!cut_encapsulated(&mut other));
        assert_eq!(other, before);
    }
}

/// A port cuts what the receiver can do without: a segment's data. A pure ACK (or PACK) and a
/// control datagram are headers, admitted whole like the simulator's ACKs, never counted as cuts; a
/// datagram the fabric does not parse is payload after its UDP header.
#[test]
fn only_a_segments_data_is_payload_to_a_trimming_port() {
    assert_eq!(
        parse(&encapsulated(preamble::SCHEME_TCP, 1000), table)
            .unwrap()
            .payload_len(),
        1000
    );
    assert_eq!(
        parse(&encapsulated(preamble::SCHEME_MPTCP, 0), table)
            .unwrap()
            .payload_len(),
        0
    );
    let mut close = Vec::new();
    preamble::Preamble {
        scheme: preamble::SCHEME_TCP,
        path: 0,
        association: 7,
    }
    .write_control(preamble::Control::Close, &mut close);
    let mut p = udp(0, close.len());
    p[28..].copy_from_slice(&close);
    assert_eq!(parse(&p, table).unwrap().payload_len(), 0);
    let symbols = encapsulated(preamble::SCHEME_CLOUDBURST, 1000);
    assert_eq!(
        parse(&symbols, table).unwrap().payload_len() as usize,
        symbols.len() - 28
    );
}

#[test]
fn ce_mark_keeps_the_header_checksum_valid() {
    let mut p = udp(0x02, 0);
    assert!(set_ce(&mut p));
    assert_eq!(p[1] & 3, 3);
    assert_eq!(u16::from_be_bytes([p[10], p[11]]), header_checksum(&p[..20]));
    assert!(!set_ce(&mut p), "already CE");
}

proptest! {
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse(&bytes, table);
    }

    #[test]
    fn incremental_ce_equals_full_checksum(tos in 0u8..=255, ttl in any::<u8>(), id in any::<u16>(),
                                           src in any::<u32>(), dst in any::<u32>()) {
        let mut p = udp(tos, 4);
        p[4..6].copy_from_slice(&id.to_be_bytes());
        p[8] = ttl;
        p[12..16].copy_from_slice(&src.to_be_bytes());
        p[16..20].copy_from_slice(&dst.to_be_bytes());
        let c = header_checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        set_ce(&mut p);
        prop_assert_eq!(p[1] & 3, 3);
        // RFC 1624: the incremental result may differ from a full computation only in the
        // representation of zero (0x0000 vs 0xffff), which receivers accept alike.
        let full = header_checksum(&p[..20]);
        let inc = u16::from_be_bytes([p[10], p[11]]);
        prop_assert!(inc == full || (inc == 0xffff && full == 0) || (inc == 0 && full == 0xffff));
    }
}

/// A packet shaped enough to pass the parser often: version 4, an IHL of 5..15 words, a total length
/// within the buffer, TCP or UDP, a 10/8 destination; everything else arbitrary.
fn near_ipv4() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 20..400),
        5u8..16,
        any::<bool>(),
        any::<u16>(),
        any::<u8>(),
    )
        .prop_map(|(mut p, ihl, tcp, total, tcp_off)| {
            p[0] = 0x40 | ihl;
            let len = p.len();
            let total = usize::from(total) % (len + 1);
            p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            p[6] &= 0xe0;
            p[7] = 0;
            p[9] = if tcp { IPPROTO_TCP } else { IPPROTO_UDP };
            p[16] = 10;
            let at = usize::from(ihl) * 4 + 12;
            if tcp && at < len {
                p[at] = tcp_off;
            }
            p
        })
}

proptest! {
    /// The fuzz target's properties (`check_packet`) on arbitrary bytes, as they come and with the
    /// header checksum made valid, so that CI covers what `crates/tailcut-testbed/fuzz` checks.
    #[test]
    fn arbitrary_bytes_keep_the_packet_path_properties(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        check_packet(&bytes);
        let mut fixed = bytes.clone();
        if fix_header_checksum(&mut fixed) {
            check_packet(&fixed);
        }
    }

    #[test]
    fn near_ipv4_packets_keep_the_packet_path_properties(bytes in near_ipv4()) {
        check_packet(&bytes);
        let mut fixed = bytes.clone();
        prop_assert!(fix_header_checksum(&mut fixed) || usize::from(bytes[0] & 0x0f) * 4 > bytes.len());
        check_packet(&fixed);
    }
}

#[test]
fn check_packet_sees_a_parsed_and_marked_udp_packet() {
    let p = udp(0x02, 10);
    assert!(header_checksum_valid(&p[..20]));
    assert!(parse(&p, check_table).is_ok());
    check_packet(&p);
}
