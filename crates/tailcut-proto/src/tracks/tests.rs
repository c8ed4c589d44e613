//! Scripted tests: packets are fed to the shim directly and its injections checked.

use super::config::{FakeSackBlock, RttSource};
use super::*;
use crate::engine::{Direction, Shim, Verdict};
use crate::packet::{Addr, FiveTuple, Header, Packet, Proto, TcpFlags, TcpHeader};
use crate::rng::{stream, Stream};
use crate::seq::Seq;
use crate::time::{Dur, Time};
use crate::units::Bytes;

const MSS: u32 = 1460;
const ISN: u32 = 1000;

fn tuple() -> FiveTuple {
    FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 1024,
        dst_port: 80,
        proto: Proto::Tcp,
    }
}

fn data(i: u32, now: Time) -> Packet {
    Packet {
        tuple: tuple(),
        size_bytes: MSS + 40,
        header: Header::Tcp(TcpHeader {
            seq: Seq(ISN + i * MSS),
            flags: TcpFlags::ACK,
            window: 65_535,
            payload_len: MSS,
            ts_val: (now.0 / 1_000) as u32,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// An ACK for the first `segs` segments, echoing timestamp `echo_us`.
fn ack(segs: u32, echo_us: u32) -> Packet {
    Packet {
        tuple: tuple().reversed(),
        size_bytes: 40,
        header: Header::Tcp(TcpHeader {
            ack: Seq(ISN + segs * MSS),
            flags: TcpFlags::ACK,
            window: 65_535,
            ts_val: 7,
            ts_ecr: echo_us,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cfg() -> TracksConfig {
    TracksConfig {
        fixed_beta: Some(Dur::from_millis(4)),
        ..TracksConfig::default()
    }
}

fn shim(cfg: TracksConfig) -> Tracks {
    Tracks::new(cfg, stream(1, Stream::Shim, 0))
}

/// Runs the shim's timer up to `end`, returning every injection with its time.
fn run_until(s: &mut Tracks, end: Time) -> Vec<(Time, Direction, Packet)> {
    let mut out = Vec::new();
    let mut steps = 0;
    while let Some(t) = s.poll_timeout() {
        if t > end {
            break;
        }
        s.handle_timeout(t);
        while let Some((d, p)) = s.poll_inject(t) {
            out.push((t, d, p));
        }
        steps += 1;
        assert!(steps < 100_000, "timer livelock");
    }
    out
}

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

/// Sends `n` segments at t = 0 and ACKs the first `acked` of them at 100 us.
fn start(s: &mut Tracks, n: u32, acked: u32) {
    for i in 0..n {
        assert_eq!(s.on_egress(Time(0), &mut data(i, Time(0))), Verdict::Pass);
    }
    assert_eq!(s.on_ingress(Time(100_000), &mut ack(acked, 0)), Verdict::Pass);
}

#[test]
fn silent_while_acks_progress() {
    let mut s = shim(cfg());
    let mut t = Time(0);
    for i in 0..40u32 {
        s.on_egress(t, &mut data(i, t));
        t += Dur::from_millis(1);
        let out = run_until(&mut s, t);
        assert!(out.is_empty(), "spoofed while ACKs progress: {out:?}");
        s.on_ingress(t, &mut ack(i + 1, 0));
    }
    assert!(run_until(&mut s, ms(2_000)).is_empty());
    assert_eq!(s.counters().recoveries, 0);
    // After the idle timeout the flow is forgotten and the timer stops.
    assert_eq!(s.tracked_flows(), 0);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn spoofs_phi_duplicate_acks_after_beta() {
    let mut s = shim(cfg());
    start(&mut s, 10, 7);
    let out = run_until(&mut s, ms(5));
    assert_eq!(out.len(), 3, "{out:?}");
    for (t, d, p) in &out {
        // Last ACK at 0.1 ms, beta = 4 ms, 1 ms ticks: the 5 ms tick is the first at >= 4.1 ms.
        assert_eq!(*t, ms(5));
        assert_eq!(*d, Direction::ToHost);
        assert_eq!(p.tuple, tuple().reversed());
        let h = p.tcp().unwrap();
        assert_eq!(h.ack, Seq(ISN + 7 * MSS));
        assert_eq!(h.flags, TcpFlags::ACK);
        assert_eq!(h.payload_len, 0);
        assert_eq!(h.window, 65_535);
        assert!(h.sack.is_empty());
    }
    assert_eq!(s.counters().recoveries, 1);
    assert_eq!(s.counters().spoofed_acks, 3);
}

#[test]
fn spoofed_acks_carry_a_growing_fake_sack_block_with_sack() {
    let mut s = shim(TracksConfig { sack: true, ..cfg() });
    start(&mut s, 10, 4);
    let out = run_until(&mut s, ms(5));
    assert_eq!(out.len(), 3);
    let a = ISN + 4 * MSS;
    for (k, (t, d, p)) in out.iter().enumerate() {
        // Same headers as without SACK: a pure duplicate of the last ACK, up to the local sender.
        assert_eq!((*t, *d, p.tuple), (ms(5), Direction::ToHost, tuple().reversed()));
        let h = p.tcp().unwrap();
        assert_eq!(
            (h.ack, h.flags, h.payload_len, h.window),
            (Seq(ISN + 4 * MSS), TcpFlags::ACK, 0, 65_535)
        );
        let blocks: Vec<_> = h.sack.iter().collect();
        // 40 bytes after the last ACK, ending k+2 segments after it: one more whole segment each.
        assert_eq!(blocks, vec![(Seq(a + 40), Seq(a + (k as u32 + 2) * MSS))]);
    }
}

#[test]
fn fake_sack_block_never_passes_the_highest_byte_sent() {
    let mut s = shim(TracksConfig { sack: true, ..cfg() });
    start(&mut s, 3, 1);
    let out = run_until(&mut s, ms(5));
    let end = ISN + 3 * MSS;
    let rights: Vec<u32> = out
        .iter()
        .map(|(_, _, p)| p.tcp().unwrap().sack.iter().next().unwrap().1 .0)
        .collect();
    assert_eq!(rights, vec![ISN + 3 * MSS, end, end]);
}

#[test]
fn back_off_doubles_and_stops_before_the_min_rto() {
    let mut s = shim(cfg());
    start(&mut s, 10, 7);
    let out = run_until(&mut s, ms(1_000));
    let times: Vec<u64> = out.iter().map(|(t, _, _)| t.0 / 1_000_000).collect();
    // First burst at 5 ms; then one more at 5 + 4·2^x ms for x = 2, 3, 4, 5: 21, 37, 69, 133; the
    // next (5 + 256) would be past the 200 ms min RTO counted from the last ACK, so the shim gives up.
    assert_eq!(times, vec![5, 5, 5, 21, 37, 69, 133]);
    assert_eq!(s.counters().gave_up, 1);
    assert!(out
        .iter()
        .all(|(t, _, _)| *t < Time(100_000) + Dur::from_millis(200)));
}

#[test]
fn real_dupacks_count_toward_phi_and_are_dropped_while_recovering() {
    let mut s = shim(cfg());
    start(&mut s, 10, 7);
    // One real duplicate before the trigger passes and lowers the burst to phi - 1.
    assert_eq!(s.on_ingress(ms(1), &mut ack(7, 0)), Verdict::Pass);
    let out = run_until(&mut s, ms(5));
    assert_eq!(out.len(), 2);
    // During recovery a real duplicate is dropped.
    assert_eq!(s.on_ingress(Time(5_500_000), &mut ack(7, 0)), Verdict::Drop);
    assert_eq!(s.counters().dupacks_dropped, 1);
    // A new ACK ends the episode; later duplicates pass again.
    assert_eq!(s.on_ingress(ms(6), &mut ack(8, 5_100)), Verdict::Pass);
    assert_eq!(s.on_ingress(Time(6_100_000), &mut ack(8, 5_100)), Verdict::Pass);
    assert_eq!(s.counters().spurious_recoveries, 0);
}

/// What a tap that drops duplicates in the kernel mirrors: the flow appears in `recovering` with
/// the ACK being repeated when its episode starts, and leaves at the new ACK; the generation moves
/// at both changes and not on ordinary packets.
#[test]
fn recovering_lists_the_flows_whose_duplicates_are_dropped() {
    let mut s = shim(cfg());
    start(&mut s, 10, 7);
    let g0 = s.episode_generation();
    assert_eq!(s.recovering().count(), 0);
    run_until(&mut s, ms(5));
    let g1 = s.episode_generation();
    assert_ne!(g1, g0);
    let r: Vec<_> = s.recovering().collect();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].ack, ack(7, 0).tcp().unwrap().ack);
    let t = tuple();
    assert_eq!((r[0].local, r[0].remote), (t.src, t.dst));
    assert_eq!((r[0].local_port, r[0].remote_port), (t.src_port, t.dst_port));
    // A dropped duplicate changes nothing the mirror needs.
    assert_eq!(s.on_ingress(Time(5_500_000), &mut ack(7, 0)), Verdict::Drop);
    assert_eq!(s.episode_generation(), g1);
    s.on_ingress(ms(6), &mut ack(8, 5_100));
    assert_ne!(s.episode_generation(), g1);
    assert_eq!(s.recovering().count(), 0);
}

#[test]
fn an_ack_echoing_data_sent_before_the_trigger_marks_the_recovery_spurious() {
    let mut s = shim(cfg());
    start(&mut s, 10, 7);
    run_until(&mut s, ms(5));
    // Echoes a timestamp of 1 us (the original transmission), not of a retransmission after 5 ms
    // (an echo of 0 means "no timestamp" to the shim).
    s.on_ingress(Time(5_200_000), &mut ack(10, 1));
    assert_eq!(s.counters().spurious_recoveries, 1);
}

#[test]
fn long_lived_flows_are_ignored_past_gamma() {
    let mut s = shim(TracksConfig {
        gamma: Some(Bytes(20 * u64::from(MSS))),
        ..cfg()
    });
    for i in 0..30 {
        s.on_egress(Time(0), &mut data(i, Time(0)));
    }
    s.on_ingress(Time(100_000), &mut ack(1, 0));
    s.on_ingress(Time(200_000), &mut ack(21, 0));
    assert_eq!(s.counters().long_lived, 1);
    assert_eq!(s.active_small_flows(), 0);
    assert!(run_until(&mut s, ms(300)).is_empty());
    // Its duplicate ACKs are not touched either.
    assert_eq!(s.on_ingress(ms(1), &mut ack(21, 0)), Verdict::Pass);
    // A long-lived flow that keeps sending past the idle timeout stays long-lived (it is not
    // silent, so it is not re-activated and tracked again).
    for i in 30..40 {
        let t = ms(500 * u64::from(i - 29));
        s.on_egress(t, &mut data(i, t));
    }
    s.on_ingress(ms(5_000), &mut ack(22, 0));
    assert!(run_until(&mut s, ms(5_400)).is_empty());
    assert_eq!(s.counters().long_lived, 1);
    assert_eq!(s.active_small_flows(), 0);
}

#[test]
fn computed_beta_is_alpha_rtts_plus_up_to_one_rtt() {
    // RTT 1 ms from the timestamp echo (ACK at 1.1 ms echoing 0.1 ms); alpha 10: beta in [10, 11) ms.
    for seed in 0..20 {
        let mut s = Tracks::new(TracksConfig::default(), stream(seed, Stream::Shim, 0));
        for i in 0..10 {
            s.on_egress(Time(100_000), &mut data(i, Time(100_000)));
        }
        s.on_ingress(Time(1_100_000), &mut ack(5, 100));
        let out = run_until(&mut s, ms(30));
        let t = out[0].0;
        assert!(t >= ms(12) && t <= ms(13), "seed {seed}: first spoof at {t}");
    }
}

#[test]
fn no_spoofing_without_outstanding_data_or_before_any_ack() {
    let mut s = shim(cfg());
    for i in 0..5 {
        s.on_egress(Time(0), &mut data(i, Time(0)));
    }
    // No ACK at all yet: no template to spoof from (like the public module, see docs/tracks.md).
    assert!(run_until(&mut s, ms(50)).is_empty());
    s.on_ingress(ms(50), &mut ack(5, 0));
    assert!(run_until(&mut s, ms(400)).is_empty());
}

#[test]
fn timer_scans_only_active_small_flows() {
    let mut s = shim(cfg());
    for port in 0..50u16 {
        let mut p = data(0, Time(0));
        p.tuple.src_port = 2000 + port;
        s.on_egress(Time(0), &mut p);
    }
    assert_eq!(s.active_small_flows(), 50);
    run_until(&mut s, ms(1_500));
    assert_eq!(s.active_small_flows(), 0);
    assert_eq!(s.tracked_flows(), 0);
}

#[test]
fn sack_flows_get_no_fake_block_when_it_is_turned_off() {
    let mut s = shim(TracksConfig {
        sack: true,
        fake_sack: false,
        ..cfg()
    });
    start(&mut s, 10, 4);
    let out = run_until(&mut s, ms(5));
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|(_, _, p)| p.tcp().unwrap().sack.is_empty()));
    // Without SACK the default (fake_sack on) puts no block either: covered by
    // `spoofs_phi_duplicate_acks_after_beta`.
}

#[test]
fn gamma_reads_sizes_and_infinity() {
    let c: TracksConfig = serde_json::from_str(r#"{ "gamma": "inf", "alpha": 5 }"#).unwrap();
    assert_eq!(c.gamma, None);
    assert_eq!(c.alpha, 5.0);
    let c: TracksConfig = serde_json::from_str(r#"{ "gamma": "64KB" }"#).unwrap();
    assert_eq!(c.gamma, Some(Bytes(64_000)));
    assert!(serde_json::from_str::<TracksConfig>(r#"{ "sack": true }"#).is_err());
    assert!(TracksConfig { phi: 0, ..cfg() }.validate().is_err());
}

#[test]
fn a_syn_ack_template_is_spoofed_past_the_syn() {
    // Handshake: the SYN-ACK is the only ACK so far; a spoofed copy must not repeat the SYN.
    let mut s = shim(cfg());
    let mut syn = data(0, Time(0));
    let h = syn.tcp_mut().unwrap();
    h.seq = Seq(ISN - 1);
    h.flags = TcpFlags::SYN;
    h.payload_len = 0;
    s.on_egress(Time(0), &mut syn);
    let mut syn_ack = ack(0, 1);
    let h = syn_ack.tcp_mut().unwrap();
    h.flags = TcpFlags::SYN.union(TcpFlags::ACK);
    h.seq = Seq(5_000);
    h.ack = Seq(ISN);
    s.on_ingress(Time(100_000), &mut syn_ack);
    for i in 0..10 {
        s.on_egress(Time(150_000), &mut data(i, Time(150_000)));
    }
    let out = run_until(&mut s, ms(6));
    assert_eq!(out.len(), 3);
    let h = out[0].2.tcp().unwrap();
    assert_eq!((h.seq, h.ack, h.flags), (Seq(5_001), Seq(ISN), TcpFlags::ACK));
}

/// A full table evicts the least recently active flow, so memory stays bounded on a real host.
#[test]
fn a_full_table_evicts_the_least_recently_active_flow() {
    let mut s = shim(TracksConfig {
        max_flows: 2,
        ..cfg()
    });
    for (i, port) in [1000u16, 1001, 1002].into_iter().enumerate() {
        let now = Time(i as u64 * 1_000);
        let mut p = data(0, now);
        p.tuple.src_port = port;
        s.on_egress(now, &mut p);
    }
    assert_eq!(s.tracked_flows(), 2);
    assert_eq!(s.counters().evicted, 1);
}

/// Real hosts: a dupACK carrying SACK blocks (e.g. the answer to Linux's tail loss probe) passes
/// during a recovery when `pass_sack_dupacks` is set; a plain one is still dropped.
#[test]
fn sack_carrying_dupacks_pass_when_configured() {
    let mut s = shim(TracksConfig {
        sack: true,
        pass_sack_dupacks: true,
        ..cfg()
    });
    start(&mut s, 10, 7);
    assert_eq!(run_until(&mut s, ms(5)).len(), 3);
    let mut with_sack = ack(7, 0);
    let a = ISN + 9 * MSS;
    with_sack.tcp_mut().unwrap().sack.push(Seq(a), Seq(a + MSS));
    assert_eq!(s.on_ingress(Time(5_500_000), &mut with_sack), Verdict::Pass);
    assert_eq!(s.on_ingress(Time(5_600_000), &mut ack(7, 0)), Verdict::Drop);
    assert_eq!(s.counters().dupacks_dropped, 1);
}

/// Real hosts: RTT from the shim's own timing of a segment, whatever the timestamps echo (Linux's
/// run at 1 kHz from a random offset). A 300 us RTT with alpha = 10 gives beta in [3, 3.3] ms.
#[test]
fn seq_ack_timing_measures_the_rtt_without_timestamps() {
    let mut s = shim(TracksConfig {
        fixed_beta: None,
        rtt_source: RttSource::SeqAck,
        ..TracksConfig::default()
    });
    for i in 0..4 {
        s.on_egress(Time(0), &mut data(i, Time(0)));
    }
    // The ACK of the first segment (the timed one) after 300 us, echoing a meaningless timestamp.
    s.on_ingress(Time(300_000), &mut ack(1, 987_654_321));
    let out = run_until(&mut s, ms(10));
    let first = out.first().expect("a recovery").0;
    assert!(
        first >= Time(3_300_000) && first <= Time(5_000_000),
        "first spoof at {first:?}"
    );
    assert_eq!(s.counters().spurious_recoveries, 0);
}

/// Real hosts: the SYNs' MSS caps the segment size the fake SACK block claims (a GSO super-packet
/// is larger than a segment), and SACK is on only if both SYNs offered it.
#[test]
fn syn_options_set_the_block_size_and_whether_the_flow_uses_sack() {
    let mut s = shim(TracksConfig { sack: false, ..cfg() });
    let mut syn = data(0, Time(0));
    {
        let h = syn.tcp_mut().unwrap();
        h.flags = TcpFlags::SYN;
        h.seq = Seq(ISN - 1);
        h.payload_len = 0;
    }
    s.on_egress(Time(0), &mut syn);
    s.note_syn_options(&syn, true, Some(1460), true);
    let mut syn_ack = ack(0, 0);
    syn_ack.tcp_mut().unwrap().flags = TcpFlags::SYN | TcpFlags::ACK;
    s.note_syn_options(&syn_ack, false, Some(1000), true);
    // A 3-segment super-packet, then the first two ACKs.
    let mut big = data(0, Time(0));
    big.tcp_mut().unwrap().payload_len = 3 * MSS;
    s.on_egress(Time(0), &mut big);
    s.on_ingress(Time(100_000), &mut ack(1, 0));
    let out = run_until(&mut s, ms(5));
    let a = ISN + MSS;
    let blocks: Vec<_> = out[0].2.tcp().unwrap().sack.iter().collect();
    assert_eq!(blocks, vec![(Seq(a + 40), Seq(a + 2 * 1000))]);
}

/// `fake_sack_block = "highest"`: every spoofed ACK claims the same block, the highest outstanding
/// segment, whatever the count.
#[test]
fn highest_fake_block_claims_only_the_last_segment() {
    let mut s = shim(TracksConfig {
        sack: true,
        fake_sack_block: FakeSackBlock::Highest,
        ..cfg()
    });
    start(&mut s, 10, 4);
    let out = run_until(&mut s, ms(5));
    assert_eq!(out.len(), 3);
    let end = ISN + 10 * MSS;
    for (_, _, p) in &out {
        let blocks: Vec<_> = p.tcp().unwrap().sack.iter().collect();
        assert_eq!(blocks, vec![(Seq(end - MSS), Seq(end))]);
    }
}
