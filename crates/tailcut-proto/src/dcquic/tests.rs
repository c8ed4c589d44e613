use super::bridge::to_instant;
use super::cc::Dctcp;
use super::*;
use crate::engine::{AppEvent, MsgId};
use crate::packet::{Addr, FiveTuple, Proto};
use crate::rng;
use crate::testing::{Fate, Harness};
use crate::time::{Dur, Time};
use quinn_proto::congestion::Controller;
use std::sync::Arc;

/// Engine 0 is the client (addresses 1 and 2, port 1000), engine 1 the server (address 10, port 2000),
/// on the generic harness (`crate::testing`): 10 us one way.
type Pair = Harness<DcquicEngine>;

/// Datagrams as sent: (sending engine, bytes).
type Datagrams = Vec<(usize, Vec<u8>)>;

/// The tests below were written for DCQUIC's earlier initial window of 10 full packets (90 KB at the
/// 9 KB MPS) and script their flights with it, so they keep it. Under RFC 9002's cap (18 KB) the 100 KB
/// response of `handshake_then_rpc_completes_over_one_connection` does not complete within 50 ms in
/// this harness: not yet traced (docs/results-dcquic.md, "2b").
fn cfg() -> DcquicConfig {
    DcquicConfig::default()
}

fn pair(cfg: DcquicConfig, task: u64, seed: u64) -> Pair {
    let shared = Arc::new(Shared::new(cfg, epoch()));
    pair_with_shared(shared.clone(), shared, task, seed)
}

/// A pair whose client and server take their crypto (and ticket stores) from `client` / `server`.
/// The client's first flight leaves at once, before any fault a test installs.
fn pair_with_shared(client: Arc<Shared>, server: Arc<Shared>, task: u64, seed: u64) -> Pair {
    let t = FiveTuple {
        src: Addr(1),
        dst: Addr(10),
        src_port: 1000,
        dst_port: 2000,
        proto: Proto::Udp,
    };
    let c = DcquicEngine::new(
        client,
        t,
        true,
        vec![Addr(1), Addr(2)],
        task,
        rng::stream(seed, rng::Stream::Engine, 0),
        Time::ZERO,
    );
    let s = DcquicEngine::new(
        server,
        t.reversed(),
        false,
        vec![Addr(10)],
        task,
        rng::stream(seed, rng::Stream::Engine, 1),
        Time::ZERO,
    );
    let mut p = Harness::new(c, s);
    p.run_until(Time::ZERO);
    p
}

/// Starts one RPC: request `id` of `req` bytes from the client, response `id | 1` of `resp` bytes
/// from the server as soon as the request arrives.
fn rpc(p: &mut Pair, id: u64, req: u64, resp: u64) {
    p.rpc(id, req, id | 1, resp);
}

/// Sizes on the wire of every datagram sent, in order.
fn sizes(p: &Pair) -> Vec<u32> {
    p.sent.iter().map(|s| s.pkt.size_bytes).collect()
}

fn datagrams(p: &Pair) -> Datagrams {
    p.sent.iter().map(|s| (s.from, s.payload.clone())).collect()
}

