//! Which connection a QUIC datagram belongs to, from its first packet's header (RFC 9000 Sec. 17),
//! for a server that runs one engine per connection on one socket. Only the invariant fields are
//! read (RFC 8999): the header form, the version and the destination connection ID; nothing is
//! decrypted, and quinn still checks every packet in full.

use super::real::{cid_key, SERVER_CID_BYTES};

/// Largest connection ID QUIC v1 allows.
pub const MAX_CID_BYTES: usize = 20;
/// Smallest datagram that may carry a client's first Initial (RFC 9000 Sec. 14.1).
pub const MIN_INITIAL_DATAGRAM: usize = 1200;

/// What the first packet of a datagram says about its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// A short-header (1-RTT) packet to the connection whose IDs begin with `key`.
    Short { key: u32 },
    /// A long-header packet. `dcid` is the destination ID: the client's choice on its first flight
    /// (Initial and 0-RTT), else one the server issued. `opens` is true for a QUIC v1 Initial in a
    /// datagram big enough to start a connection.
    Long { dcid: &'a [u8], opens: bool },
    /// Not QUIC v1 as this server speaks it (a version negotiation, another version, garbage).
    Foreign,
}

/// Reads the routing fields of `datagram`.
pub fn route(datagram: &[u8]) -> Route<'_> {
    let Some(&first) = datagram.first() else {
        return Route::Foreign;
    };
    // The fixed bit (0x40) is not read: a peer may grease it (RFC 9287, which quinn offers).
    if first & 0x80 == 0 {
        return match datagram.get(1..1 + SERVER_CID_BYTES).and_then(cid_key) {
            Some(key) => Route::Short { key },
            None => Route::Foreign,
        };
    }
    let Some(version) = datagram.get(1..5) else {
        return Route::Foreign;
    };
    if version != [0, 0, 0, 1] {
        return Route::Foreign;
    }
    let Some(&len) = datagram.get(5) else {
        return Route::Foreign;
    };
    let len = usize::from(len);
    if len > MAX_CID_BYTES {
        return Route::Foreign;
    }
    let Some(dcid) = datagram.get(6..6 + len) else {
        return Route::Foreign;
    };
    // Long packet type 0 is Initial (RFC 9000 Sec. 17.2); a client's first DCID is >= 8 bytes.
    let initial = (first >> 4) & 0x03 == 0;
    let opens = initial && len >= 8 && datagram.len() >= MIN_INITIAL_DATAGRAM;
    Route::Long { dcid, opens }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn long(kind: u8, dcid: &[u8], total: usize) -> Vec<u8> {
        let mut d = vec![0xC0 | (kind << 4), 0, 0, 0, 1, dcid.len() as u8];
        d.extend_from_slice(dcid);
        d.resize(total.max(d.len()), 0);
        d
    }

    #[test]
    fn short_headers_route_by_the_key_in_the_first_bytes_of_the_id() {
        let d = [0x40, 0, 0, 1, 2, 9, 9, 9, 9, 0xAA];
        assert_eq!(route(&d), Route::Short { key: 0x0102 });
        assert_eq!(route(&d[..8]), Route::Foreign, "an ID cut short");
    }

    #[test]
    fn only_a_full_size_initial_opens_a_connection() {
        let cid = [7u8; 8];
        assert_eq!(
            route(&long(0, &cid, 1200)),
            Route::Long {
                dcid: &cid,
                opens: true
            }
        );
        assert_eq!(
            route(&long(0, &cid, 1199)),
            Route::Long {
                dcid: &cid,
                opens: false
            }
        );
        assert_eq!(
            route(&long(2, &cid, 1200)),
            Route::Long {
                dcid: &cid,
                opens: false
            },
            "Handshake"
        );
        assert_eq!(
            route(&long(0, &cid[..4], 1200)),
            Route::Long {
                dcid: &cid[..4],
                opens: false
            }
        );
    }

    #[test]
    fn other_versions_oversized_ids_and_garbage_are_foreign() {
        let mut d = long(0, &[1; 8], 1200);
        d[4] = 2;
        assert_eq!(route(&d), Route::Foreign, "version 2");
        let mut d = long(0, &[1; 8], 1200);
        d[5] = 21;
        assert_eq!(route(&d), Route::Foreign, "a 21-byte ID");
        assert_eq!(route(&[]), Route::Foreign);
        assert_eq!(route(&[0x80; 3]), Route::Foreign, "cut before the ID length");
        assert_eq!(route(&[0xC0, 0, 0]), Route::Foreign, "cut in the version");
    }

    proptest! {
        /// Any bytes: no panic, and a route's ID lies inside the datagram at its place.
        #[test]
        fn any_bytes_route_without_panic(d in proptest::collection::vec(any::<u8>(), 0..1300)) {
            match route(&d) {
                Route::Short { key } => prop_assert_eq!(key.to_be_bytes(), [d[1], d[2], d[3], d[4]]),
                Route::Long { dcid, opens } => {
                    prop_assert_eq!(dcid, &d[6..6 + usize::from(d[5])]);
                    prop_assert!(!opens || d.len() >= MIN_INITIAL_DATAGRAM);
                }
                Route::Foreign => {}
            }
        }
    }
}
