//! The engine in real-socket mode ([`super::real`]), between two engines on the generic harness: real
//! TLS with [`super::real_testkit`]'s certificates and seeded keys, the application's bytes delimited
//! by their stream's FIN, routing keys in connection IDs, the limits.

use super::real::{cid_key, RealMode, ALPN};
use super::real_testkit::{self as kit, mode};
use super::route::{route, Route};
use super::*;
use crate::engine::{AppEvent, Engine};
use crate::packet::{Addr, FiveTuple, Proto};
use crate::testing::{Fate, Harness};
use crate::time::Time;
use std::sync::Arc;

const KEY_ROUTE: u32 = 0xC0FF_EE01;

fn epoch() -> std::time::Instant {
    #[allow(clippy::disallowed_methods)]
    std::time::Instant::now()
}

fn tuple() -> FiveTuple {
    FiveTuple {
        src: Addr(1),
        dst: Addr(10),
        src_port: 1000,
        dst_port: 2000,
        proto: Proto::Udp,
    }
}

fn pair_of(client: RealMode, server: RealMode, task: u64) -> Harness<DcquicEngine> {
    let cs = Arc::new(Shared::real(DcquicConfig::default(), epoch(), client).unwrap());
    let ss = Arc::new(Shared::real(DcquicConfig::default(), epoch(), server).unwrap());
    let c = DcquicEngine::real_client(
        cs,
        tuple(),
        vec![Addr(1), Addr(2)],
        task,
        kit::client_keys(1),
        Time::ZERO,
    )
    .unwrap();
    let s = DcquicEngine::real_server(ss, tuple().reversed(), kit::server_keys(KEY_ROUTE, 2), Time::ZERO)
        .unwrap();
    let mut p = Harness::new(c, s);
    p.carry = true;
    p
}

fn pair(task: u64) -> Harness<DcquicEngine> {
    pair_of(mode(), mode(), task)
}

/// Request ids are the client's stream ids (0, 4, 8, ...: the server names a request by its stream),
/// responses the id with the low bit set.
fn rpc(p: &mut Harness<DcquicEngine>, k: u64, req: u64, resp: u64) {
    p.rpc(4 * k, req, 4 * k + 1, resp);
}

#[test]
fn rpcs_carry_the_applications_bytes_through_loss_duplication_and_reordering() {
    let mut p = pair(100_000);
    let mut n = 0u64;
    p.fault(move |_| {
        n += 1;
        match n % 17 {
            3 => Fate::Drop,
            7 => Fate::Duplicate,
            11 => Fate::Reorder,
            _ => Fate::Deliver,
        }
    });
    let sizes = [1u64, 1000, 9000, 10_000, 100_000, 300_000];
    for (k, &size) in sizes.iter().enumerate() {
        rpc(&mut p, k as u64, size, size / 2 + 1);
    }
    p.run_until(Time(2_000_000_000));
    assert!(p.corrupt.is_empty(), "{:?}", p.corrupt);
    for k in 0..sizes.len() as u64 {
        assert!(p.received(1, 4 * k).is_some(), "request {k}");
        assert!(p.received(0, 4 * k + 1).is_some(), "response {k}");
    }
    let want: u64 = sizes.iter().map(|s| s + s / 2 + 1).sum();
    assert_eq!(p.bytes_checked, want);
    assert!(p.eps[0].counters().lost_packets > 0, "the faults hit");
    assert_eq!(
        p.eps[0].inbox.len() + p.eps[1].inbox.len(),
        0,
        "every message taken"
    );
}

#[test]
fn a_server_connection_id_begins_with_its_routing_key() {
    let mut p = pair(10_000);
    rpc(&mut p, 0, 100, 100);
    p.run_until(Time(100_000_000));
    assert!(p.received(0, 1).is_some());
    let short: Vec<Route> = p
        .sent_by(0)
        .map(|s| route(&s.payload))
        .filter(|r| matches!(r, Route::Short { .. }))
        .collect();
    assert!(!short.is_empty());
    assert!(
        short.iter().all(|r| *r == Route::Short { key: KEY_ROUTE }),
        "{short:?}"
    );
    assert_eq!(cid_key(&real::server_cid(KEY_ROUTE, [9; 4])), Some(KEY_ROUTE));
}

