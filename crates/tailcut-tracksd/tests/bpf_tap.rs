//! The tc-BPF tap's program in the kernel, scripted packet by packet: frames are run through the
//! loaded (not attached) egress and ingress programs with `BPF_PROG_TEST_RUN`, their records go
//! from the ring buffer through the agent's shim exactly as in the agent's loop, and the shim's
//! recovering flows are mirrored back into the kernel's map. This checks the one rule the program
//! decides itself (drop the real duplicate ACKs of a recovering flow, and nothing else) and its
//! filtering (what it reports, what it passes unseen), against the shim's own verdicts.
//!
//! Needs root (BPF) and clang + libbpf-dev (the program is built at load). Skips like the realnet
//! tests where namespaces are missing, and fails instead under `TAILCUT_REQUIRE_REALNET=1` (CI).

use tailcut_proto::packet::{Addr, FiveTuple, Header, Packet, Proto, TcpFlags, TcpHeader};
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::tracks::{Tracks, TracksConfig};
use tailcut_proto::{Dur, SackBlocks, Seq, Shim, Time};
use tailcut_sys::probe;
use tailcut_tracksd::addr6::V6Addrs;
use tailcut_tracksd::agent::{shim_packet, AgentCounters};
use tailcut_tracksd::bpf_tap::{BpfTap, BpfTapConfig};
use tailcut_tracksd::config::real_host_tracks;
use tailcut_tracksd::tap::{PacketTap, TapDir, Tapped};
use tailcut_tracksd::wire;

const MSS: u32 = 1448;
const ISN: u32 = 5000;
const LOCAL: u32 = 0x0a00_0001;
const REMOTE: u32 = 0x0a00_0002;

fn tuple(remote_port: u16) -> FiveTuple {
    FiveTuple {
        src: Addr(LOCAL),
        dst: Addr(REMOTE),
        src_port: 40_000,
        dst_port: remote_port,
        proto: Proto::Tcp,
    }
}

const LOCAL6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const REMOTE6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// The address family of the frames a test builds.
#[derive(Clone, Copy, Debug)]
enum Family {
    V4,
    /// fd00::1 (local) and fd00::2 instead of 10.0.0.1 and 10.0.0.2.
    V6,
}

/// An Ethernet frame carrying `pkt` (TCP, its header fields; IPv4, or IPv6 between the local and
/// remote addresses in the packet's direction) with `payload` zero bytes.
fn frame(family: Family, pkt: &Packet, payload: u32) -> Vec<u8> {
    let (ethertype, ip) = match family {
        Family::V4 => ([0x08, 0x00], wire::build_ack(pkt, false)),
        Family::V6 => {
            let (src, dst) = if pkt.tuple.src == Addr(LOCAL) {
                (LOCAL6, REMOTE6)
            } else {
                (REMOTE6, LOCAL6)
            };
            ([0x86, 0xdd], wire::build_ack_v6(pkt, src, dst, false))
        }
    };
    let mut ip = ip.expect("a TCP packet");
    let total = ip.len() + payload as usize;
    wire::claim_payload(&mut ip, payload as usize);
    ip.resize(total, 0);
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&ethertype);
    f.extend_from_slice(&ip);
    f
}

fn data(family: Family, i: u32) -> Vec<u8> {
    let p = Packet {
        tuple: tuple(80),
        header: Header::Tcp(TcpHeader {
            seq: Seq(ISN + i * MSS),
            ack: Seq(1),
            flags: TcpFlags::ACK,
            window: 1000,
            ..Default::default()
        }),
        ..Default::default()
    };
    frame(family, &p, MSS)
}

/// The peer's ACK of the first `segs` segments on the connection to `port`, with `payload` bytes of
/// its own data and `sack` blocks.
fn ack_of(family: Family, segs: u32, port: u16, payload: u32, sack: SackBlocks) -> Vec<u8> {
    let p = Packet {
        tuple: tuple(port).reversed(),
        header: Header::Tcp(TcpHeader {
            seq: Seq(1),
            ack: Seq(ISN + segs * MSS),
            flags: TcpFlags::ACK,
            window: 1000,
            sack,
            ..Default::default()
        }),
        ..Default::default()
    };
    frame(family, &p, payload)
}

