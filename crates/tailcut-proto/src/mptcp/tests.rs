//! Scripted packet-sequence tests of MPTCP and FUSO: two endpoints joined by one wire per sub-flow
//! (each with its own delay), fault scripts deciding each packet's fate; the generic harness
//! ([`crate::testing`]) with an MPTCP probe.

use super::fuso::{self, PathView};
use super::lia;
use super::subflow::{DSN_MASK, PROTECTED, RECOVERY};
use super::{MptcpConfig, MptcpEndpoint};
use crate::engine::{AppEvent, Engine};
use crate::packet::{Addr, FiveTuple, Header, Packet, TcpExt, TcpFlags, TcpHeader};
use crate::rng::Rng;
use crate::seq::Seq;
use crate::tcp::TcpConfig;
use crate::testing::{self, Fate, Harness, Probe};
use crate::time::{Dur, Time};
use rand::SeedableRng;
use std::collections::HashMap;

const ISN: [Seq; 2] = [Seq(0xffff_f000), Seq(77)];
const PORTS: [u16; 2] = [1000, 80];

fn tuple(side: usize) -> FiveTuple {
    let t = FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: PORTS[0],
        dst_port: PORTS[1],
        ..Default::default()
    };
    if side == 0 {
        t
    } else {
        t.reversed()
    }
}

fn tcp_cfg() -> TcpConfig {
    TcpConfig {
        mss_bytes: 1000,
        initial_cwnd_segments: 16,
        min_rto: Dur::from_millis(5),
        max_rto: Dur::from_millis(1_000),
        initial_rto: Dur::from_millis(5),
        ..TcpConfig::default()
    }
}

/// What the fault scripts see, and the log keeps, of an MPTCP packet entering the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MptcpInfo {
    sub: usize,
    /// Sub-flow stream offset of a data packet.
    offset: Option<u64>,
    dsn: Option<u64>,
    /// Earlier transmissions of this (sub-flow, offset): 0 = first.
    copy: u64,
    /// A first transmission on its sub-flow of a DSN another packet already carried.
    dsn_copy: bool,
}

type Sent = testing::Sent<MptcpInfo>;
type Wire<'a> = testing::Wire<'a, MptcpInfo>;

/// MPTCP's knowledge of its packets for the generic harness: which sub-flow a packet takes (its
/// source port), the one-way delay of that sub-flow, and the offsets and DSNs it carries.
struct MptcpProbe {
    /// One-way delay of sub-flow i.
    delay: Vec<Dur>,
    copies: HashMap<(usize, usize, u64), u64>,
    dsns_seen: [HashMap<u64, u32>; 2],
}

impl Probe<MptcpEndpoint> for MptcpProbe {
    type Info = MptcpInfo;

    fn on_link(&mut self, from: usize, p: &Packet) -> MptcpInfo {
        let sub = usize::from(p.tuple.src_port - PORTS[from]);
        let h = p.tcp().expect("tcp");
        let TcpExt::Dss { dsn, .. } = h.ext else {
            panic!("every MPTCP segment carries a DSS")
        };
        let (mut offset, mut dsn_opt, mut copy, mut dsn_copy) = (None, None, 0, false);
        if h.payload_len > 0 {
            let isn = ISN[from].wrapping_add((sub as u32).wrapping_mul(0x3c6e_f35f));
            let off = h.seq.unwrap_near(isn, 0).expect("offset");
            let c = self.copies.entry((from, sub, off)).or_insert(0);
            copy = *c;
            *c += 1;
            let seen = self.dsns_seen[from].entry(dsn).or_insert(0);
            dsn_copy = copy == 0 && *seen > 0;
            if copy == 0 {
                *seen += 1;
            }
            offset = Some(off);
            dsn_opt = Some(dsn);
        }
        MptcpInfo {
            sub,
            offset,
            dsn: dsn_opt,
            copy,
            dsn_copy,
        }
    }

    fn one_way(&self, info: &MptcpInfo, _: Dur) -> Dur {
        self.delay[info.sub]
    }
}

/// Two MPTCP endpoints joined by one wire per sub-flow: the generic harness with [`MptcpProbe`],
/// no serialisation delay.
type Net = Harness<MptcpEndpoint, MptcpProbe>;

impl Harness<MptcpEndpoint, MptcpProbe> {
    /// A client (side 0) and a server (side 1); sub-flow i's one-way delay is `delay[i]`.
    fn mptcp(tcp: TcpConfig, cfg: MptcpConfig, delay: Vec<Dur>) -> Net {
        let mk = |side: usize| {
            MptcpEndpoint::new(
                tcp.clone(),
                cfg.clone(),
                tuple(side),
                ISN[side],
                ISN[1 - side],
                Rng::seed_from_u64(7 + side as u64),
            )
        };
        let probe = MptcpProbe {
            delay,
            copies: HashMap::new(),
            dsns_seen: [HashMap::new(), HashMap::new()],
        };
        let mut n = Harness::with_probe(mk(0), mk(1), probe);
        n.step_limit = 2_000_000;
        n
    }

