//! Every TCP-family engine carrying real bytes (`TcpConfig::carry_bytes`): each message arrives byte
//! for byte through loss, duplication, reordering, delay and payload cutting, and the engines send
//! exactly the packets, at exactly the times, they send without bytes.

use super::harness::{tuple, ISN};
use crate::engine::{AppEvent, Engine};
use crate::mptcp::{MptcpConfig, MptcpEndpoint};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::tcp::{
    CongestionControl, DelayedAck, LossDetection, PiasConfig, Role, TcpConfig, TcpEndpoint, TcpIrConfig,
    TlpConfig,
};
use crate::testing::{Fate, Harness, Wire};
use crate::time::{Dur, Time};
use proptest::prelude::*;
use rand::{Rng as _, SeedableRng};

const SCHEMES: usize = 16;

fn base() -> TcpConfig {
    TcpConfig {
        mss_bytes: 1000,
        min_rto: Dur::from_millis(2),
        max_rto: Dur::from_millis(200),
        initial_rto: Dur::from_millis(10),
        ..TcpConfig::default()
    }
}

/// Scheme `k`'s TCP configuration, as the transport registry sets it up (`docs/baselines.md`), and
/// whether switches cut payloads instead of dropping (CP).
fn tcp_scheme(k: usize) -> (TcpConfig, bool) {
    let dctcp = CongestionControl::Dctcp { g: 1.0 / 16.0 };
    let cfg = match k {
        0 => base(),
        1 => TcpConfig {
            sack: false,
            loss_detection: LossDetection::Dupthresh,
            ..base()
        },
        2 => TcpConfig {
            ecn: true,
            congestion_control: dctcp,
            delayed_ack: Some(DelayedAck::Fixed(Dur::from_micros(40))),
            ..base()
        },
        3 => TcpConfig {
            handshake: true,
            delayed_ack: Some(DelayedAck::Fixed(Dur::from_micros(200))),
            ..base()
        },
        4 => TcpConfig {
            tlp: Some(TlpConfig {
                pto_floor: Dur::from_micros(300),
                worst_case_delayed_ack: Dur::from_millis(1),
            }),
            loss_detection: LossDetection::Dupthresh,
            ..base()
        },
        5 => TcpConfig {
            tcp_ir: Some(TcpIrConfig {
                max_block_segments: 4,
            }),
            ..base()
        },
        6 => TcpConfig {
            proactive: true,
            ..base()
        },
        7 => TcpConfig {
            pias: Some(PiasConfig {
                thresholds_bytes: vec![2_000, 20_000],
            }),
            ..base()
        },
        8 => TcpConfig {
            pfabric_priority: true,
            pfabric_probe_after: Some(2),
            ..base()
        },
        9 | 10 => TcpConfig {
            cp: true,
            dupack_threshold: u32::MAX,
            sack: false,
            loss_detection: LossDetection::Dupthresh,
            ecn: k == 10,
            congestion_control: if k == 10 {
                dctcp
            } else {
                CongestionControl::NewReno
            },
            ..base()
        },
        _ => TcpConfig {
            spray_paths: 4,
            ..base()
        },
    };
    (cfg, k == 9 || k == 10)
}

/// MPTCP schemes: plain, FUSO, FUSO over CP sub-flows, plain with out-of-order data-level delivery.
fn mptcp_scheme(k: usize) -> (TcpConfig, MptcpConfig, bool) {
    let plain = MptcpConfig {
        subflows: 3,
        ..MptcpConfig::default()
    };
    let fuso = MptcpConfig {
        subflows: 3,
        ..MptcpConfig::fuso()
    };
    match k {
        12 => (base(), plain, false),
        13 => (base(), fuso, false),
        14 => (
            TcpConfig {
                cp: true,
                dupack_threshold: u32::MAX,
                ..base()
            },
            fuso,
            true,
        ),
        _ => (
            base(),
            MptcpConfig {
                ofo_to_data_level: true,
                warmup_bytes: 3_000,
                ..plain
            },
            false,
        ),
    }
}

#[derive(Clone, Debug)]
struct Scenario {
    scheme: usize,
    seed: u64,
    /// (request from side 0, its response size; one-way from side 1 when the response is None).
    msgs: Vec<(u64, Option<u64>)>,
    /// Per-mille chances of each fate.
    drop: u32,
    dup: u32,
    reorder: u32,
    delay: u32,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        0..SCHEMES,
        any::<u64>(),
        prop::collection::vec((0u64..40_000, prop::option::of(0u64..40_000)), 1..6),
        0u32..120,
        0u32..60,
        0u32..60,
        0u32..60,
    )
        .prop_map(|(scheme, seed, msgs, drop, dup, reorder, delay)| Scenario {
            scheme,
            seed,
            msgs,
            drop,
            dup,
            reorder,
            delay,
        })
}