#[test]
fn the_client_picks_the_mps_by_task_size_within_the_path_and_the_server_follows() {
    for (task, want) in [(10_000u64, 8972usize), (2_000_000, 5000)] {
        let mut p = pair(task);
        rpc(&mut p, 0, 60_000, 60_000);
        p.run_until(Time(200_000_000));
        assert!(p.received(0, 1).is_some());
        for side in 0..2 {
            let biggest = p.sent_by(side).map(|s| s.payload.len()).max().unwrap();
            assert_eq!(biggest, want, "task {task}, side {side}");
        }
        assert_eq!(p.eps[1].mps(), Some(want as u16));
    }
}

#[test]
fn a_different_alpn_or_an_untrusted_certificate_fails_the_handshake() {
    let mut other_alpn = mode();
    other_alpn.client = Some(kit::client_config(&[kit::CA], b"h3"));
    let mut untrusted = mode();
    // Any certificate but the server's: a root the server's chain does not lead to.
    untrusted.client = Some(kit::client_config(&[kit::OTHER_ROOT], ALPN));
    for (client, why) in [(other_alpn, "protocol"), (untrusted, "UnknownIssuer")] {
        let mut p = pair_of(client, mode(), 10_000);
        rpc(&mut p, 0, 100, 100);
        p.run_until(Time(5_000_000_000));
        assert_eq!(p.eps[0].counters().handshakes, 0);
        assert!(p.received(1, 0).is_none() && p.received(0, 1).is_none());
        assert!(p
            .events_of(0)
            .iter()
            .any(|e| matches!(e, AppEvent::MessageFailed { msg: 0, .. })));
        assert!(p.eps[0].is_closed());
        let reason = p.eps[0].close_reason().unwrap_or_default();
        assert!(reason.contains(why), "{reason}");
    }
}

#[test]
fn a_message_over_the_limit_closes_the_connection() {
    let mut small = mode();
    small.max_message_bytes = 50_000;
    small.max_buffered_bytes = 50_000;
    let mut p = pair_of(mode(), small, 10_000);
    rpc(&mut p, 0, 60_000, 10);
    p.run_until(Time(1_000_000_000));
    assert_eq!(p.eps[1].counters().protocol_errors, 1);
    assert!(p.eps[1].is_closed() && p.eps[0].is_closed());
    assert!(p.received(1, 0).is_none());
    assert!(p
        .events_of(0)
        .iter()
        .any(|e| matches!(e, AppEvent::MessageFailed { msg: 0, .. })));
}

/// A real client's first destination ID is the driver's, not one the engine drew: two clients on
/// the same keys open with the same ID, on other keys with another.
#[test]
fn a_real_client_opens_with_the_drivers_connection_id() {
    let first_dcid = |seed| {
        let s = Arc::new(Shared::real(DcquicConfig::default(), epoch(), mode()).unwrap());
        let mut c = DcquicEngine::real_client(
            s,
            tuple(),
            vec![Addr(1)],
            10_000,
            kit::client_keys(seed),
            Time::ZERO,
        )
        .unwrap();
        let mut b = Vec::new();
        c.poll_transmit(Time::ZERO, &mut b).unwrap();
        match route(&b) {
            Route::Long { dcid, opens: true } => dcid.to_vec(),
            r => panic!("{r:?}"),
        }
    };
    let want = (kit::client_keys(7).initial_dst_cid)().to_vec();
    assert_eq!(first_dcid(7), want);
    assert_eq!(first_dcid(7), first_dcid(7));
    assert_ne!(first_dcid(7), first_dcid(8));
}

#[test]
fn real_mode_refuses_simulator_features_and_bad_parameters() {
    let cfg = DcquicConfig {
        zero_rtt: true,
        ..DcquicConfig::default()
    };
    let e = Shared::real(cfg, epoch(), mode()).err().unwrap();
    assert_eq!(e.path, "zero_rtt", "{e}");
    let mut m = mode();
    m.path_max_payload = 1000;
    let e = Shared::real(DcquicConfig::default(), epoch(), m).err().unwrap();
    assert_eq!(e.path, "path_max_payload", "{e}");
    let mut m = mode();
    m.client = None;
    m.server = None;
    assert!(Shared::real(DcquicConfig::default(), epoch(), m).is_err());
    let mut m = mode();
    m.client = None;
    let server_only = Arc::new(Shared::real(DcquicConfig::default(), epoch(), m).unwrap());
    let keys = kit::client_keys(1);
    assert!(DcquicEngine::real_client(server_only, tuple(), vec![Addr(1)], 1, keys, Time::ZERO).is_err());
    let sim = Arc::new(Shared::new(DcquicConfig::default(), epoch()));
    let keys = kit::client_keys(1);
    assert!(DcquicEngine::real_client(sim, tuple(), vec![Addr(1)], 1, keys, Time::ZERO).is_err());
}