    /// Drops the packets `keep` returns false for (replacing any fault script).
    fn keep_only(&mut self, mut keep: impl FnMut(&Wire<'_>) -> bool + 'static) {
        self.set_fault(move |w| if keep(w) { Fate::Deliver } else { Fate::Drop });
    }

    fn acked(&self, msg: u64) -> Option<crate::engine::MessageStats> {
        self.events.iter().find_map(|&(_, side, ev)| match ev {
            AppEvent::MessageAcked { msg: m, stats } if side == 0 && m == msg => Some(stats),
            _ => None,
        })
    }

    /// FUSO recovery copies (side 0): first transmissions on a sub-flow of a DSN already carried.
    fn recovery_copies(&self) -> Vec<Sent> {
        self.sent
            .iter()
            .filter(|s| s.from == 0 && s.info.dsn_copy)
            .cloned()
            .collect()
    }
}

/// A fault script: data packets `pred` selects arrive CE-marked.
fn ce_where(pred: fn(&Wire<'_>) -> bool) -> impl FnMut(&mut Wire<'_>) -> Fate {
    move |w| {
        if w.info.offset.is_some() && pred(w) {
            Fate::Ce
        } else {
            Fate::Deliver
        }
    }
}

/// A fault script: data packets `pred` selects arrive payload-cut (CP's trimming switch).
fn cut_where(mut pred: impl FnMut(&Wire<'_>) -> bool) -> impl FnMut(&mut Wire<'_>) -> Fate {
    move |w| {
        if w.info.offset.is_some() && pred(w) {
            Fate::Cut
        } else {
            Fate::Deliver
        }
    }
}

fn plain(subflows: u32) -> MptcpConfig {
    MptcpConfig {
        subflows,
        ..MptcpConfig::default()
    }
}

fn fuso(subflows: u32) -> MptcpConfig {
    MptcpConfig {
        subflows,
        // Keep Linux's other multipath retransmissions out of the way: FUSO's copies are then the only
        // first transmissions of an already-sent DSN.
        opportunistic_retransmit: false,
        dead_after_timeouts: 0,
        ..MptcpConfig::fuso()
    }
}

fn us(n: u64) -> Dur {
    Dur::from_micros(n)
}

// ---- MPTCP -----------------------------------------------------------------------------------

#[test]
fn data_spreads_over_every_subflow_and_reassembles_at_data_level() {
    let mut n = Net::mptcp(tcp_cfg(), plain(4), vec![us(10), us(20), us(30), us(40)]);
    n.send(0, 1, 200_000);
    n.run();
    assert!(n.received(1, 1).is_some());
    let st = n.acked(1).expect("acked");
    assert_eq!(st.sent_bytes, 200_000);
    assert_eq!(st.retransmitted_bytes + st.redundant_bytes, 0);
    for i in 0..4 {
        assert!(
            n.eps[0].subflow_stats(i).data_segments_sent > 0,
            "sub-flow {i} idle"
        );
    }
    assert_eq!(n.eps[1].data_rcv_nxt(), 200_000);
    assert_eq!(n.eps[0].data_una(), 200_000);
    // Every sub-flow has its own 5-tuple: consecutive ports.
    let ports: std::collections::BTreeSet<u16> = n.sent.iter().map(|s| s.info.sub as u16).collect();
    assert_eq!(ports.len(), 4);
}

#[test]
fn initial_window_is_split_across_subflows() {
    let mut n = Net::mptcp(tcp_cfg(), plain(4), vec![us(50); 4]);
    n.send(0, 1, 100_000);
    // At time 0 the whole total initial window (16 segments) goes out, 4 per sub-flow.
    let at0: Vec<usize> = n
        .sent
        .iter()
        .filter(|s| s.time == Time::ZERO)
        .map(|s| s.info.sub)
        .collect();
    assert_eq!(at0.len(), 16);
    for i in 0..4 {
        assert_eq!(at0.iter().filter(|&&s| s == i).count(), 4);
        assert_eq!(n.eps[0].subflow_cwnd(i), 4_000);
    }
}

#[test]
fn scheduler_prefers_the_lowest_rtt_subflow() {
    let mut n = Net::mptcp(tcp_cfg(), plain(3), vec![us(300), us(20), us(150)]);
    n.send(0, 1, 60_000);
    n.run();
    for i in 0..3 {
        assert!(n.eps[0].subflow_srtt(i).is_some());
    }
    let before = n.sent.len();
    n.send(0, 2, 3_000);
    n.run();
    let data: Vec<usize> = n.sent[before..]
        .iter()
        .filter(|s| s.from == 0 && s.info.offset.is_some())
        .map(|s| s.info.sub)
        .collect();
    assert_eq!(data, vec![1, 1, 1], "all on the 20 us sub-flow");
}

#[test]
fn lia_alpha_matches_rfc6356() {
    // n identical paths: alpha = 1/n.
    assert!((lia::alpha(&[(10.0, 1.0), (10.0, 1.0)]) - 0.5).abs() < 1e-12);
    assert!((lia::alpha(&[(8.0, 2.0); 4]) - 0.25).abs() < 1e-12);
    // One path alone: alpha = 1 (plain TCP).
    assert!((lia::alpha(&[(7.0, 3.0)]) - 1.0).abs() < 1e-12);
    // A fast path with a small window and a slow path with a big one.
    let a = lia::alpha(&[(10.0, 1.0), (40.0, 4.0)]);
    let expect = 50.0 * 10.0 / (20.0f64 * 20.0);
    assert!((a - expect).abs() < 1e-12, "{a}");
}

/// Congestion avoidance of a 2-sub-flow connection after one loss on each: coupled windows grow
/// more slowly than two independent TCPs.
#[test]
fn coupled_increase_is_slower_than_uncoupled() {
    let total = |coupled: bool| {
        let cfg = MptcpConfig { coupled, ..plain(2) };
        let mut n = Net::mptcp(tcp_cfg(), cfg, vec![us(50), us(50)]);
        n.keep_only(|c| !(c.from == 0 && c.info.copy == 0 && c.info.offset == Some(20_000)));
        n.send(0, 1, 3_000_000);
        n.run();
        assert!(n.received(1, 1).is_some());
        n.eps[0].subflow_cwnd(0) + n.eps[0].subflow_cwnd(1)
    };
    let (c, u) = (total(true), total(false));
    assert!(c < u, "coupled {c} uncoupled {u}");
}

/// "DCTCP-style ECN reaction where the experiment asks for it": each sub-flow runs DCTCP, echoes CE
/// on its own ACKs and cuts its own window by alpha / 2.
#[test]
fn subflows_react_to_ce_marks_as_dctcp() {
    let tcp = TcpConfig {
        ecn: true,
        congestion_control: crate::tcp::CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..tcp_cfg()
    };
    let mut n = Net::mptcp(tcp, plain(2), vec![us(30), us(30)]);
    // Sub-flow 1's data is marked from its 20th segment on; sub-flow 0's never.
    n.fault(ce_where(|c| {
        c.info.sub == 1 && c.info.offset.is_some_and(|o| o >= 20_000)
    }));
    n.send(0, 1, 400_000);
    n.run();
    assert!(n.received(1, 1).is_some());
    let (s0, s1) = (n.eps[0].subflow_stats(0), n.eps[0].subflow_stats(1));
    assert_eq!(s0.ecn_reductions, 0);
    assert!(s1.ecn_reductions > 0);
    assert_eq!(s0.retransmits + s1.retransmits, 0);
    // The marked sub-flow ends with the smaller window.
    assert!(n.eps[0].subflow_cwnd(1) < n.eps[0].subflow_cwnd(0));
}

#[test]
fn receive_window_block_triggers_opportunistic_retransmission_and_penalisation() {
    let tcp = TcpConfig {
        rcv_window_bytes: 6_000,
        initial_cwnd_segments: 4,
        ..tcp_cfg()
    };
    let mut n = Net::mptcp(tcp, plain(2), vec![us(20), us(2_000)]);
    // One segment on each sub-flow first, so both have an RTT sample (Linux penalises only a
    // sub-flow measured slower than the one that takes the retransmission).
    n.send(0, 0, 4_000);
    n.run();
    n.send(0, 1, 300_000);
    n.run();
    assert!(n.received(1, 1).is_some());
    let st = *n.eps[0].stats();
    assert!(st.opportunistic_retransmits > 0, "{st:?}");
    assert!(st.penalizations > 0, "{st:?}");
    // Each opportunistic retransmission is a first transmission on the fast sub-flow of data the
    // slow one carried.
    assert!(n
        .sent
        .iter()
        .any(|s| s.from == 0 && s.info.dsn_copy && s.info.sub == 0));
    let acked = n.acked(1).expect("acked");
    assert!(acked.retransmitted_bytes > 0);
}

#[test]
fn a_dead_subflows_data_is_reinjected_on_the_others() {
    let mut n = Net::mptcp(tcp_cfg(), plain(2), vec![us(20), us(20)]);
    // Sub-flow 1 goes black after its first few segments.
    n.keep_only(|c| !(c.info.sub == 1 && c.info.offset.is_some_and(|o| o >= 2_000)));
    n.send(0, 1, 50_000);
    n.run_until(Time::ZERO + Dur::from_millis(500));
    let t = n.received(1, 1).expect("delivered through sub-flow 0");
    let st = *n.eps[0].stats();
    assert_eq!(st.dead_subflows, 1, "{st:?}");
    assert!(st.reinjected_segments > 0);
    // Dead after 3 consecutive RTOs (5 + 10 + 20 ms).
    assert!(t >= Time::ZERO + Dur::from_millis(35), "{t}");
    assert!(n.eps[0].subflow_stats(1).timeouts >= 3);
    let acked = n.acked(1).expect("acked");
    assert!(acked.timeouts >= 3);
}

#[test]
fn warmup_opens_every_subflow_then_idles_before_application_data() {
    let cfg = MptcpConfig {
        warmup_bytes: 100_000,
        ..plain(4)
    };
    let mut n = Net::mptcp(tcp_cfg(), cfg, vec![us(40); 4]);
    n.send(0, 9, 20_000);
    n.run();
    assert!(n.received(1, 9).is_some());
    // Only the application's messages are reported.
    assert!(n.events.iter().all(|(_, _, e)| match e {
        AppEvent::MessageReceived { msg } | AppEvent::MessageAcked { msg, .. } => *msg == 9,
        _ => true,
    }));
    let first_app = n
        .sent
        .iter()
        .find(|s| s.from == 0 && s.info.dsn.is_some_and(|d| d >= 100_000))
        .expect("app data");
    let last_warm = n
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.info.dsn.is_some_and(|d| d < 100_000))
        .map(|s| s.time)
        .max()
        .unwrap();
    // At least one RTO (5 ms) of idle between warm-up and application data.
    assert!(first_app.time - last_warm >= Dur::from_millis(5));
    // And the application data restarts from the initial window: 16 segments over 4 sub-flows.
    let burst = n
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.time == first_app.time && s.info.offset.is_some())
        .count();
    assert_eq!(burst, 16);
    let st = n.acked(9).expect("acked");
    assert_eq!(st.sent_bytes, 20_000);
}

// ---- FUSO ------------------------------------------------------------------------------------

fn view(cost: Option<f64>, rtt_us: u64, eligible: bool) -> PathView {
    PathView {
        cost,
        rtt: us(rtt_us),
        eligible,
    }
}

#[test]
fn worst_subflow_rules() {
    // Largest C_l among eligible.
    let v = [
        view(Some(0.2), 10, true),
        view(Some(0.5), 10, true),
        view(Some(0.9), 10, false),
    ];
    assert_eq!(fuso::worst(&v), Some(1));
    // Equal C_l: largest RTT.
    let v = [
        view(Some(0.3), 10, true),
        view(Some(0.3), 50, true),
        view(Some(0.1), 99, true),
    ];
    assert_eq!(fuso::worst(&v), Some(1));
    // All zero: largest RTT.
    let v = [
        view(Some(0.0), 30, true),
        view(Some(0.0), 10, true),
        view(Some(0.0), 20, true),
    ];
    assert_eq!(fuso::worst(&v), Some(0));
    // Full tie: lowest index.
    let v = [view(Some(0.0), 10, true), view(Some(0.0), 10, true)];
    assert_eq!(fuso::worst(&v), Some(0));
    // Nothing un-ACKed and unprotected: no worst.
    assert_eq!(fuso::worst(&[view(Some(0.5), 10, false)]), None);
}

#[test]
fn best_subflow_rules() {
    let mut rng = Rng::seed_from_u64(3);
    // Smallest C_l among those with room.
    let v = [
        view(Some(0.2), 10, true),
        view(Some(0.1), 90, true),
        view(Some(0.0), 1, false),
    ];
    assert_eq!(fuso::best(&v, &mut rng), Some(1));
    // Zero beats positive, positive beats infinity.
    let v = [
        view(Some(0.4), 10, true),
        view(None, 1, true),
        view(Some(0.0), 80, true),
    ];
    assert_eq!(fuso::best(&v, &mut rng), Some(2));
    let v = [view(None, 1, true), view(Some(0.7), 80, true)];
    assert_eq!(fuso::best(&v, &mut rng), Some(1));
    // Several zeros: smallest RTT.
    let v = [
        view(Some(0.0), 30, true),
        view(Some(0.0), 10, true),
        view(Some(0.0), 20, true),
    ];
    assert_eq!(fuso::best(&v, &mut rng), Some(1));
    // All infinite: random among those with room, each of them eventually.
    let v = [
        view(None, 0, true),
        view(None, 0, false),
        view(None, 0, true),
        view(None, 0, true),
    ];
    let mut seen = [0u32; 4];
    for _ in 0..200 {
        seen[fuso::best(&v, &mut rng).expect("some")] += 1;
    }
    assert_eq!(seen[1], 0);
    assert!(seen[0] > 0 && seen[2] > 0 && seen[3] > 0, "{seen:?}");
    // No room anywhere: no best.
    assert_eq!(fuso::best(&[view(Some(0.0), 1, false)], &mut rng), None);
}

#[test]
fn loss_cost_follows_the_paper() {
    let mut n = Net::mptcp(tcp_cfg(), fuso(2), vec![us(20), us(20)]);
    let s = &mut n.eps[0].subs[0];
    assert_eq!(s.loss_cost(0.5, 0.5), None, "never transmitted: infinity");
    s.sender.stats.data_segments_sent = 40;
    assert_eq!(s.loss_cost(0.5, 0.5), Some(0.0), "never retransmitted: zero");
    s.sender.stats.retransmits = 2;
    s.since_last_rtx = 5;
    let c = s.loss_cost(0.5, 0.5).unwrap();
    assert!((c - (0.5 * 2.0 / 40.0 + 0.5 / 5.0)).abs() < 1e-12, "{c}");
    let c = s.loss_cost(1.0, 0.0).unwrap();
    assert!((c - 0.05).abs() < 1e-12);
}

/// The whole message fills the total initial window at once: no recovery copy then (no spare cwnd).
/// Once ACKs open the window and nothing new is left, copies go out, each after all new data.
#[test]
fn recovery_copies_need_spare_cwnd_and_no_new_data() {
    let tcp = TcpConfig {
        initial_cwnd_segments: 4,
        ..tcp_cfg()
    };
    let mut n = Net::mptcp(tcp, fuso(2), vec![us(20), us(60)]);
    // Lose the first transmission of the segment at offset 1000 on sub-flow 0.
    n.keep_only(|c| !(c.from == 0 && c.info.sub == 0 && c.info.offset == Some(1_000) && c.info.copy == 0));
    n.send(0, 1, 4_000);
    assert!(n.recovery_copies().is_empty(), "cwnd full at time 0");
    n.run();
    let copies = n.recovery_copies();
    assert!(!copies.is_empty());
    let last_new = n
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.info.copy == 0 && !s.info.dsn_copy && s.info.dsn.is_some())
        .map(|s| s.time)
        .max()
        .unwrap();
    assert!(copies.iter().all(|c| c.time >= last_new && c.time > Time::ZERO));
    // The lost segment's data arrived through a copy before sub-flow 0's own retransmission would.
    let rx = n.received(1, 1).expect("received");
    assert!(rx < Time::ZERO + Dur::from_millis(5), "{rx}");
    let st = n.acked(1).unwrap();
    assert!(st.redundant_bytes > 0);
    assert_eq!(st.redundant_bytes, n.eps[0].stats().recovery_bytes);
}

