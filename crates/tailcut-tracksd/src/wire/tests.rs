use super::*;
use proptest::prelude::*;

/// A Linux-like data segment: 10.0.0.1:40000 -> 10.0.0.2:7000, timestamps, 1448 B payload of
/// which only the headers are present (as NFQUEUE copies them).
fn data_segment() -> Vec<u8> {
    let ack = Packet {
        tuple: FiveTuple {
            src: Addr(0x0a00_0001),
            dst: Addr(0x0a00_0002),
            src_port: 40000,
            dst_port: 7000,
            proto: Proto::Tcp,
        },
        header: Header::Tcp(TcpHeader {
            seq: Seq(1000),
            ack: Seq(2000),
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: 502,
            ts_val: 77,
            ts_ecr: 66,
            ..TcpHeader::default()
        }),
        ..Packet::default()
    };
    let mut b = build_ack(&ack, true).unwrap();
    // Claim a payload that was not copied.
    claim_payload(&mut b, 1448);
    b
}

#[test]
fn a_header_only_copy_gives_the_payload_length_from_the_ip_total_length() {
    let s = parse(&data_segment()).unwrap();
    let h = s.packet.tcp().unwrap();
    assert_eq!(h.payload_len, 1448);
    assert_eq!((h.seq, h.ack, h.window), (Seq(1000), Seq(2000), 502));
    assert_eq!((h.ts_val, h.ts_ecr), (77, 66));
    assert!(s.timestamps);
    assert_eq!(s.packet.tuple.src, Addr(0x0a00_0001));
    assert_eq!(s.packet.tuple.dst_port, 7000);
}

#[test]
fn syn_options_give_mss_and_sack_permitted() {
    let mut b = data_segment();
    // Replace the 12 option bytes: MSS 1460, SACK-permitted, NOP, NOP, window scale 7, NOP.
    let opts = [2, 4, 0x05, 0xb4, 4, 2, 1, 1, 3, 3, 7, 1];
    b[40..52].copy_from_slice(&opts);
    b[33] = 0x02;
    let s = parse(&b).unwrap();
    assert_eq!(s.mss, Some(1460));
    assert!(s.sack_permitted);
    assert!(!s.timestamps);
    // A SYN's window is never scaled and stays raw.
    assert_eq!(s.packet.tcp().unwrap().window, 502);
    // A SYN-ACK's is shifted down by its scale (7), so that a spoof made from it, which the local
    // TCP scales up, advertises the same window.
    b[33] = 0x12;
    b[34..36].copy_from_slice(&64_240u16.to_be_bytes());
    assert_eq!(parse(&b).unwrap().packet.tcp().unwrap().window, 64_240 >> 7);
}

#[test]
fn spoofed_ack_round_trips_with_sack_blocks_and_valid_checksums() {
    let mut p = parse(&data_segment()).unwrap().packet;
    let h = p.tcp_mut().unwrap();
    h.payload_len = 0;
    h.flags = TcpFlags::ACK;
    h.sack.push(Seq(2040), Seq(3448));
    let b = build_ack(&p, true).unwrap();
    assert_eq!(checksum(&[&b[..20]]), 0, "ip header checksum verifies");
    let mut pseudo = [0u8; 12];
    pseudo[0..8].copy_from_slice(&b[12..20]);
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&((b.len() - 20) as u16).to_be_bytes());
    assert_eq!(checksum(&[&pseudo, &b[20..]]), 0, "tcp checksum verifies");
    let back = parse(&b).unwrap();
    let bh = back.packet.tcp().unwrap();
    assert_eq!(bh.sack.iter().collect::<Vec<_>>(), vec![(Seq(2040), Seq(3448))]);
    assert_eq!((bh.ack, bh.ts_val, bh.payload_len), (Seq(2000), 77, 0));
}

#[test]
fn truncated_and_bad_options_are_rejected_with_the_field() {
    let b = data_segment();
    assert_eq!(parse(&b[..30]), Err(Reject::Malformed("tcp header length")));
    let mut bad = b.clone();
    bad[41] = 0; // NOP NOP then a timestamps option claiming length 0
    bad[40] = 8;
    assert_eq!(parse(&bad), Err(Reject::Malformed("tcp option length")));
    let mut udp = b.clone();
    udp[9] = 17;
    assert_eq!(parse(&udp), Err(Reject::NotTcp));
    let mut frag = b;
    frag[7] = 1;
    assert_eq!(parse(&frag), Err(Reject::Fragment));
}