/// A link that drops (or, with `cut`, trims the payload of data packets), duplicates, reorders and
/// delays packets at random; the same seed gives the same fates to the same packets.
fn faults(sc: &Scenario, cut: bool) -> impl FnMut(&mut Wire<'_>) -> Fate + 'static {
    let mut rng = Rng::seed_from_u64(sc.seed);
    let (drop, dup, reorder, delay) = (sc.drop, sc.dup, sc.reorder, sc.delay);
    move |w| {
        let r = rng.random_range(0..1000u32);
        let extra = Dur::from_micros(rng.random_range(1..60));
        if r < drop {
            if cut && w.pkt.payload_len() > 0 {
                w.pkt.trimmed = true;
                w.pkt.size_bytes = 66;
                return Fate::Deliver;
            }
            return Fate::Drop;
        }
        if r < drop + dup {
            Fate::Duplicate
        } else if r < drop + dup + reorder {
            Fate::Reorder
        } else if r < drop + dup + reorder + delay {
            Fate::Delay(extra)
        } else {
            Fate::Deliver
        }
    }
}

/// What must not depend on whether bytes are carried: every packet (headers, time, fate) and event.
type Trace = (
    Vec<(Time, usize, Packet, Fate)>,
    Vec<(Time, usize, crate::engine::AppEvent)>,
);

fn run<E: Engine>(sc: &Scenario, a: E, b: E, cut: bool, carry: bool) -> (Harness<E>, Trace) {
    let mut h = Harness::new(a, b);
    h.rate_bps = 10_000_000_000;
    h.carry = carry;
    h.step_limit = 2_000_000;
    h.fault(faults(sc, cut));
    let mut id = 1;
    for &(len, response) in &sc.msgs {
        match response {
            Some(rlen) => h.rpc(id, len, id + 1, rlen),
            None => h.send(1, id, len),
        }
        id += 2;
        h.run_until(h.now + Dur::from_micros(30));
    }
    h.run();
    let sent = h.sent.iter().map(|s| (s.time, s.from, s.pkt, s.fate)).collect();
    let events = h.events.clone();
    (h, (sent, events))
}

fn tcp_pair(cfg: &TcpConfig) -> (TcpEndpoint, TcpEndpoint) {
    let mk = |side: usize, role| TcpEndpoint::new(cfg.clone(), tuple(side), role, ISN[side], ISN[1 - side]);
    (mk(0, Role::Client), mk(1, Role::Server))
}

fn mptcp_pair(tcp: &TcpConfig, cfg: &MptcpConfig, seed: u64) -> (MptcpEndpoint, MptcpEndpoint) {
    let mk = |side: usize| {
        let rng = Rng::seed_from_u64(seed ^ side as u64);
        MptcpEndpoint::new(
            tcp.clone(),
            cfg.clone(),
            tuple(side),
            ISN[side],
            ISN[1 - side],
            rng,
        )
    };
    (mk(0), mk(1))
}

/// The number of messages the scenario delivers (requests, responses and one-way messages).
fn messages(sc: &Scenario) -> usize {
    sc.msgs.iter().map(|m| if m.1.is_some() { 2 } else { 1 }).sum()
}

/// (checked bytes, corrupt messages, received messages, identical traces, bytes still held).
type Outcome = (u64, usize, usize, bool, usize);

/// Runs the scenario on the engines `pair(carry)` makes, without and with bytes.
fn compare<E: Engine>(
    sc: &Scenario,
    cut: bool,
    pair: impl Fn(bool) -> (E, E),
    held: impl Fn(&E) -> usize,
) -> Outcome {
    let (a, b) = pair(false);
    let (_, plain) = run(sc, a, b, cut, false);
    let (a, b) = pair(true);
    let (h, carried) = run(sc, a, b, cut, true);
    let received = carried
        .1
        .iter()
        .filter(|e| matches!(e.2, AppEvent::MessageReceived { .. }))
        .count();
    let held = h.eps.iter().map(held).sum();
    (h.bytes_checked, h.corrupt.len(), received, plain == carried, held)
}

fn check(sc: &Scenario) -> Outcome {
    if sc.scheme < 12 {
        let (cfg, cut) = tcp_scheme(sc.scheme);
        let pair = |carry_bytes| {
            tcp_pair(&TcpConfig {
                carry_bytes,
                ..cfg.clone()
            })
        };
        compare(sc, cut, pair, TcpEndpoint::held_bytes)
    } else {
        let (tcp, cfg, cut) = mptcp_scheme(sc.scheme);
        let pair = |carry_bytes| {
            mptcp_pair(
                &TcpConfig {
                    carry_bytes,
                    ..tcp.clone()
                },
                &cfg,
                sc.seed,
            )
        };
        compare(sc, cut, pair, MptcpEndpoint::held_bytes)
    }
}

/// Every message intact and received, the traces identical, nothing held.
fn assert_intact(sc: &Scenario) {
    let total: u64 = sc.msgs.iter().map(|m| m.0 + m.1.unwrap_or(0)).sum();
    let (checked, corrupt, received, same, held) = check(sc);
    let s = sc.scheme;
    assert_eq!(corrupt, 0, "scheme {s}: messages with wrong bytes");
    assert_eq!(received, messages(sc), "scheme {s}: messages received");
    assert_eq!(checked, total, "scheme {s}: bytes checked");
    assert!(same, "scheme {s}: packets or events differ with bytes carried");
    assert_eq!(
        held, 0,
        "scheme {s}: bytes still held after every message was taken and acknowledged"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_message_arrives_byte_exact_and_the_packets_do_not_change(sc in scenario()) {
        assert_intact(&sc);
    }
}

/// Each scheme at least once, under heavy faults (the property test picks schemes at random).
#[test]
fn every_scheme_survives_heavy_faults_byte_exact() {
    for scheme in 0..SCHEMES {
        assert_intact(&Scenario {
            scheme,
            seed: 7 + scheme as u64,
            msgs: vec![
                (30_000, Some(12_345)),
                (1, None),
                (0, Some(0)),
                (17_001, None),
                (2_500, Some(64_000)),
            ],
            drop: 100,
            dup: 50,
            reorder: 50,
            delay: 50,
        });
    }
}