/// More data than the window: while new data remains, spare cwnd goes to new data, never copies.
#[test]
fn no_recovery_copy_while_new_data_remains() {
    let mut n = Net::mptcp(tcp_cfg(), fuso(2), vec![us(20), us(40)]);
    let mut k = 0u64;
    n.keep_only(move |c| {
        k += 1;
        !(c.from == 0 && c.info.copy == 0 && k.is_multiple_of(17))
    });
    n.send(0, 1, 300_000);
    n.run();
    let last_new = n
        .sent
        .iter()
        .filter(|s| s.from == 0 && s.info.copy == 0 && !s.info.dsn_copy && s.info.dsn.is_some())
        .map(|s| s.time)
        .max()
        .unwrap();
    let copies = n.recovery_copies();
    assert!(!copies.is_empty());
    assert!(copies.iter().all(|c| c.time >= last_new));
}

#[test]
fn the_worst_subflows_oldest_packet_is_copied_onto_the_best() {
    let tcp = TcpConfig {
        initial_cwnd_segments: 8,
        ..tcp_cfg()
    };
    let mut n = Net::mptcp(tcp, fuso(2), vec![us(20), us(20)]);
    // Sub-flow 1 loses its first segment twice, so it retransmits and becomes the worst (C_l > 0);
    // sub-flow 0 never retransmits (C_l = 0) and is the best.
    n.keep_only(|c| !(c.from == 0 && c.info.sub == 1 && c.info.offset == Some(0) && c.info.copy < 2));
    n.send(0, 1, 40_000);
    n.run();
    assert!(n.received(1, 1).is_some());
    let copies = n.recovery_copies();
    assert!(!copies.is_empty());
    // Sub-flow 1's lost first segment carried DSN d; a copy of it rode sub-flow 0.
    let d = n
        .sent
        .iter()
        .find(|s| s.from == 0 && s.info.sub == 1 && s.info.offset == Some(0))
        .and_then(|s| s.info.dsn)
        .unwrap();
    assert!(
        copies.iter().any(|c| c.info.dsn == Some(d) && c.info.sub == 0),
        "{copies:?}"
    );
}

