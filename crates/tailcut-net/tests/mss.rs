//! The TCP family's segment size on sockets: sized from the path MTU unless the scheme entry sets
//! `mss_bytes`, and every datagram within the path. Functional facts only (bytes, counters, the
//! largest datagram each end handed to the kernel), never timings.

mod common;

use common::{calls_through, faults};
use serde_json::json;
use tailcut_net::NetConfig;

/// IPv4 and UDP headers, which the path MTU counts and a UDP payload does not.
const IP_UDP: u32 = 28;
/// The runtime's preamble and the fixed TCP-in-UDP header: what a full data segment without SACK
/// blocks or DSS adds to its payload.
const FIXED: u32 = 12 + 28;

/// `scheme` with datacenter timers (a lost tail costs milliseconds), three sub-flows for the multipath
/// schemes, more `params`, on a path of `path_mtu`.
fn config(scheme: &str, more: serde_json::Value, path_mtu: u32) -> NetConfig {
    let mut params = json!({"min_rto": "5ms", "initial_rto": "20ms"});
    if ["mptcp", "fuso"].contains(&scheme) {
        params["subflows"] = json!(3);
    }
    if let (Some(p), serde_json::Value::Object(m)) = (params.as_object_mut(), more) {
        p.extend(m);
    }
    NetConfig {
        path_mtu,
        ..NetConfig::default().scheme_json(scheme, params).unwrap()
    }
}

/// Bytes of call `i`: a 1 MB message every fourth call, else up to ~100 KB; contents from `i`.
fn request(i: u64) -> Vec<u8> {
    let len = if i.is_multiple_of(4) {
        1 << 20
    } else {
        (i * 7_919) % 100_000
    } as usize;
    (0..len).map(|k| (k as u64 ^ (i * 131)) as u8).collect()
}

#[test]
fn the_mss_follows_the_path_mtu_and_an_explicit_mss_bytes_wins() {
    // The MTU less 28 (IPv4, UDP), 12 (preamble), 76 (the largest TCP-in-UDP header) and 12 spare.
    assert_eq!(config("tcp", json!({}), 9000).tcp_config().mss_bytes, 8872);
    assert_eq!(config("tcp", json!({}), 1500).tcp_config().mss_bytes, 1372);
    assert_eq!(config("fuso", json!({}), 1500).tcp_config().mss_bytes, 1372);
    // An entry's own header_bytes changes what the engine counts per segment, not the datagram's
    // real headers: the segments still fit the path.
    assert_eq!(
        config("tcp", json!({"header_bytes": 40}), 9000)
            .tcp_config()
            .mss_bytes,
        8872
    );
    let explicit = config("tcp", json!({"mss_bytes": 1372}), 9000);
    assert_eq!(explicit.tcp_config().mss_bytes, 1372);
    assert_eq!(explicit.max_datagram_bytes(), 1372 + 76 + 12);
    assert_eq!(
        config("tcp", json!({}), 9000).max_datagram_bytes(),
        9000 - 28 - 12
    );
}

#[test]
fn a_path_mtu_the_mss_cannot_come_from_is_refused() {
    let e = config("tcp", json!({}), 500).validate().unwrap_err();
    assert!(e.to_string().contains("path_mtu"), "{e}");
    // A window below one segment of the path's MSS could never carry a full segment.
    let e = config("tcp", json!({"rcv_window_bytes": 4000}), 9000)
        .validate()
        .unwrap_err();
    assert!(e.to_string().contains("rcv_window_bytes"), "{e}");
    // With mss_bytes set, the path MTU does not size the segments, so it is not checked for them.
    config("tcp", json!({"rcv_window_bytes": 4000, "mss_bytes": 1000}), 500)
        .validate()
        .unwrap();
}

/// Runs `n` calls of [`request`] with `cfg` through each side's `hook`; returns the largest datagram
/// the server and the client handed to the kernel.
fn largest_datagrams(
    cfg: &NetConfig,
    hook: impl Fn(u64) -> Option<tailcut_net::SendLoss>,
    n: u64,
) -> (u64, u64) {
    let (ss, cs, _) = calls_through(cfg, hook, n, request);
    assert_eq!(
        ss.protocol_errors + cs.protocol_errors,
        0,
        "{:?}",
        cfg.scheme.transport
    );
    (ss.tx.max_datagram, cs.tx.max_datagram)
}

#[test]
fn on_a_jumbo_path_segments_are_jumbo_and_fit_it() {
    for scheme in ["tcp", "mptcp", "fuso"] {
        let cfg = config(scheme, json!({}), 9000);
        let mss = u64::from(cfg.tcp_config().mss_bytes);
        let (server, client) = largest_datagrams(&cfg, |_| None, 4);
        for (end, max) in [("server", server), ("client", client)] {
            assert!(
                max >= mss + u64::from(FIXED),
                "{scheme} {end}: largest datagram {max}"
            );
            assert!(
                max <= u64::from(9000 - IP_UDP),
                "{scheme} {end}: largest datagram {max}"
            );
        }
    }
}

#[test]
fn on_a_1500_byte_path_every_datagram_fits_it() {
    for scheme in ["tcp", "fuso"] {
        let cfg = config(scheme, json!({}), 1500);
        let (server, client) = largest_datagrams(&cfg, |_| None, 4);
        for (end, max) in [("server", server), ("client", client)] {
            assert!(
                max >= 1372 + u64::from(FIXED),
                "{scheme} {end}: largest datagram {max}"
            );
            assert!(
                max <= u64::from(1500 - IP_UDP),
                "{scheme} {end}: largest datagram {max}"
            );
        }
    }
}

#[test]
fn an_explicit_mss_bytes_sizes_the_segments() {
    let cfg = config("tcp", json!({"mss_bytes": 4000}), 9000);
    let (server, client) = largest_datagrams(&cfg, |_| None, 4);
    for (end, max) in [("server", server), ("client", client)] {
        assert!(max >= 4000 + u64::from(FIXED), "{end}: largest datagram {max}");
        assert!(max <= 4000 + 76 + 12, "{end}: largest datagram {max}");
    }
}

#[test]
fn jumbo_segments_arrive_byte_exact_through_loss_reordering_and_duplication() {
    for scheme in ["tcp", "mptcp", "fuso"] {
        let cfg = config(scheme, json!({}), 9000);
        // Every response is checked byte for byte by `calls_through`.
        let (server, client) = largest_datagrams(&cfg, faults, 40);
        for (end, max) in [("server", server), ("client", client)] {
            assert!(max > 1500, "{scheme} {end}: largest datagram {max}");
            assert!(
                max <= u64::from(9000 - IP_UDP),
                "{scheme} {end}: largest datagram {max}"
            );
        }
    }
}