fn ack(family: Family, segs: u32) -> Vec<u8> {
    ack_of(family, segs, 80, 0, SackBlocks::default())
}

/// The tap, the shim and the agent's counters, stepped as the agent's loop steps them.
struct Rig {
    tap: BpfTap,
    shim: Tracks,
    counters: AgentCounters,
    addrs: V6Addrs,
    batch: Vec<Tapped>,
}

/// What one frame did: whether the kernel dropped it, and the records it left (direction, whether
/// the record says dropped, the shim's verdict on it).
#[derive(Debug, PartialEq, Eq)]
struct Step {
    kernel_dropped: bool,
    records: Vec<(TapDir, bool, bool)>,
}

impl Rig {
    fn new(gamma: Option<u64>) -> Rig {
        let tap = BpfTap::load(
            &BpfTapConfig {
                interface: "test".into(),
                gamma_bytes: gamma,
                pass_sack_dupacks: true,
                max_flows: 64,
                ring_bytes: 1 << 16,
            },
            14,
        )
        .unwrap_or_else(|e| panic!("the tap program loads: {e}"));
        let cfg = TracksConfig {
            fixed_beta: Some(Dur::from_millis(4)),
            sack: false,
            ..real_host_tracks()
        };
        Rig {
            tap,
            shim: Tracks::new(cfg, stream(1, Stream::Shim, 0)),
            counters: AgentCounters::default(),
            addrs: V6Addrs::new(16),
            batch: Vec::new(),
        }
    }

    fn step(&mut self, now: Time, ingress: bool, frame: &[u8]) -> Step {
        let kernel_dropped = self.tap.test_run(ingress, frame).unwrap();
        self.batch.clear();
        self.tap.recv(&mut self.batch).unwrap();
        let mut records = Vec::new();
        for t in self.batch.drain(..) {
            let pass = shim_packet(
                &mut self.shim,
                &mut self.counters,
                &mut self.addrs,
                now,
                t.dir,
                t.bytes(),
            );
            records.push((t.dir, t.kernel_dropped == Some(true), pass));
        }
        self.tap.mirror_recovering(&self.shim, &self.addrs);
        Step {
            kernel_dropped,
            records,
        }
    }

    /// The shim's timer up to `end`; returns the spoofed ACKs it made.
    fn run_timer(&mut self, end: Time) -> usize {
        let mut spoofed = 0;
        while let Some(t) = self.shim.poll_timeout() {
            if t > end {
                break;
            }
            self.shim.handle_timeout(t);
            while self.shim.poll_inject(t).is_some() {
                spoofed += 1;
            }
        }
        self.tap.mirror_recovering(&self.shim, &self.addrs);
        spoofed
    }
}

fn ms(m: u64) -> Time {
    Time(m * 1_000_000)
}

fn passed(dir: TapDir) -> Step {
    Step {
        kernel_dropped: false,
        records: vec![(dir, false, true)],
    }
}

fn unseen() -> Step {
    Step {
        kernel_dropped: false,
        records: vec![],
    }
}

#[test]
fn the_kernel_drops_exactly_the_duplicate_acks_the_shim_drops() {
    if !probe::should_run("the_kernel_drops_exactly_the_duplicate_acks_the_shim_drops") {
        return;
    }
    duplicates_dropped(Family::V4);
}

#[test]
fn ipv6_duplicates_are_dropped_alike() {
    if !probe::should_run("ipv6_duplicates_are_dropped_alike") {
        return;
    }
    duplicates_dropped(Family::V6);
}