#[test]
fn each_packet_is_protected_at_most_once_and_copies_never() {
    let mut n = Net::mptcp(tcp_cfg(), fuso(3), vec![us(20), us(35), us(50)]);
    let mut rng = Rng::seed_from_u64(11);
    n.keep_only(move |c| c.from == 1 || rand::Rng::random_bool(&mut rng, 0.9));
    for m in 0..20 {
        n.send(0, m, 7_000);
        n.run();
        assert!(n.received(1, m).is_some());
    }
    let mut per_dsn: HashMap<u64, u32> = HashMap::new();
    for c in n.recovery_copies() {
        *per_dsn.entry(c.info.dsn.unwrap()).or_insert(0) += 1;
    }
    assert!(!per_dsn.is_empty());
    assert!(per_dsn.values().all(|&k| k == 1), "{per_dsn:?}");
    // Scoreboard marks: a recovery copy is never PROTECTED itself.
    for s in &n.eps[0].subs {
        for seg in s.sender.scoreboard.iter() {
            assert!(!(seg.tag & RECOVERY != 0 && seg.tag & PROTECTED != 0));
        }
    }
}

#[test]
fn a_lost_recovery_copy_is_retransmitted_by_its_carrier() {
    let tcp = TcpConfig {
        initial_cwnd_segments: 4,
        ..tcp_cfg()
    };
    let mut n = Net::mptcp(tcp, fuso(2), vec![us(20), us(20)]);
    let mut dropped: Option<(usize, u64)> = None;
    n.keep_only(move |c| {
        if c.from != 0 {
            return true;
        }
        // Lose sub-flow 0's first segment once, and the first recovery copy once.
        if c.info.sub == 0 && c.info.offset == Some(0) && c.info.copy == 0 {
            return false;
        }
        if c.info.dsn_copy && dropped.is_none() {
            dropped = Some((c.info.sub, c.info.offset.unwrap()));
            return false;
        }
        true
    });
    n.send(0, 1, 4_000);
    n.run();
    assert!(n.received(1, 1).is_some());
    let first = n.recovery_copies()[0].clone();
    assert!(first.fate == Fate::Drop);
    let (sub, off) = (first.info.sub, first.info.offset.unwrap());
    let again = n
        .sent
        .iter()
        .find(|s| s.from == 0 && s.info.sub == sub && s.info.offset == Some(off) && s.info.copy == 1)
        .expect("the carrier retransmits its lost copy");
    assert_eq!(again.info.dsn, first.info.dsn);
    assert!(n.eps[0].subflow_stats(sub).retransmits > 0);
}

