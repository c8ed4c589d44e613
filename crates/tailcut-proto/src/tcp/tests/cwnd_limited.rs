//! `cwnd_limited` (Linux `tcp_is_cwnd_limited` / `tcp_cwnd_validate`): cwnd grows only while it
//! limits the sender. A persistent connection that carries one small request at a time never fills
//! its window, so Linux keeps cwnd where it was; a sender that ignores the rule grows it by every ACK
//! (to 45 MB on DCQUIC's migration experiment, whose burst after an outage overflowed a switch).

use super::harness::{test_cfg, Harness, MSS};
use crate::tcp::TcpConfig;

fn cfg(cwnd_limited: bool) -> TcpConfig {
    TcpConfig {
        cwnd_limited,
        ..test_cfg()
    }
}

/// 50 messages of 2 segments, one after the other: the initial window (10 segments) is never
/// filled. Linux: no growth, in slow start, since cwnd is not below twice the 2 segments in flight.
#[test]
fn an_application_limited_connection_keeps_its_window() {
    let run = |on| {
        let mut h = Harness::tcp(cfg(on));
        for m in 0..50 {
            h.send(0, m, 2 * MSS);
            h.run();
        }
        assert_eq!(h.eps[1].rcv_nxt(), 100 * MSS);
        h.eps[0].cwnd_bytes()
    };
    let initial = u64::from(test_cfg().initial_cwnd_segments) * MSS;
    assert_eq!(run(true), initial);
    // Without the rule every ACKed segment adds one (slow start): 10 + 100 segments.
    assert_eq!(run(false), initial + 100 * MSS);
}

/// A bulk transfer fills its window every round trip: it grows exactly as without the rule.
#[test]
fn a_window_limited_transfer_grows_as_before() {
    let run = |on| {
        let mut h = Harness::tcp(cfg(on));
        h.send(0, 1, 300 * MSS);
        h.run();
        h.eps[0].cwnd_bytes()
    };
    assert_eq!(run(true), run(false));
}

/// `HostProfile::apply`: on under `linux`, off under `paper`.
#[test]
fn host_profile_sets_cwnd_limited() {
    use crate::tcp::HostProfile;
    let mut c = TcpConfig::default();
    HostProfile::Paper.apply(&mut c, |_| false);
    assert!(!c.cwnd_limited);
    HostProfile::Linux.apply(&mut c, |_| false);
    assert!(c.cwnd_limited);
}
