use super::*;
use proptest::prelude::*;

fn ext() -> impl Strategy<Value = TcpExt> {
    prop_oneof![
        Just(TcpExt::None),
        (any::<u64>(), any::<u64>()).prop_map(|(dsn, data_ack)| TcpExt::Dss { dsn, data_ack }),
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(s, len_bytes, seg_bytes)| {
            TcpExt::XorCoded {
                start: Seq(s),
                len_bytes,
                seg_bytes,
            }
        }),
        any::<u32>().prop_map(|e| TcpExt::CodedAck { end: Seq(e) }),
    ]
}

prop_compose! {
    fn header()(
        seq: u32, ack: u32, flags: u8, window: u32, payload_len in 0u32..3000,
        sack in proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
        ts_val: u32, ts_ecr: u32, ext in ext(),
    ) -> TcpHeader {
        let mut blocks = SackBlocks::default();
        for (l, r) in sack {
            blocks.push(Seq(l), Seq(r));
        }
        TcpHeader {
            seq: Seq(seq), ack: Seq(ack), flags: TcpFlags(flags), window, payload_len, sack: blocks,
            ts_val, ts_ecr, ext,
        }
    }
}

fn sample() -> TcpHeader {
    let mut sack = SackBlocks::default();
    sack.push(Seq(100), Seq(200));
    TcpHeader {
        seq: Seq(7),
        ack: Seq(9),
        flags: TcpFlags::ACK | TcpFlags::PSH,
        window: 65_535,
        payload_len: 5,
        sack,
        ts_val: 1,
        ts_ecr: 2,
        ext: TcpExt::Dss {
            dsn: 1 << 40,
            data_ack: 3,
        },
    }
}

#[test]
fn layout_matches_the_documented_table() {
    let mut buf = Vec::new();
    build(&sample(), false, b"hello", &mut buf).unwrap();
    assert_eq!(buf.len(), FIXED_BYTES + 8 + 16 + 5);
    assert_eq!(buf[0], VERSION);
    assert_eq!(buf[1] as usize * 4, FIXED_BYTES + 8 + 16);
    assert_eq!(buf[2], 0x18);
    // Not trimmed, ext kind 1 (DSS) in bits 1-2, one SACK block in bits 3-5.
    assert_eq!(buf[3], (1 << 1) | (1 << 3));
    assert_eq!(&buf[4..8], &7u32.to_be_bytes());
    assert_eq!(&buf[28..32], &100u32.to_be_bytes());
    assert_eq!(&buf[36..44], &(1u64 << 40).to_be_bytes());
    assert_eq!(&buf[buf.len() - 5..], b"hello");
}

#[test]
fn trimming_keeps_the_header_and_sets_the_bit() {
    let mut buf = Vec::new();
    build(&sample(), false, b"hello", &mut buf).unwrap();
    assert!(trim(&mut buf));
    let seg = parse(&buf).unwrap();
    assert!(seg.trimmed);
    assert!(seg.payload.is_empty());
    assert_eq!(seg.header, sample());
    // Trimming garbage does nothing.
    let mut junk = vec![9u8; 40];
    assert!(!trim(&mut junk));
    assert_eq!(junk, vec![9u8; 40]);
}

#[test]
fn build_refuses_a_payload_that_disagrees_with_the_header() {
    let mut buf = Vec::new();
    assert_eq!(
        build(&sample(), false, b"hell", &mut buf),
        Err(WireError::PayloadLength {
            carried: 4,
            payload_len: 5,
            trimmed: false
        })
    );
    assert!(build(&sample(), true, b"hello", &mut buf).is_err());
    assert!(buf.is_empty());
}

#[test]
fn parse_names_what_is_wrong() {
    let mut buf = Vec::new();
    build(&sample(), false, b"hello", &mut buf).unwrap();
    assert!(matches!(
        parse(&buf[..10]),
        Err(WireError::Truncated { len: 10, .. })
    ));
    let mut b = buf.clone();
    b[0] = 2;
    assert_eq!(parse(&b), Err(WireError::UnknownVersion { version: 2 }));
    let mut b = buf.clone();
    b[3] |= 0x80;
    assert!(matches!(parse(&b), Err(WireError::BadBits { .. })));
    let mut b = buf.clone();
    b[1] += 1;
    assert!(matches!(parse(&b), Err(WireError::HeaderLength { .. })));
    let mut b = buf.clone();
    b.push(0);
    assert!(matches!(
        parse(&b),
        Err(WireError::PayloadLength { carried: 6, .. })
    ));
    // Five SACK blocks do not exist.
    let mut b = buf.clone();
    b[3] = (b[3] & !(0x07 << 3)) | (5 << 3);
    assert!(matches!(parse(&b), Err(WireError::BadBits { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// parse(build(p)) == p, for every header, trimmed or not.
    #[test]
    fn parse_inverts_build(h in header(), trimmed: bool, fill: u8) {
        let payload = if trimmed { Vec::new() } else { vec![fill; h.payload_len as usize] };
        let mut buf = vec![0xee]; // build appends: what is already there stays.
        build(&h, trimmed, &payload, &mut buf).unwrap();
        prop_assert_eq!(buf[0], 0xee);
        prop_assert_eq!(buf.len(), 1 + header_len(&h) + payload.len());
        prop_assert!(header_len(&h) <= MAX_HEADER_BYTES);
        let seg = parse(&buf[1..]).unwrap();
        prop_assert_eq!(seg.header, h);
        prop_assert_eq!(seg.trimmed, trimmed);
        prop_assert_eq!(seg.payload, &payload[..]);
    }

    /// Arbitrary bytes never panic the parser, and whatever parses builds back to the same bytes (the
    /// format has one encoding per segment).
    #[test]
    fn arbitrary_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        check_arbitrary(&bytes)?;
    }

    /// The same on inputs that start like a valid header, which random bytes rarely do.
    #[test]
    fn mutated_valid_datagrams_parse_or_fail_cleanly(
        h in header(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        cut: usize,
    ) {
        let mut buf = Vec::new();
        build(&h, false, &vec![1; h.payload_len as usize], &mut buf).unwrap();
        for (at, x) in flips {
            let n = buf.len();
            buf[at % n] ^= x;
        }
        buf.truncate(cut % (buf.len() + 1));
        check_arbitrary(&buf)?;
    }
}

fn check_arbitrary(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(seg) = parse(bytes) {
        let mut out = Vec::new();
        build(&seg.header, seg.trimmed, seg.payload, &mut out).unwrap();
        prop_assert_eq!(&out[..], bytes);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// A sender that writes the payload in place and the header in front of it (`build_header`, as
    /// the socket runtime does) sends exactly the bytes of `build`; a length that disagrees with the
    /// header is refused as `build` refuses it.
    #[test]
    fn build_header_then_payload_is_build(h in header(), trimmed: bool, fill: u8) {
        let payload = if trimmed { Vec::new() } else { vec![fill; h.payload_len as usize] };
        let mut whole = Vec::new();
        build(&h, trimmed, &payload, &mut whole).unwrap();
        let mut parts = vec![0xee];
        build_header(&h, trimmed, payload.len(), &mut parts).unwrap();
        prop_assert_eq!(parts.len(), 1 + header_len(&h));
        parts.extend_from_slice(&payload);
        prop_assert_eq!(&parts[1..], &whole[..]);
        prop_assert!(build_header(&h, trimmed, payload.len() + 1, &mut Vec::new()).is_err());
    }
}