// ---- receiver change (Sec. 4.1) ---------------------------------------------------------------

/// A segment of sub-flow `sub` at sub-flow offset `off` carrying DSN `dsn`, from side 0 to side 1.
fn segment(sub: u32, off: u64, dsn: u64, len: u32) -> Packet {
    let spread = sub.wrapping_mul(0x3c6e_f35f);
    let isn = ISN[0].wrapping_add(spread);
    let peer_isn = ISN[1].wrapping_add(spread);
    let t = tuple(0);
    Packet {
        tuple: FiveTuple {
            src_port: t.src_port + sub as u16,
            dst_port: t.dst_port + sub as u16,
            ..t
        },
        size_bytes: 40 + len,
        header: Header::Tcp(TcpHeader {
            seq: Seq::from_offset(isn, off),
            ack: Seq::from_offset(peer_isn, 0),
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: 1 << 20,
            payload_len: len,
            ext: TcpExt::Dss { dsn, data_ack: 0 },
            ..TcpHeader::default()
        }),
        ..Packet::default()
    }
}

fn receiver(ofo: bool) -> MptcpEndpoint {
    let cfg = MptcpConfig {
        ofo_to_data_level: ofo,
        ..plain(2)
    };
    let mut r = MptcpEndpoint::new(tcp_cfg(), cfg, tuple(1), ISN[1], ISN[0], Rng::seed_from_u64(1));
    r.expect_message(5, 2_000);
    while r.poll_event().is_some() {}
    r
}

