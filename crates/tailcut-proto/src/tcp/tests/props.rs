//! Property tests: under random loss (payload cuts for CP, and CE marks) in both directions, every transfer completes,
//! every byte is delivered exactly once, every message is reported exactly once, and a run is a pure
//! function of its seed.

use super::harness::{test_cfg, Fate, Harness, Sent};
use crate::engine::AppEvent;
use crate::rng::Rng;
use crate::tcp::{CongestionControl, DelayedAck, PiasConfig, TcpConfig, TcpIrConfig, TlpConfig};
use crate::time::Dur;
use proptest::prelude::*;
use rand::{Rng as _, SeedableRng};

#[derive(Clone, Debug)]
struct Scenario {
    seed: u64,
    data_loss: f64,
    ack_loss: f64,
    ce_prob: f64,
    reorder_prob: f64,
    sack: bool,
    delayed_ack: bool,
    handshake: bool,
    dctcp: bool,
    limited_transmit: bool,
    early_retransmit: bool,
    /// Disable dupACK-based loss detection (timer-only recovery).
    no_dupacks: bool,
    /// Message sizes sent by side 0 and by side 1.
    msgs: [Vec<u64>; 2],
    /// Baseline built into the endpoint: 0 none, 1 TLP, 2 TCP-IR, 3 Proactive, 4 PIAS, 5 pFabric, 6 CP
    /// (three quarters of the data losses are payload cuts, SACK on, no dupACK threshold).
    scheme: u8,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        any::<u64>(),
        0.0..0.25f64,
        0.0..0.25f64,
        0.0..0.3f64,
        0.0..0.1f64,
        any::<[bool; 7]>(),
        prop::collection::vec(0u64..40_000, 1..6),
        prop::collection::vec(0u64..20_000, 0..4),
        0u8..7,
    )
        .prop_map(
            |(seed, data_loss, ack_loss, ce_prob, reorder_prob, flags, a, b, scheme)| Scenario {
                seed,
                data_loss,
                ack_loss,
                ce_prob,
                reorder_prob,
                sack: flags[0],
                delayed_ack: flags[1],
                handshake: flags[2],
                dctcp: flags[3],
                limited_transmit: flags[4],
                early_retransmit: flags[5],
                no_dupacks: flags[6] && flags[5],
                msgs: [a, b],
                scheme,
            },
        )
}

fn run(sc: &Scenario) -> Harness {
    let cp = sc.scheme == 6;
    let cfg = TcpConfig {
        sack: sc.sack || cp,
        delayed_ack: sc.delayed_ack.then_some(DelayedAck::Fixed(Dur::from_micros(200))),
        handshake: sc.handshake,
        limited_transmit: sc.limited_transmit,
        early_retransmit: sc.early_retransmit,
        dupack_threshold: if sc.no_dupacks || cp { u32::MAX } else { 3 },
        ecn: sc.dctcp,
        congestion_control: if sc.dctcp {
            CongestionControl::Dctcp { g: 1.0 / 16.0 }
        } else {
            CongestionControl::NewReno
        },
        tlp: (sc.scheme == 1).then(|| TlpConfig {
            pto_floor: Dur::from_micros(100),
            ..TlpConfig::default()
        }),
        tcp_ir: (sc.scheme == 2).then(TcpIrConfig::default),
        proactive: sc.scheme == 3,
        pias: (sc.scheme == 4).then(|| PiasConfig {
            thresholds_bytes: vec![5_000, 20_000],
        }),
        pfabric_priority: sc.scheme == 5,
        pfabric_probe_after: (sc.scheme == 5).then_some(2),
        cp,
        ..test_cfg()
    };
    let mut h = Harness::tcp(cfg);
    h.step_limit = 2_000_000;
    let mut rng = Rng::seed_from_u64(sc.seed ^ 0x5eed);
    let sc2 = sc.clone();
    h.set_fault(move |c| {
        let loss = if c.pkt.payload_len() > 0 {
            sc2.data_loss
        } else {
            sc2.ack_loss
        };
        let x: f64 = rng.random();
        if x < loss {
            if sc2.scheme == 6 && c.pkt.payload_len() > 0 && x < 0.75 * loss {
                Fate::Cut
            } else {
                Fate::Drop
            }
        } else if x < loss + sc2.ce_prob {
            Fate::Ce
        } else if x < loss + sc2.ce_prob + sc2.reorder_prob {
            Fate::Delay(Dur::from_micros(3))
        } else {
            Fate::Deliver
        }
    });
    for side in 0..2 {
        for (i, &len) in sc.msgs[side].iter().enumerate() {
            h.send(side, (side as u64) << 32 | i as u64, len);
        }
    }
    h.run();
    h
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn transfers_complete_exactly_once_and_deterministically(sc in scenario()) {
        let h = run(&sc);
        for side in 0..2 {
            let total: u64 = sc.msgs[side].iter().sum();
            let peer = &h.eps[1 - side];
            prop_assert_eq!(peer.rcv_nxt(), total);
            prop_assert_eq!(peer.stats().bytes_delivered, total);
            prop_assert_eq!(h.eps[side].snd_una(), total);
            let ids: Vec<u64> = (0..sc.msgs[side].len() as u64).map(|i| (side as u64) << 32 | i).collect();
            let mut received: Vec<u64> = h.events_of(1 - side).into_iter().filter_map(|e| match e {
                AppEvent::MessageReceived { msg } => Some(msg),
                _ => None,
            }).collect();
            let mut acked: Vec<u64> = h.events_of(side).into_iter().filter_map(|e| match e {
                AppEvent::MessageAcked { msg, stats } => {
                    assert!(stats.sent_bytes >= sc.msgs[side][(msg & 0xffff_ffff) as usize]);
                    Some(msg)
                }
                _ => None,
            }).collect();
            received.sort_unstable();
            acked.sort_unstable();
            prop_assert_eq!(&received, &ids);
            prop_assert_eq!(&acked, &ids);
        }
        let again = run(&sc);
        let a: &[Sent] = &h.sent;
        let b: &[Sent] = &again.sent;
        prop_assert!(a == b, "same seed, different packet trace");
        prop_assert_eq!(&h.events, &again.events);
    }
}

#[test]
fn heavy_loss_scenario_completes() {
    let sc = Scenario {
        seed: 42,
        data_loss: 0.2,
        ack_loss: 0.2,
        ce_prob: 0.1,
        reorder_prob: 0.05,
        sack: true,
        delayed_ack: true,
        handshake: true,
        dctcp: false,
        limited_transmit: true,
        early_retransmit: true,
        no_dupacks: false,
        msgs: [vec![200_000, 0, 50_000], vec![30_000]],
        scheme: 0,
    };
    let h = run(&sc);
    let st = h.eps[0].stats();
    assert!(st.retransmits > 10 && st.timeouts > 0 && st.fast_retransmits > 0);
    assert_eq!(h.eps[1].rcv_nxt(), 250_000);
    // Every baseline completes the same scenario.
    for scheme in 1..7 {
        let h = run(&Scenario { scheme, ..sc.clone() });
        assert_eq!(h.eps[1].rcv_nxt(), 250_000, "scheme {scheme}");
        assert_eq!(h.eps[0].rcv_nxt(), 30_000, "scheme {scheme}");
    }
    // CP's cuts are reported and repaired by PACK-driven retransmissions.
    let h = run(&Scenario { scheme: 6, ..sc });
    let st = h.eps[0].stats();
    assert!(st.packs_received > 5 && st.precise_retransmits > 5, "{st:?}");
    assert!(h.eps[1].stats().packs_sent >= st.packs_received);
}