fn duplicates_dropped(f: Family) {
    let mut r = Rig::new(None);
    let t0 = Time(0);
    // The host's own pure ACKs leaving are of no use to the shim: not reported.
    let own_ack = {
        let p = Packet {
            tuple: tuple(80),
            header: Header::Tcp(TcpHeader {
                seq: Seq(ISN),
                ack: Seq(1),
                flags: TcpFlags::ACK,
                window: 1000,
                ..Default::default()
            }),
            ..Default::default()
        };
        frame(f, &p, 0)
    };
    assert_eq!(r.step(t0, false, &own_ack), unseen());
    for i in 0..10 {
        assert_eq!(
            r.step(t0, false, &data(f, i)),
            passed(TapDir::Egress),
            "segment {i}"
        );
    }
    assert_eq!(r.step(Time(100_000), true, &ack(f, 7)), passed(TapDir::Ingress));
    // UDP, a later IPv4 fragment, an IPv6 packet with an extension header (a fragment header):
    // passed unseen.
    let (proto_at, fragment) = match f {
        Family::V4 => {
            let mut b = ack(f, 7);
            b[14 + 7] = 1;
            (14 + 9, b)
        }
        Family::V6 => {
            let mut b = ack(f, 7);
            b[14 + 6] = 44;
            (14 + 6, b)
        }
    };
    let mut udp = ack(f, 7);
    udp[proto_at] = 17;
    assert_eq!(r.step(Time(100_000), true, &udp), unseen());
    assert_eq!(r.step(Time(100_000), true, &fragment), unseen());
    // Not recovering yet: a duplicate passes (and counts toward phi).
    assert_eq!(r.step(Time(200_000), true, &ack(f, 7)), passed(TapDir::Ingress));

    // The stall: after beta the shim spoofs and its episode reaches the kernel's map.
    assert!(r.run_timer(ms(10)) >= 1, "the shim spoofed");
    assert_eq!(r.shim.recovering().count(), 1);

    // A real duplicate is now dropped in the kernel, as the shim drops it.
    let dup = r.step(ms(10), true, &ack(f, 7));
    assert_eq!(
        dup,
        Step {
            kernel_dropped: true,
            records: vec![(TapDir::Ingress, true, false)],
        }
    );
    // Not dropped: a duplicate with SACK blocks (pass_sack_dupacks), one carrying data, and a
    // duplicate of another connection.
    let mut blocks = SackBlocks::default();
    blocks.push(Seq(ISN + 8 * MSS), Seq(ISN + 9 * MSS));
    assert_eq!(
        r.step(ms(10), true, &ack_of(f, 7, 80, 0, blocks)),
        passed(TapDir::Ingress)
    );
    assert!(
        !r.step(ms(10), true, &ack_of(f, 7, 80, 100, SackBlocks::default()))
            .kernel_dropped
    );
    assert!(
        !r.step(ms(10), true, &ack_of(f, 7, 81, 0, SackBlocks::default()))
            .kernel_dropped
    );
    // A new ACK ends the episode; its duplicates pass again.
    assert_eq!(r.step(ms(11), true, &ack(f, 8)), passed(TapDir::Ingress));
    assert_eq!(r.shim.recovering().count(), 0);
    assert_eq!(r.step(ms(11), true, &ack(f, 8)), passed(TapDir::Ingress));

    let c = r.tap.counters();
    assert_eq!(c.kernel_dropped, 1, "{c:?}");
    assert_eq!(r.counters.dropped, 1, "the shim's verdicts: {:?}", r.counters);
    assert_eq!((c.ring_full, c.mirror_errors, c.past_gamma), (0, 0, 0), "{c:?}");
    let v6 = r.counters.ipv6_packets;
    match f {
        Family::V4 => assert_eq!(v6, 0),
        Family::V6 => assert_eq!(v6, r.counters.egress_packets + r.counters.ingress_packets),
    }
}

#[test]
fn flows_past_gamma_are_not_reported() {
    if !probe::should_run("flows_past_gamma_are_not_reported") {
        return;
    }
    // Data segments are 20 + 20 + 1448 = 1488 B: two fit in 3000 B, the third is past gamma.
    let mut r = Rig::new(Some(3000));
    let f = Family::V4;
    assert_eq!(r.step(Time(0), false, &data(f, 0)), passed(TapDir::Egress));
    assert_eq!(r.step(Time(0), false, &data(f, 1)), passed(TapDir::Egress));
    assert_eq!(r.step(Time(0), false, &data(f, 2)), unseen());
    assert_eq!(
        r.step(Time(0), true, &ack(f, 3)),
        unseen(),
        "both directions count"
    );
    assert_eq!(r.tap.counters().past_gamma, 2);
}