/// Sub-flow 0 carried DSN 0 (lost) then DSN 1000 at sub-flow offset 1000; sub-flow 1 carried an
/// unrelated segment first (lost) and then FUSO's copy of DSN 0 at its offset 1000: out of sequence at
/// sub-flow level, in sequence at data level.
#[test]
fn a_copy_out_of_sequence_at_subflow_level_completes_the_data_level_with_the_receiver_change() {
    for ofo in [true, false] {
        let mut r = receiver(ofo);
        let t = Time::ZERO + us(10);
        r.handle_packet(t, &segment(0, 1_000, 1_000, 1_000), &[]);
        r.handle_packet(t, &segment(1, 1_000, 0, 1_000), &[]);
        let got = std::iter::from_fn(|| r.poll_event()).any(|e| e == AppEvent::MessageReceived { msg: 5 });
        assert_eq!(got, ofo, "ofo_to_data_level = {ofo}");
        assert_eq!(r.data_rcv_nxt(), if ofo { 2_000 } else { 0 });
        if !ofo {
            // Without the change the copy waits for sub-flow 1's hole; sub-flow 0's own retransmission
            // of DSN 0 completes the data level.
            r.handle_packet(t, &segment(0, 0, 0, 1_000), &[]);
            assert_eq!(r.data_rcv_nxt(), 2_000);
        }
        assert!(r.poll_transmit(t, &mut Vec::new()).is_some(), "ACKs owed");
    }
}