/// Loses every datagram from or to `addr` from now on.
fn lose(p: &mut Pair, addr: Addr) {
    p.fault(move |w| {
        if w.pkt.tuple.src == addr || w.pkt.tuple.dst == addr {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
}

/// Sequential RPCs of `resp` bytes starting at `from`; returns each one's completion time.
fn sequential(p: &mut Pair, first_id: u64, n: u64, resp: u64, limit: Time) -> Vec<Option<Dur>> {
    let mut out = Vec::new();
    for k in 0..n {
        let id = (first_id + k) << 1;
        let start = p.now;
        rpc(p, id, 100, resp);
        let mut done = None;
        while p.now < limit {
            let step = p.now + Dur::from_millis(1);
            p.run_until(step);
            if let Some(t) = p.received(0, id | 1) {
                done = Some(t.saturating_sub(start));
                break;
            }
        }
        out.push(done);
    }
    out
}

#[test]
fn handshake_then_rpc_completes_over_one_connection() {
    let mut p = pair(cfg(), 10_000, 1);
    p.run_until(Time(1_000_000));
    let c = p.eps[0].counters();
    assert_eq!(c.handshakes, 1);
    // 1-RTT handshake: the client is connected after one round trip of 20 us plus serialisation-free
    // processing, well under two.
    assert!(
        c.handshake_ns >= 20_000 && c.handshake_ns < 40_000,
        "{}",
        c.handshake_ns
    );
    rpc(&mut p, 0, 1000, 100_000);
    p.run_until(Time(50_000_000));
    assert!(p.received(0, 1).is_some(), "{:?}", p.events);
    assert!(p
        .events
        .iter()
        .any(|&(_, i, ev)| i == 1 && matches!(ev, AppEvent::MessageAcked { msg: 1, .. })));
    // A second RPC reuses the connection: no new handshake.
    rpc(&mut p, 2, 1000, 10_000);
    p.run_until(Time(100_000_000));
    assert!(p.received(0, 3).is_some());
    assert_eq!(p.eps[0].counters().handshakes, 1);
}

/// Message ids carry no role: a request with an odd id answered by a response with an unrelated id
/// still travels as an RPC (request and response on one bidirectional stream, one stream record).
#[test]
fn request_and_response_ids_are_opaque() {
    let mut p = pair(cfg(), 0, 1);
    p.rpc(7, 1000, 40, 10_000);
    p.run_until(Time(50_000_000));
    assert!(p.received(0, 40).is_some(), "{:?}", p.events);
    assert!(p
        .events
        .iter()
        .any(|&(_, i, ev)| i == 1 && matches!(ev, AppEvent::MessageAcked { msg: 40, .. })));
    assert_eq!(p.eps[0].counters().streams_completed, 1);
    // A one-way message with an even id travels alone, on a unidirectional stream.
    p.send(0, 8, 5_000);
    p.run_until(Time(100_000_000));
    assert!(p.received(1, 8).is_some(), "{:?}", p.events);
    assert_eq!(p.eps[0].counters().streams_completed, 1);
}

#[test]
fn same_seed_gives_identical_runs() {
    let trace = |seed| {
        let mut p = pair(cfg(), 10_000, seed);
        rpc(&mut p, 0, 1000, 200_000);
        rpc(&mut p, 2, 5000, 30_000);
        p.run_until(Time(100_000_000));
        (p.events.clone(), sizes(&p))
    };
    let a = trace(7);
    assert!(a.0.len() >= 4, "{:?}", a.0);
    assert_eq!(a, trace(7));
}

#[test]
fn mps_is_chosen_by_task_size_and_used_on_the_wire() {
    let m = MpsConfig::default();
    assert_eq!(m.select(100), 9000);
    assert_eq!(m.select(999_999), 9000);
    assert_eq!(m.select(1_000_000), 5000);
    assert_eq!(m.select(2_000_000), 5000);
    let off = MpsConfig {
        negotiate: false,
        ..MpsConfig::default()
    };
    assert_eq!(off.select(100), 1252);
    assert_eq!(off.select(2_000_000), 1252);
    for (task, mps) in [(10_000u64, 9000u32), (2_000_000, 5000)] {
        let mut p = pair(cfg(), task, 3);
        rpc(&mut p, 0, 100, 300_000);
        p.run_until(Time(100_000_000));
        assert!(p.received(0, 1).is_some());
        let biggest = *sizes(&p).iter().max().unwrap();
        assert_eq!(biggest, mps + 28, "task {task}");
        assert_eq!(p.eps[0].mps(), Some(mps as u16));
    }
}

#[test]
fn dctcp_reduces_by_half_its_marked_fraction() {
    let base = epoch();
    let t0 = to_instant(base, Time(0));
    let mtu = 1000u16;
    for (g, marked_of_10, expect_factor) in [(1.0, 10u64, 0.5), (1.0, 4, 0.8), (1.0, 0, 1.0)] {
        let mut c = Dctcp::new(g, 10_000, t0, mtu);
        // Window 1: ten 1000-byte packets acked one ACK frame each, `marked_of_10` of them marked.
        for k in 0..10u64 {
            let now = to_instant(base, Time(1000 + k));
            c.acked(t0, 1000, true);
            c.end_acks();
            if k < marked_of_10 {
                c.congestion(now, t0, false, 0);
            }
        }
        // A window with marks reduces once, by the previous windows' alpha (1 at start, as Linux).
        let after_first = c.window();
        assert_eq!(after_first, if marked_of_10 > 0 { 5000 } else { 10_000 });
        // Window 2: one mark; cwnd *= 1 - alpha / 2 with alpha the fraction of window 1.
        let w = c.window();
        let now = to_instant(base, Time(5000));
        c.acked(t0, 1000, true);
        c.end_acks();
        assert!(
            (c.alpha() - marked_of_10 as f64 / 10.0).abs() < 1e-9,
            "alpha {}",
            c.alpha()
        );
        c.congestion(now, t0, false, 0);
        let want = ((w as f64) * expect_factor) as u64;
        assert_eq!(c.window(), want.max(2 * mtu as u64), "marked {marked_of_10}/10");
    }
}

/// The migration rule with small windows (W = 5, w = 2) and the paper's alpha = 2.
fn small_windows() -> MigrationConfig {
    MigrationConfig {
        long_window: 5,
        short_window: 2,
        alpha: 2.0,
        ..MigrationConfig::default()
    }
}

/// Stream `i`, one byte that took `ns`.
fn one_byte(i: u64, ns: u64) -> StreamRecord {
    StreamRecord {
        id: i,
        start: Time(0),
        end: Time(ns),
        total_bytes: 1,
    }
}

#[test]
fn migration_rule_fires_exactly_past_alpha_after_w_plus_w_streams() {
    let mc = small_windows();
    let rec = one_byte;
    // Fewer than W + w records never fire, however slow.
    let mut m = Monitor::new(&mc);
    for i in 0..6 {
        assert!(!m.record(&rec(i, if i < 4 { 10 } else { 1000 })));
    }
    // The 7th completes the windows: long = 5 x 10 (records 0-4)... records 0..4 are 10,10,10,10,1000
    // so long mean = 208, short = (1000 + x) / 2 > 416 iff x > -168: fires.
    assert!(m.record(&rec(6, 1000)));

    // Boundary: long mean 10, short mean exactly 20 = alpha x long: does not fire; 20.5 fires.
    let mut m = Monitor::new(&mc);
    for i in 0..5 {
        m.record(&rec(i, 10));
    }
    m.record(&rec(5, 20));
    assert!(!m.record(&rec(6, 20)));
    let mut m = Monitor::new(&mc);
    for i in 0..5 {
        m.record(&rec(i, 10));
    }
    m.record(&rec(5, 20));
    assert!(m.record(&rec(6, 21)));
    // Only the last w count as short and the W before them as long: old slow records slide out.
    let mut m = Monitor::new(&mc);
    for i in 0..7 {
        m.record(&rec(i, 1000));
    }
    for i in 7..12 {
        assert!(!m.record(&rec(i, 10)), "record {i}");
    }
    assert!(!m.record(&rec(12, 20)));
    assert!(!m.record(&rec(13, 20)));
    assert!(m.record(&rec(14, 21)) || !m.fires(&[]));
    // Provisional samples join the short window.
    let mut m = Monitor::new(&mc);
    for i in 0..6 {
        m.record(&rec(i, 10));
    }
    assert!(!m.fires(&[(20.0, 1)]));
    assert!(m.fires(&[(31.0, 1)]));
    // Per-byte normalisation (Eq. 2).
    assert_eq!(
        StreamRecord {
            id: 0,
            start: Time(100),
            end: Time(1100),
            total_bytes: 500
        }
        .time_per_byte(),
        2.0
    );
}

/// `min_stall` (not in the paper): past alpha, the rule still waits until the short window's mean
/// completion time (per-byte time x bytes, provisional streams included) reaches the floor.
#[test]
fn migration_rule_with_min_stall_needs_the_short_window_that_slow_in_time() {
    let mc = MigrationConfig {
        min_stall: Dur(1_000),
        ..small_windows()
    };
    // 10 B streams at 1 ns/B (10 ns each): 100x slower is 1,000 ns a stream.
    let rec = |i: u64, ns: u64| StreamRecord {
        id: i,
        start: Time(0),
        end: Time(ns),
        total_bytes: 10,
    };
    let mut m = Monitor::new(&mc);
    for i in 0..5 {
        m.record(&rec(i, 10));
    }
    // 50x slower, past alpha = 2, but 500 ns < 1,000 ns: no.
    m.record(&rec(5, 500));
    assert!(!m.record(&rec(6, 500)));
    let mut m = Monitor::new(&mc);
    for i in 0..5 {
        m.record(&rec(i, 10));
    }
    m.record(&rec(5, 1_000));
    // Mean exactly the floor fires (at least `min_stall`).
    assert!(m.record(&rec(6, 1_000)));
    // A provisional stream counts with its bytes: with the last record's 10 ns, it must take
    // 1,990 ns (199 ns/B x 10 B) for a mean of 1,000.
    let mut m = Monitor::new(&mc);
    for i in 0..6 {
        m.record(&rec(i, 10));
    }
    assert!(!m.fires(&[(198.9, 10)]));
    assert!(m.fires(&[(199.0, 10)]));
    // 0 is the paper's rule: alpha alone.
    let paper = MigrationConfig {
        min_stall: Dur(0),
        ..mc
    };
    let mut m = Monitor::new(&paper);
    for i in 0..5 {
        m.record(&rec(i, 10));
    }
    m.record(&rec(5, 30));
    assert!(m.record(&rec(6, 30)));
}

/// `min_history` (not in the paper): the rule does not fire before that many records on the current
/// path; in-flight (provisional) streams do not count toward it; a reset (migration) starts the count
/// again; 0 is the paper's rule.
#[test]
fn migration_rule_with_min_history_waits_for_that_many_records_on_the_path() {
    let paper = small_windows();
    let guarded = MigrationConfig {
        min_history: 8,
        ..paper.clone()
    };
    let rec = one_byte;
    // 5 fast then slow records: the paper's rule fires at the 7th (W + w) to the 9th (then the slow
    // records fill the long window), the guarded one not before the 8th.
    let mut a = Monitor::new(&paper);
    let mut b = Monitor::new(&guarded);
    let mut fired_a = Vec::new();
    let mut fired_b = Vec::new();
    for i in 0..9 {
        let r = rec(i, if i < 5 { 10 } else { 1000 });
        fired_a.push(a.record(&r));
        fired_b.push(b.record(&r));
    }
    assert_eq!(
        fired_a,
        [false, false, false, false, false, false, true, true, true]
    );
    assert_eq!(
        fired_b,
        [false, false, false, false, false, false, false, true, true]
    );
    assert_eq!(b.recorded(), 9);
    // Provisional streams complete the windows for the paper's rule, not the history.
    let mut a = Monitor::new(&paper);
    let mut b = Monitor::new(&MigrationConfig {
        min_history: 7,
        ..paper.clone()
    });
    for i in 0..6 {
        a.record(&rec(i, 10));
        b.record(&rec(i, 10));
    }
    assert!(a.fires(&[(1000.0, 1)]));
    assert!(!b.fires(&[(1000.0, 1)]));
    b.record(&rec(6, 10));
    assert!(b.fires(&[(1000.0, 1), (1000.0, 1)]));
    // A reset (the client left the path) starts the count again.
    b.reset();
    assert_eq!(b.recorded(), 0);
    for i in 0..6 {
        b.record(&rec(i, 10));
    }
    assert!(!b.fires(&[(1000.0, 1)]));
    // The bound is validated by name.
    let e = MigrationConfig {
        min_history: crate::dcquic::migration::MAX_MIN_HISTORY + 1,
        ..paper
    }
    .validate()
    .unwrap_err();
    assert!(e.to_string().contains("migration.min_history"), "{e}");
}

/// `hold_down` (not in the paper): the next path skips those left less than `hold_down` ago; none if
/// every other path is; 0 is the paper's "next path".
#[test]
fn next_path_skips_paths_left_within_the_hold_down() {
    use crate::dcquic::migration::next_path;
    let s = |x: u64| Time(x * 1_000_000_000);
    let hd = Dur::from_millis(2_000);
    // Two paths, on 1 since 10 s, 0 left at 10 s.
    let left = [Some(s(10)), None];
    assert_eq!(
        next_path(1, 2, &left, s(11), Dur(0)),
        Some(0),
        "paper: the path just left"
    );
    assert_eq!(next_path(1, 2, &left, s(11), hd), None, "held down: stay");
    assert_eq!(next_path(1, 2, &left, Time(s(12).0 - 1), hd), None);
    assert_eq!(next_path(1, 2, &left, s(12), hd), Some(0), "hold-down over");
    // Three paths, on 0: 1 held down, 2 free: skip to 2; both held down: none.
    let left = [None, Some(s(10)), None];
    assert_eq!(next_path(0, 3, &left, s(11), Dur(0)), Some(1));
    assert_eq!(next_path(0, 3, &left, s(11), hd), Some(2));
    let left = [None, Some(s(10)), Some(s(9) + Dur::from_millis(500))];
    assert_eq!(next_path(0, 3, &left, s(11), hd), None);
    assert_eq!(next_path(0, 3, &left, Time(s(11).0 + 500_000_000), hd), Some(2));
    // Missing entries (a path added by a rebind) were never left.
    assert_eq!(next_path(0, 3, &[None], s(11), hd), Some(1));
    // One path: nowhere to go.
    assert_eq!(next_path(0, 1, &[None], s(11), Dur(0)), None);
    // The bound is validated by name.
    let e = MigrationConfig {
        hold_down: Dur::from_millis(3_600_001),
        ..MigrationConfig::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.to_string().contains("migration.hold_down"), "{e}");
}

/// The engine with two NICs: a delay on the first moves the client to the second; later every path
/// slows (the host, not a path). The paper's rule then migrates back onto the path it just left; with
/// `hold_down` the client stays. Called by hand, `migrate` also respects the hold-down until it ends.
#[test]
fn hold_down_keeps_the_client_off_the_path_it_just_left() {
    fn run(hold_down: Dur) -> (u64, Addr, Pair) {
        let mut c = cfg();
        c.migration.long_window = 10;
        c.migration.short_window = 3;
        c.migration.hold_down = hold_down;
        let mut p = pair(c, 10_000, 8);
        let base = sequential(&mut p, 0, 20, 10_000, Time(100_000_000));
        assert!(base.iter().all(|x| x.is_some()));
        p.set_fault(|w| {
            let nic = if w.from == 0 {
                w.pkt.tuple.src
            } else {
                w.pkt.tuple.dst
            };
            if nic == Addr(1) {
                Fate::Delay(Dur::from_micros(9_990))
            } else {
                Fate::Deliver
            }
        });
        let slow = sequential(&mut p, 100, 10, 10_000, Time(2_000_000_000));
        assert!(slow.iter().all(|x| x.is_some()), "{slow:?}");
        assert_eq!(p.eps[0].counters().migrations, 1);
        assert_eq!(p.eps[0].local_addr(), Addr(2));
        // The first path heals; the second builds its history.
        p.set_fault(|_| Fate::Deliver);
        let fast = sequential(&mut p, 200, 20, 10_000, Time(3_000_000_000));
        assert!(fast.iter().all(|x| x.is_some()), "{fast:?}");
        assert_eq!(p.eps[0].counters().migrations, 1);
        // Every datagram of both ends is delayed: the host is slow, not a path.
        p.set_fault(|_| Fate::Delay(Dur::from_micros(9_990)));
        let host = sequential(&mut p, 300, 10, 10_000, Time(5_000_000_000));
        assert!(host.iter().all(|x| x.is_some()), "{host:?}");
        let c = p.eps[0].counters();
        (c.migrations, p.eps[0].local_addr(), p)
    }
    let (n, addr, _) = run(Dur(0));
    assert_eq!(
        (n, addr),
        (2, Addr(1)),
        "the paper's rule goes back onto the path just left"
    );
    let (n, addr, mut p) = run(Dur::from_millis(2_000));
    assert_eq!((n, addr), (1, Addr(2)), "held down: no migration back");
    // By hand: still held down (the first migration was less than 2 s ago); once the hold-down is
    // over, back to the first path.
    assert!(p.now < Time(2_000_000_000), "{:?}", p.now);
    assert!(!p.eps[0].migrate(p.now));
    assert_eq!(p.eps[0].local_addr(), Addr(2));
    p.set_fault(|_| Fate::Deliver);
    p.run_until(p.now + Dur::from_millis(2_000));
    assert!(p.eps[0].migrate(p.now));
    assert_eq!(p.eps[0].local_addr(), Addr(1));
    // And now the second path is held down.
    assert!(!p.eps[0].migrate(p.now));
}

/// `exclude_host_delay`: the client's host is slow (every datagram of both ends 10 ms late), and its
/// driver reports that much of its own delay while each call is open. The paper's rule takes the slow
/// host for a slow path and migrates; with the guard the client stays. A delay the driver does not
/// report (the network's) still moves it.
#[test]
fn excluded_host_delay_is_not_taken_for_a_slow_path() {
    fn run(exclude: bool, reported: bool) -> (u64, Addr) {
        let mut c = cfg();
        c.migration.long_window = 10;
        c.migration.short_window = 3;
        c.migration.exclude_host_delay = exclude;
        let mut p = pair(c, 10_000, 8);
        let base = sequential(&mut p, 0, 20, 10_000, Time(100_000_000));
        assert!(base.iter().all(|x| x.is_some()));
        let late = Dur::from_micros(9_990);
        p.set_fault(move |_| Fate::Delay(late));
        let mut host = Dur::ZERO;
        for k in 0..10u64 {
            let id = (100 + k) << 1;
            rpc(&mut p, id, 100, 10_000);
            // The stream opens with the request; the host's delay then accrues while it is open: the
            // request's and the response's 10 ms each (what a descheduled thread's timers show).
            p.run_until(p.now + Dur::from_micros(1));
            if reported {
                host = host + late + late;
                p.eps[0].note_host_delay(host);
            }
            let limit = p.now + Dur::from_millis(200);
            while p.received(0, id | 1).is_none() && p.now < limit {
                p.run_until(p.now + Dur::from_millis(1));
            }
            assert!(p.received(0, id | 1).is_some(), "call {k}");
        }
        (p.eps[0].counters().migrations, p.eps[0].local_addr())
    }
    assert_eq!(
        run(false, true),
        (1, Addr(2)),
        "the paper's rule: the slow host looks like a slow path"
    );
    assert_eq!(
        run(true, true),
        (0, Addr(1)),
        "the host's own delay excluded: no migration"
    );
    assert_eq!(
        run(true, false),
        (1, Addr(2)),
        "a delay the host did not report still counts"
    );
}

#[test]
fn migrated_connection_keeps_its_streams_and_finishes_them() {
    let mut p = pair(cfg(), 10_000, 5);
    rpc(&mut p, 0, 1000, 10_000_000);
    p.run_until(Time(200_000));
    assert!(p.received(0, 1).is_none(), "still in flight at the migration");
    assert!(p.eps[0].migrate(p.now));
    assert_eq!(p.eps[0].local_addr(), Addr(2));
    // The old address is dead from now on.
    lose(&mut p, Addr(1));
    p.run_until(Time(200_000_000));
    assert!(p.received(0, 1).is_some(), "{:?}", p.events);
    assert_eq!(p.eps[0].counters().migrations, 1);
    rpc(&mut p, 2, 1000, 10_000);
    p.run_until(Time(300_000_000));
    assert!(p.received(0, 3).is_some());
}

#[test]
fn passive_rebind_keeps_the_connection() {
    let mut p = pair(cfg(), 10_000, 6);
    sequential(&mut p, 0, 3, 10_000, Time(50_000_000));
    p.eps[0].rebind(p.now, Addr(2));
    lose(&mut p, Addr(1));
    let r = sequential(&mut p, 10, 3, 10_000, Time(200_000_000));
    assert!(r.iter().all(|x| x.is_some()), "{r:?}");
}

#[test]
fn delay_on_the_used_path_triggers_proactive_migration() {
    let mut c = cfg();
    c.migration.long_window = 10;
    c.migration.short_window = 3;
    let mut p = pair(c, 10_000, 8);
    let base = sequential(&mut p, 0, 20, 10_000, Time(100_000_000));
    assert!(base.iter().all(|x| x.is_some()));
    assert_eq!(p.eps[0].counters().migrations, 0, "no migration on a steady path");
    // +10 ms one way on the client's first NIC.
    p.fault(|w| {
        let nic = if w.from == 0 {
            w.pkt.tuple.src
        } else {
            w.pkt.tuple.dst
        };
        if nic == Addr(1) {
            Fate::Delay(Dur::from_micros(9_990)) // 10 ms one way with the link's 10 us
        } else {
            Fate::Deliver
        }
    });
    let slow = sequential(&mut p, 100, 10, 10_000, Time(2_000_000_000));
    assert!(slow.iter().all(|x| x.is_some()), "{slow:?}");
    assert_eq!(p.eps[0].counters().migrations, 1);
    assert_eq!(p.eps[0].local_addr(), Addr(2));
    // After migrating, RPCs are fast again.
    let last = slow.last().unwrap().unwrap();
    assert!(last < Dur::from_millis(2), "{last:?}");
}

fn zero_rtt_cfg() -> DcquicConfig {
    DcquicConfig {
        zero_rtt: true,
        ..cfg()
    }
}

/// One RPC (1 KB response) on a fresh pair, started at time 0 (before the handshake): its completion
/// time. Small, because before the client's address is validated (its Handshake packet, one RTT in)
/// the server may send only 3x what it received (RFC 9000 8.1): a larger response gains less.
fn first_rpc(p: &mut Pair) -> Dur {
    let done = sequential(p, 0, 1, 1000, Time(50_000_000))[0].expect("RPC completes");
    // Let the session tickets (sent after the handshake) arrive.
    p.run_until(p.now + Dur::from_millis(5));
    done
}

#[test]
fn zero_rtt_second_connection_resumes_one_rtt_sooner() {
    let shared = Arc::new(Shared::new(zero_rtt_cfg(), epoch()));
    let mut p1 = pair_with_shared(shared.clone(), shared.clone(), 10_000, 1);
    let t1 = first_rpc(&mut p1);
    let c1 = p1.eps[0].counters();
    assert_eq!((c1.zero_rtt_attempts, c1.zero_rtt_accepted), (0, 0));
    assert!(shared.tickets(Addr(1), Addr(10)) > 0);
    // No tickets for another server.
    assert_eq!(shared.tickets(Addr(1), Addr(11)), 0);

    let mut p2 = pair_with_shared(shared.clone(), shared.clone(), 10_000, 2);
    let t2 = first_rpc(&mut p2);
    let c2 = p2.eps[0].counters();
    assert_eq!((c2.zero_rtt_attempts, c2.zero_rtt_accepted), (1, 1));
    // The request went with the first flight: one RTT (20 us) less to the response.
    assert!(
        t2.0 + 15_000 <= t1.0 && t2.0 + 25_000 >= t1.0,
        "1-RTT {t1:?} 0-RTT {t2:?}"
    );
    assert!(c2.first_byte_ns + 15_000 <= c1.first_byte_ns, "{c1:?} {c2:?}");
    // A second RPC on the resumed connection is ordinary.
    let more = sequential(&mut p2, 1, 1, 10_000, Time(100_000_000));
    assert!(more[0].is_some());
}

#[test]
fn zero_rtt_rejected_is_resent_as_one_rtt() {
    // The client holds a ticket, but the server it meets has never seen it (another session cache):
    // it refuses the early data and the request must go again after the handshake.
    let client = Arc::new(Shared::new(zero_rtt_cfg(), epoch()));
    let mut p1 = pair_with_shared(client.clone(), client.clone(), 10_000, 1);
    let t1 = first_rpc(&mut p1);
    let stranger = Arc::new(Shared::new(zero_rtt_cfg(), epoch()));
    let mut p2 = pair_with_shared(client.clone(), stranger, 10_000, 2);
    let t2 = first_rpc(&mut p2);
    let c2 = p2.eps[0].counters();
    assert_eq!((c2.zero_rtt_attempts, c2.zero_rtt_accepted), (1, 0));
    assert!(t2.0 + 5_000 >= t1.0, "1-RTT {t1:?} rejected 0-RTT {t2:?}");
    assert!(p2
        .events
        .iter()
        .any(|&(_, i, ev)| i == 1 && ev == AppEvent::MessageReceived { msg: 0 }));
}

#[test]
fn zero_rtt_same_seed_gives_identical_runs() {
    let run = || {
        let shared = Arc::new(Shared::new(zero_rtt_cfg(), epoch()));
        let mut out = Vec::new();
        for seed in 1..=3 {
            let mut p = pair_with_shared(shared.clone(), shared.clone(), 10_000, seed);
            let t = first_rpc(&mut p);
            out.push((t, sizes(&p), p.events.clone(), p.eps[0].counters()));
        }
        out
    };
    let a = run();
    assert_eq!(a, run());
    assert_eq!(a[2].3.zero_rtt_accepted, 1);
}

#[test]
fn zero_rtt_off_takes_no_tickets() {
    let shared = Arc::new(Shared::new(cfg(), epoch()));
    let mut p1 = pair_with_shared(shared.clone(), shared.clone(), 10_000, 1);
    let t1 = first_rpc(&mut p1);
    let mut p2 = pair_with_shared(shared.clone(), shared.clone(), 10_000, 2);
    let t2 = first_rpc(&mut p2);
    assert_eq!(shared.tickets(Addr(1), Addr(10)), 0);
    assert_eq!(t1, t2);
    assert_eq!(p2.eps[0].counters().zero_rtt_attempts, 0);
}

/// Every byte the engines put on the wire, over a 1-RTT handshake + RPCs and then (same shared
/// state) a 0-RTT resumed connection + RPC.
fn wire_bytes(seed: u64) -> (Datagrams, Datagrams, DcquicCounters) {
    let shared = Arc::new(Shared::new(zero_rtt_cfg(), epoch()));
    let mut p1 = pair_with_shared(shared.clone(), shared.clone(), 10_000, seed);
    first_rpc(&mut p1);
    sequential(&mut p1, 1, 2, 30_000, Time(100_000_000));
    let mut p2 = pair_with_shared(shared.clone(), shared, 10_000, seed + 1000);
    first_rpc(&mut p2);
    (datagrams(&p1), datagrams(&p2), p2.eps[0].counters())
}

#[test]
fn same_seed_gives_byte_identical_datagrams() {
    let a = wire_bytes(5);
    // The second connection resumed with 0-RTT, so both handshake paths are covered.
    assert_eq!((a.2.zero_rtt_attempts, a.2.zero_rtt_accepted), (1, 1));
    assert!(a.0.len() > 10 && a.1.len() > 5, "{} {}", a.0.len(), a.1.len());
    let b = wire_bytes(5);
    assert_eq!(a.0.len(), b.0.len());
    for (k, (x, y)) in a.0.iter().zip(&b.0).enumerate() {
        assert!(x == y, "1-RTT connection, datagram {k} differs");
    }
    assert_eq!(a.1.len(), b.1.len());
    for (k, (x, y)) in a.1.iter().zip(&b.1).enumerate() {
        assert!(x == y, "0-RTT connection, datagram {k} differs");
    }
    // Another seed: other bytes in every datagram (connection ids, randoms, key shares, hence every
    // key). Sizes may differ by a byte or two too: quinn's seeded packet-number skipping changes
    // ACK ranges.
    let c = wire_bytes(6);
    for (x, y) in a.0.iter().zip(&c.0).chain(a.1.iter().zip(&c.1)) {
        assert!(x.1 != y.1, "a datagram is the same under another seed");
    }
}

/// The tests are the engines' driver here, so they pick the epoch (any `Instant` serves).
fn epoch() -> std::time::Instant {
    #[allow(clippy::disallowed_methods)]
    std::time::Instant::now()
}

// ---- tail FEC ----------------------------------------------------------------------------------

/// Plain DCQUIC for the tail-FEC comparisons. The tests script messages whose data all leave in the
/// first flight, so that the parity follows the data it protects: ten full packets of initial window
/// (under RFC 9002's 18 KB a repair can overtake its congestion-blocked last bytes and rebuild them
/// before they are sent, docs/dcquic.md), and receivers that ACK every packet, so that no flight waits
/// for a delayed ACK (`ack_delay_bounds_the_stall_behind_the_initial_window`) and the times below are
/// those of loss recovery alone.
fn plain_cfg() -> DcquicConfig {
    DcquicConfig {
        ack_eliciting_threshold: 0,
        initial_window_limit: crate::units::Bytes(u64::MAX),
        ..cfg()
    }
}

fn fec_cfg() -> DcquicConfig {
    DcquicConfig {
        tail_fec: true,
        ..plain_cfg()
    }
}

/// A connected pair whose server drops the data packets (above 1000 B on the wire) of the next
/// response listed in `drop` (1-based among that response's big packets); returns the pair after one
/// RPC of `resp` bytes and that RPC's completion time.
fn rpc_dropping(cfg: DcquicConfig, resp: u64, drop: &'static [u32], seed: u64) -> (Pair, Option<Dur>) {
    let mut p = pair(cfg, 10_000, seed);
    // A first RPC finishes the handshake and gives an RTT sample.
    assert!(sequential(&mut p, 0, 1, 1000, Time(50_000_000))[0].is_some());
    p.run_until(p.now + Dur::from_millis(1));
    let mut big = 0u32;
    p.fault_from(1, move |w| {
        if w.pkt.size_bytes <= 1000 {
            return Fate::Deliver;
        }
        big += 1;
        if drop.contains(&big) {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    let t = sequential(&mut p, 1, 1, resp, Time(500_000_000))[0];
    (p, t)
}

/// Message `msg`'s bytes `off .. off + n` as the engine writes them.
fn sent_bytes(msg: MsgId, off: u64, n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    while v.len() < n {
        let k = (n - v.len()).min(tailfec::SPAN);
        v.extend_from_slice(tailfec::payload(msg, off + v.len() as u64, k));
    }
    v
}

#[test]
fn tail_fec_rebuilds_a_lost_last_packet_without_waiting_for_quic() {
    // 30 KB response: four data packets at the 9 KB MPS; the fourth (the FIN) is dropped.
    let (plain, t_plain) = rpc_dropping(plain_cfg(), 30_000, &[4], 1);
    let (fec, t_fec) = rpc_dropping(fec_cfg(), 30_000, &[4], 1);
    let (t_plain, t_fec) = (t_plain.expect("QUIC recovers"), t_fec.expect("FEC recovers"));
    // Plain QUIC waits for its probe timeout (RTT + 1 ms granularity + 25 ms max ack delay); the
    // parity arrives right behind the data.
    assert!(t_plain.0 > 1_000_000, "plain {t_plain:?}");
    assert!(t_fec.0 < 200_000, "fec {t_fec:?}");
    assert_eq!(plain.eps[0].counters().fec_recovered, 0);
    let c = fec.eps[0].counters();
    assert_eq!(c.fec_recovered, 1);
    assert!(
        c.fec_recovered_bytes > 3000 && c.fec_recovered_bytes < 9000,
        "{c:?}"
    );
    // The rebuilt bytes are those sent: the kept window is the whole 4-chunk tail of message 3.
    let log = &fec.eps[0].fec_log;
    assert_eq!(log.len(), 1);
    let (msg, start, ref bytes) = log[0];
    assert_eq!(msg, 3);
    assert_eq!(start + bytes.len() as u64, 30_000);
    assert_eq!(bytes, &sent_bytes(3, start, bytes.len()));
}

#[test]
fn tail_fec_repair_bytes_are_counted_as_redundant() {
    let (mut p, t) = rpc_dropping(fec_cfg(), 30_000, &[], 2);
    assert!(t.is_some());
    p.run_until(p.now + Dur::from_millis(50));
    let acked = |msg| {
        p.events.iter().find_map(|&(_, i, ev)| match ev {
            AppEvent::MessageAcked { msg: m, stats } if i == 1 && m == msg => Some(stats),
            _ => None,
        })
    };
    let s = acked(3).expect("response acknowledged");
    let c = p.eps[1].counters();
    // Two RPCs answered: the 1000 B one and the 30 KB one, each with its parity (a copy for 1000 B; a
    // 9000 B parity in two datagrams for 30 KB).
    assert_eq!(c.fec_repairs, 3, "{c:?}");
    assert!(s.redundant_bytes > 9000 && s.redundant_bytes < 9200, "{s:?}");
    assert_eq!(s.sent_bytes, 30_000 + s.redundant_bytes);
    let first = acked(1).expect("first response acknowledged");
    assert_eq!(c.fec_repair_bytes, s.redundant_bytes + first.redundant_bytes);
    assert_eq!(first.redundant_bytes, 1000 + tailfec::HEADER as u64);
    // The client's requests are protected too.
    assert_eq!(p.eps[0].counters().fec_repairs, 2);
    // Nothing lost, nothing rebuilt.
    assert_eq!(p.eps[0].counters().fec_recovered, 0);
}

#[test]
fn tail_fec_leaves_losses_before_the_tail_to_quic() {
    // 100 KB: twelve data packets; the second is far ahead of the 4-packet tail.
    let (p, t) = rpc_dropping(fec_cfg(), 100_000, &[2], 3);
    assert!(t.is_some());
    assert_eq!(p.eps[0].counters().fec_recovered, 0);
    assert!(p.eps[1].counters().lost_packets >= 1);
}

#[test]
fn tail_fec_two_losses_in_the_tail_fall_back_to_retransmission() {
    // The last two data packets (8970 + 3090 B of stream data) are lost: more than one chunk apart,
    // so the parity alone cannot rebuild them.
    let (plain, t_plain) = rpc_dropping(plain_cfg(), 30_000, &[3, 4], 4);
    let (fec, t_fec) = rpc_dropping(fec_cfg(), 30_000, &[3, 4], 4);
    let (t_plain, t_fec) = (t_plain.unwrap(), t_fec.unwrap());
    assert!(plain.eps[1].counters().lost_packets >= 2);
    // The repair packets behind the lost ones are acknowledged at once, so QUIC's packet threshold
    // declares the lost ones lost and retransmits them; the parity rebuilds at most one chunk. Plain
    // QUIC, with nothing behind its last packets, waits for its probe timeout.
    assert!(fec.eps[1].counters().lost_packets >= 1);
    assert!(t_fec.0 < t_plain.0 / 5, "fec {t_fec:?} plain {t_plain:?}");
    assert!(t_plain.0 >= 1_000_000, "plain {t_plain:?}");
    let c = fec.eps[0].counters();
    assert!(c.fec_recovered_bytes < 9000, "{c:?}");
}

#[test]
fn tail_fec_same_seed_gives_identical_runs() {
    let trace = |seed| {
        let mut p = pair(fec_cfg(), 10_000, seed);
        let mut n = 0u32;
        // Every seventh datagram of either side is lost.
        p.fault(move |_| {
            n += 1;
            if n.is_multiple_of(7) {
                Fate::Drop
            } else {
                Fate::Deliver
            }
        });
        rpc(&mut p, 0, 1000, 200_000);
        rpc(&mut p, 2, 5000, 30_000);
        rpc(&mut p, 4, 20_000, 12_000);
        p.run_until(Time(500_000_000));
        (
            p.events.clone(),
            sizes(&p),
            p.eps[0].counters(),
            p.eps[1].counters(),
        )
    };
    let a = trace(7);
    assert!(
        a.0.iter()
            .filter(|e| matches!(e.2, AppEvent::MessageReceived { .. }))
            .count()
            == 6,
        "{:?}",
        a.0
    );
    assert_eq!(a, trace(7));
}

#[test]
fn tail_fec_rebuilds_a_one_packet_response_lost_whole() {
    // A 5 KB response is one packet; its parity is a copy of it, and the client's stream is open.
    let (p, t) = rpc_dropping(fec_cfg(), 5000, &[1], 5);
    assert!(t.expect("rebuilt").0 < 200_000, "{t:?}");
    assert_eq!(p.eps[0].counters().fec_recovered_bytes, 5000);
    let (msg, start, ref bytes) = p.eps[0].fec_log[0];
    assert_eq!((msg, start), (3, 0));
    assert_eq!(bytes, &sent_bytes(3, 0, 5000));
}

#[test]
fn initial_window_follows_rfc_9002() {
    // RFC 9002 Sec. 7.2: min(10 * max_datagram_size, max(14720, 2 * max_datagram_size)).
    let c = DcquicConfig::default();
    assert_eq!(c.initial_window_bytes(1252), 12_520);
    assert_eq!(c.initial_window_bytes(1500), 14_720);
    assert_eq!(c.initial_window_bytes(5000), 14_720);
    assert_eq!(c.initial_window_bytes(9000), 18_000);
    // Lifting the limit gives the ten full packets of the earlier default (90 KB at 9 KB).
    let old = DcquicConfig {
        initial_window_limit: crate::units::Bytes(u64::MAX),
        ..DcquicConfig::default()
    };
    assert_eq!(old.initial_window_bytes(9000), 90_000);
}

/// Right after the handshake, quinn still counts the handshake's bytes in flight, so the first response
/// leaves as one 9 KB packet of RFC 9002's 18 KB initial window and waits for its ACK. Under RFC 9000's
/// rules (an ACK every second packet) the client holds that ACK for its 25 ms `max_ack_delay`; the
/// `ack_delay` request bounds the stall at quinn's 1 ms granularity, and a threshold of 0 removes it.
#[test]
fn ack_delay_bounds_the_stall_behind_the_initial_window() {
    let first_rpc = |ack_frequency, ack_eliciting_threshold| {
        let cfg = DcquicConfig {
            ack_frequency,
            ack_eliciting_threshold,
            ..DcquicConfig::default()
        };
        let mut p = pair(cfg, 10_000, 1);
        p.run_until(Time(1_000_000));
        sequential(&mut p, 0, 1, 100_000, Time(500_000_000))[0].expect("completes")
    };
    let rfc = first_rpc(false, 1);
    let dc = first_rpc(true, 1);
    let every = first_rpc(true, 0);
    assert!(
        rfc >= Dur::from_millis(25) && rfc < Dur::from_millis(26),
        "{rfc:?}"
    );
    assert!(dc >= Dur::from_millis(1) && dc < Dur::from_millis(2), "{dc:?}");
    assert!(every < Dur::from_micros(200), "{every:?}");
}