const SRC6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const DST6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// The IPv6 form of [`data_segment`]: fd00::1 -> fd00::2.
fn data_segment_v6() -> Vec<u8> {
    let p = parse(&data_segment()).unwrap().packet;
    let mut b = build_ack_v6(&p, SRC6, DST6, true).unwrap();
    claim_payload(&mut b, 1448);
    b
}

#[test]
fn ipv6_segments_parse_with_their_addresses_aside() {
    let s = parse(&data_segment_v6()).unwrap();
    assert_eq!(s.v6, Some((SRC6, DST6)));
    assert_eq!(
        (s.packet.tuple.src, s.packet.tuple.dst),
        (Addr(0), Addr(0)),
        "named by the caller"
    );
    let h = s.packet.tcp().unwrap();
    assert_eq!(
        (h.seq, h.ack, h.payload_len, h.ts_val),
        (Seq(1000), Seq(2000), 1448, 77)
    );
    assert_eq!(s.packet.tuple.dst_port, 7000);
    let mut ext = data_segment_v6();
    ext[6] = 0; // a hop-by-hop options header first: not followed
    assert_eq!(parse(&ext), Err(Reject::NotTcp));
    assert_eq!(
        parse(&data_segment_v6()[..50]),
        Err(Reject::Malformed("tcp header length"))
    );
    assert_eq!(
        parse(&data_segment_v6()[..39]),
        Err(Reject::Malformed("ipv6 header length"))
    );
}

#[test]
fn ipv6_spoofed_ack_has_a_valid_checksum_and_round_trips_through_the_id_table() {
    let mut addrs = V6Addrs::new(8);
    let s = parse(&data_segment_v6()).unwrap();
    let mut p = s.packet;
    // The peer's ACK toward the local sender, as the shim would hold it.
    p.tuple = p.tuple.reversed();
    p.tuple.src = addrs.id(DST6);
    p.tuple.dst = addrs.id(SRC6);
    let h = p.tcp_mut().unwrap();
    h.payload_len = 0;
    h.flags = TcpFlags::ACK;
    h.sack.push(Seq(2040), Seq(3448));
    let b = spoofed_ack(&p, &addrs).unwrap();
    assert_eq!(b[0] >> 4, 6);
    assert_eq!((&b[8..24], &b[24..40]), (&DST6[..], &SRC6[..]));
    let mut pseudo = [0u8; 40];
    pseudo[0..32].copy_from_slice(&b[8..40]);
    pseudo[32..36].copy_from_slice(&((b.len() - 40) as u32).to_be_bytes());
    pseudo[39] = 6;
    assert_eq!(checksum(&[&pseudo, &b[40..]]), 0, "tcp checksum verifies");
    let back = parse(&b).unwrap();
    assert_eq!(back.v6, Some((DST6, SRC6)));
    let bh = back.packet.tcp().unwrap();
    assert_eq!(bh.sack.iter().collect::<Vec<_>>(), vec![(Seq(2040), Seq(3448))]);
    // An id the table does not hold cannot be written.
    p.tuple.dst = Addr(99);
    assert_eq!(spoofed_ack(&p, &addrs), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Arbitrary bytes never panic the parser.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse(&bytes);
    }

    /// Arbitrary bytes after a valid IPv4 or IPv6 TCP prefix (options, lengths mutated) never
    /// panic, and whatever parses rebuilds into a packet that parses again.
    #[test]
    fn mutated_segments_never_panic(
        v6 in any::<bool>(), at in 0usize..72, val in any::<u8>(), cut in 0usize..73,
        extra in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let mut b = if v6 { data_segment_v6() } else { data_segment() };
        let at = at % b.len();
        b[at] = val;
        b.truncate(cut.max(1));
        b.extend_from_slice(&extra);
        if let Ok(s) = parse(&b) {
            let rebuilt = match s.v6 {
                Some((src, dst)) => build_ack_v6(&s.packet, src, dst, s.timestamps).unwrap(),
                None => build_ack(&s.packet, s.timestamps).unwrap(),
            };
            prop_assert!(parse(&rebuilt).is_ok());
        }
    }
}