#[test]
fn held_segments_reach_the_data_level_when_the_subflow_hole_fills() {
    let mut r = receiver(false);
    let t = Time::ZERO + us(10);
    r.handle_packet(t, &segment(1, 1_000, 1_000, 1_000), &[]);
    assert_eq!(r.data_rcv_nxt(), 0);
    r.handle_packet(t, &segment(1, 0, 0, 1_000), &[]);
    assert_eq!(r.data_rcv_nxt(), 2_000);
    // The DSS data ACK on the next segment says so.
    let p = r.poll_transmit(t, &mut Vec::new()).expect("ack");
    match p.tcp().unwrap().ext {
        TcpExt::Dss { data_ack, .. } => assert_eq!(data_ack, 2_000),
        e => panic!("{e:?}"),
    }
    let _ = DSN_MASK;
}

// ---- invariants ------------------------------------------------------------------------------

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// CP on the sub-flows under random payload cuts (and a few real drops, recovered by the RTO
        /// with dupACK threshold inf): every message is delivered and acknowledged, the data level ends
        /// complete on both sides, and every cut that left a hole was PACKed.
        #[test]
        fn cp_subflows_deliver_everything_under_random_cuts(
            seed in 0u64..1_000,
            cut in 0.0f64..0.3,
            loss in 0.0f64..0.05,
            subflows in 1u32..5,
            fuso_on in any::<bool>(),
            lens in proptest::collection::vec(1u64..40_000, 1..5),
        ) {
            let cfg = if fuso_on { fuso(subflows) } else { plain(subflows) };
            let delays = (0..subflows).map(|i| us(20 + 15 * u64::from(i))).collect();
            let mut n = Net::mptcp(cp_tcp(), cfg, delays);
            let mut rng = crate::rng::Rng::seed_from_u64(seed);
            let mut cut_rng = crate::rng::Rng::seed_from_u64(seed + 1);
            // One script, so the cut draws come only from the data packets that were not lost.
            n.set_fault(move |w| {
                if rand::Rng::random_bool(&mut rng, loss) {
                    Fate::Drop
                } else if w.info.offset.is_some() && rand::Rng::random_bool(&mut cut_rng, cut) {
                    Fate::Cut
                } else {
                    Fate::Deliver
                }
            });
            let total: u64 = lens.iter().sum();
            for (m, &len) in lens.iter().enumerate() {
                n.send(0, m as u64, len);
            }
            n.run_until(Time::ZERO + Dur::from_millis(60_000));
            for (m, &len) in lens.iter().enumerate() {
                prop_assert!(n.received(1, m as u64).is_some(), "message {} not received", m);
                let st = n.acked(m as u64).expect("acked");
                prop_assert!(st.sent_bytes >= len + st.redundant_bytes);
            }
            prop_assert_eq!(n.eps[1].data_rcv_nxt(), total);
            prop_assert_eq!(n.eps[0].data_una(), total);
            for i in 0..subflows as usize {
                let rcv = n.eps[1].subflow_stats(i);
                prop_assert!(rcv.packs_sent <= rcv.cut_segments_received);
                prop_assert!(n.eps[0].subflow_stats(i).packs_received == rcv.packs_sent || loss > 0.0);
            }
        }

        /// Under any random loss in both directions, every message is delivered and acknowledged
        /// exactly, the data level ends complete on both sides, and no DSN gets more than one FUSO
        /// copy.
        #[test]
        fn every_message_arrives_and_each_packet_is_protected_once(
            seed in 0u64..1_000,
            loss in 0.0f64..0.25,
            subflows in 1u32..5,
            fuso_on in any::<bool>(),
            lens in proptest::collection::vec(1u64..40_000, 1..5),
        ) {
            let cfg = if fuso_on { fuso(subflows) } else { plain(subflows) };
            let delays = (0..subflows).map(|i| us(20 + 15 * u64::from(i))).collect();
            let mut n = Net::mptcp(tcp_cfg(), cfg, delays);
            let mut rng = crate::rng::Rng::seed_from_u64(seed);
            n.keep_only(move |_| !rand::Rng::random_bool(&mut rng, loss));
            let total: u64 = lens.iter().sum();
            for (m, &len) in lens.iter().enumerate() {
                n.send(0, m as u64, len);
            }
            n.run_until(Time::ZERO + Dur::from_millis(60_000));
            for (m, &len) in lens.iter().enumerate() {
                prop_assert!(n.received(1, m as u64).is_some(), "message {} not received", m);
                let st = n.acked(m as u64).expect("acked");
                prop_assert!(st.sent_bytes >= len + st.redundant_bytes);
            }
            prop_assert_eq!(n.eps[1].data_rcv_nxt(), total);
            prop_assert_eq!(n.eps[0].data_una(), total);
            if fuso_on {
                // (fuso() turns Linux's other multipath retransmissions off, so every first
                // transmission of an already-sent DSN is a FUSO copy.)
                let mut per_dsn: HashMap<u64, u32> = HashMap::new();
                for c in n.recovery_copies() {
                    *per_dsn.entry(c.info.dsn.unwrap()).or_insert(0) += 1;
                }
                prop_assert!(per_dsn.values().all(|&k| k == 1), "{:?}", per_dsn);
                prop_assert_eq!(
                    n.recovery_copies().len() as u64,
                    n.eps[0].stats().recovery_packets
                );
            } else {
                prop_assert_eq!(n.eps[0].stats().recovery_packets, 0);
            }
        }
    }
}

// ---- CP on sub-flows (issue #10) ---------------------------------------------------------------

fn cp_tcp() -> TcpConfig {
    TcpConfig {
        cp: true,
        sack: true,
        dupack_threshold: u32::MAX,
        initial_cwnd_segments: 8,
        ..tcp_cfg()
    }
}

/// Side 0's transmissions of (sub-flow, offset), in order.
fn transmissions(n: &Net, sub: usize, off: u64) -> Vec<Sent> {
    n.sent
        .iter()
        .filter(|s| s.from == 0 && s.info.sub == sub && s.info.offset == Some(off))
        .cloned()
        .collect()
}

#[test]
fn a_cut_subflow_segment_is_packed_and_resent_precisely_with_its_dsn() {
    for cfg in [plain(2), fuso(2)] {
        let mut n = Net::mptcp(cp_tcp(), cfg.clone(), vec![us(20), us(30)]);
        n.fault(cut_where(|c| {
            c.from == 0 && c.info.sub == 1 && c.info.offset == Some(1_000) && c.info.copy == 0
        }));
        n.send(0, 1, 8_000);
        n.run();
        let rx = n.received(1, 1).expect("received");
        // One RTT for the PACK plus one for the retransmission: far below the 5 ms RTO.
        assert!(rx < Time::ZERO + Dur::from_millis(1), "{rx}");
        let tx = transmissions(&n, 1, 1_000);
        assert_eq!(tx.len(), 2, "exactly one precise retransmission: {tx:?}");
        assert_eq!(tx[0].info.dsn, tx[1].info.dsn, "the DSS mapping survives the cut");
        let (snd, rcv) = (n.eps[0].subflow_stats(1), n.eps[1].subflow_stats(1));
        assert_eq!((rcv.cut_segments_received, rcv.packs_sent), (1, 1));
        assert_eq!((snd.packs_received, snd.precise_retransmits), (1, 1));
        for i in 0..2 {
            assert_eq!(n.eps[0].subflow_stats(i).timeouts, 0);
        }
        let st = n.acked(1).expect("acked");
        assert_eq!((st.timeouts, st.fast_retransmits), (0, 1), "{st:?}");
        assert_eq!(st.retransmitted_bytes, 1_000);
        // The precise retransmission is a retransmission for FUSO's C_l (docs/fuso.md).
        if let Some(f) = cfg.fuso {
            assert!(n.eps[0].subs[1].loss_cost(f.alpha, f.beta).unwrap() > 0.0);
        }
    }
}

#[test]
fn without_cp_a_cut_subflow_segment_is_a_loss_and_no_pack() {
    let tcp = TcpConfig {
        cp: false,
        ..cp_tcp()
    };
    let mut n = Net::mptcp(tcp, plain(2), vec![us(20), us(30)]);
    n.fault(cut_where(|c| {
        c.from == 0 && c.info.sub == 1 && c.info.offset == Some(1_000) && c.info.copy == 0
    }));
    n.send(0, 1, 8_000);
    n.run();
    assert!(n.received(1, 1).is_some());
    assert_eq!(n.eps[1].subflow_stats(1).packs_sent, 0);
    // With dupACK threshold inf and no PACK only the RTO recovers it.
    assert_eq!(n.eps[0].subflow_stats(1).timeouts, 1);
}

#[test]
fn a_cut_recovery_copy_is_packed_and_resent_by_its_carrier() {
    let tcp = TcpConfig {
        initial_cwnd_segments: 4,
        ..cp_tcp()
    };
    let mut n = Net::mptcp(tcp, fuso(2), vec![us(20), us(20)]);
    // Cut sub-flow 0's first segment once, and the first FUSO recovery copy once.
    n.fault(cut_where(|c| {
        c.from == 0 && (c.info.dsn_copy || (c.info.sub == 0 && c.info.offset == Some(0) && c.info.copy == 0))
    }));
    n.send(0, 1, 4_000);
    n.run();
    let rx = n.received(1, 1).expect("received");
    assert!(rx < Time::ZERO + Dur::from_millis(1), "{rx}");
    let first = n.recovery_copies()[0].clone();
    let (sub, off) = (first.info.sub, first.info.offset.unwrap());
    let tx = transmissions(&n, sub, off);
    assert!(tx.len() >= 2, "the carrier resends its cut copy: {tx:?}");
    assert_eq!(tx[1].info.dsn, first.info.dsn);
    assert!(n.eps[0].subflow_stats(sub).precise_retransmits > 0);
    for i in 0..2 {
        assert_eq!(n.eps[0].subflow_stats(i).timeouts, 0);
    }
}
