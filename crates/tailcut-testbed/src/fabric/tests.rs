//! The fabric's rules without root: each host NIC is one end of a Unix datagram socket pair (a
//! datagram socket keeps packet boundaries, as a TUN does), the test holds the other end.

use super::*;
use crate::wire::header_checksum;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use tailcut_proto::units::{Bytes, Rate};
use tailcut_sim::fault::{Direction, FaultConfig, LinkRef};
use tailcut_sim::net::aqm::AqmConfig;
use tailcut_sim::net::link::LossConfig;
use tailcut_sim::topo::{self, Star, SwitchQueues, TopologyConfig};

struct Harness {
    nics: Vec<UnixDatagram>,
    stop: Arc<AtomicBool>,
    fabric: std::thread::JoinHandle<io::Result<FabricReport>>,
}

fn start(aqm: AqmConfig, faults: &[FaultConfig]) -> Harness {
    start_capturing(aqm, faults, None)
}

fn start_capturing(aqm: AqmConfig, faults: &[FaultConfig], capture: Option<Capture>) -> Harness {
    let q = SwitchQueues {
        buffer: Bytes(100_000),
        aqm,
        ..Default::default()
    };
    let star = Star {
        hosts: 2,
        host_rate: Rate(1_000_000_000),
        link_delay: Dur::from_micros(5),
    };
    let spec = topo::build(&TopologyConfig::Star(star), &q).unwrap();
    let net = Network::build(&spec, 1);
    let addrs = AddrTable::new(&net).unwrap();
    let plan = fault::plan(faults, &net, 1).unwrap();
    let mut ours = Vec::new();
    let mut tuns = Vec::new();
    for _ in 0..net.addrs.len() {
        let (a, b) = UnixDatagram::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        tuns.push(File::from(OwnedFd::from(a)));
        ours.push(b);
    }
    let mut fabric = Fabric::new(net, addrs, tuns, plan, LoopConfig::default());
    if let Some(c) = capture {
        fabric = fabric.with_capture(c);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let (_tx, rx) = mpsc::channel();
    let fabric = std::thread::spawn(move || fabric.run(&s2, &rx));
    Harness {
        nics: ours,
        stop,
        fabric,
    }
}

impl Harness {
    fn finish(self) -> FabricReport {
        self.stop.store(true, AtomicOrdering::Relaxed);
        self.fabric.join().unwrap().unwrap()
    }
}

/// UDP 10.1.0.1:1000 -> 10.1.0.2:2000 (h0 to h1 in the address table) with TOS `tos`.
fn udp(tos: u8, dst: [u8; 4], proto: u8) -> Vec<u8> {
    let mut p = vec![0u8; 20 + 8 + 100];
    p[0] = 0x45;
    p[1] = tos;
    let len = p.len() as u16;
    p[2..4].copy_from_slice(&len.to_be_bytes());
    p[8] = 64;
    p[9] = proto;
    p[12..16].copy_from_slice(&[10, 1, 0, 1]);
    p[16..20].copy_from_slice(&dst);
    p[20..22].copy_from_slice(&1000u16.to_be_bytes());
    p[22..24].copy_from_slice(&2000u16.to_be_bytes());
    let c = header_checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

const H1: [u8; 4] = [10, 1, 0, 2];

fn recv(s: &UnixDatagram) -> Option<Vec<u8>> {
    let mut buf = [0u8; 2048];
    s.recv(&mut buf).ok().map(|n| buf[..n].to_vec())
}

#[test]
fn a_packet_crosses_the_switch_unchanged_without_marking() {
    let h = start(AqmConfig::DropTail, &[]);
    let sent = udp(0x02, H1, 17);
    h.nics[0].send(&sent).unwrap();
    assert_eq!(recv(&h.nics[1]).as_deref(), Some(&sent[..]));
    let r = h.finish();
    assert_eq!(r.port("h0", "sw0").unwrap().counters.tx_packets, 1);
    assert_eq!(r.port("sw0", "h1").unwrap().counters.tx_packets, 1);
    assert_eq!(r.in_flight, 0);
}

#[test]
fn a_marking_queue_sets_ce_on_the_wire_with_a_valid_checksum() {
    // K = 0 marks every ECN-capable packet; a not-ECT packet passes unmarked.
    let h = start(AqmConfig::Ecn { k: Bytes(0) }, &[]);
    h.nics[0].send(&udp(0x02, H1, 17)).unwrap();
    let got = recv(&h.nics[1]).unwrap();
    assert_eq!(got[1] & 3, 3, "CE");
    assert_eq!(
        u16::from_be_bytes([got[10], got[11]]),
        header_checksum(&got[..20])
    );
    assert_eq!(got[20..], udp(0x02, H1, 17)[20..], "payload untouched");
    h.nics[0].send(&udp(0x00, H1, 17)).unwrap();
    assert_eq!(recv(&h.nics[1]).unwrap()[1] & 3, 0, "not-ECT stays not-ECT");
    let r = h.finish();
    assert_eq!(r.port("sw0", "h1").unwrap().counters.ecn_marked, 1);
}

#[test]
fn a_black_hole_on_the_schedule_drops_and_counts() {
    let hole = FaultConfig::Loss {
        link: LinkRef {
            between: ["sw0".into(), "h1".into()],
            index: 0,
        },
        direction: Direction::Forward,
        model: LossConfig::Blackhole,
        at: Dur::ZERO,
        until: None,
    };
    let h = start(AqmConfig::DropTail, &[hole]);
    for _ in 0..5 {
        h.nics[0].send(&udp(0, H1, 17)).unwrap();
    }
    assert_eq!(recv(&h.nics[1]), None);
    let r = h.finish();
    assert_eq!(r.port("sw0", "h1").unwrap().counters.dropped_link_loss, 5);
    assert_eq!(r.total_dropped(), 5);
}

#[test]
fn packets_the_fabric_cannot_carry_are_counted_not_forwarded() {
    let h = start(AqmConfig::DropTail, &[]);
    h.nics[0].send(&udp(0, [10, 9, 9, 9], 17)).unwrap(); // unknown destination
    h.nics[0].send(&udp(0, H1, 1)).unwrap(); // ICMP
    h.nics[0].send(&[0x60, 0, 0, 0]).unwrap(); // IPv6 / malformed
    assert_eq!(recv(&h.nics[1]), None);
    let r = h.finish();
    assert_eq!(r.rejects.unknown_dst, 1);
    assert_eq!(r.rejects.other_protocol, 1);
    assert_eq!(r.rejects.malformed, 1);
    assert_eq!(r.rejects.packets_read, 3);
}

/// The records of a pcap this crate wrote (native byte order): (seconds, ns, included bytes, length).
fn pcap_records(path: &std::path::Path) -> Vec<(u32, u32, Vec<u8>, u32)> {
    let b = std::fs::read(path).unwrap();
    let u = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(u(0), crate::pcap::MAGIC_NS);
    assert_eq!(u(20), crate::pcap::LINKTYPE_RAW);
    let mut out = Vec::new();
    let mut i = 24;
    while i < b.len() {
        let incl = u(i + 8) as usize;
        out.push((u(i), u(i + 4), b[i + 16..i + 16 + incl].to_vec(), u(i + 12)));
        i += 16 + incl;
    }
    out
}

#[test]
fn captures_hold_what_hosts_sent_and_what_they_received() {
    let dir = std::env::temp_dir().join(format!("tailcut-fabric-pcap-{}", std::process::id()));
    let spec = crate::pcap::CaptureSpec {
        dir: dir.clone(),
        prefix: "t.".into(),
        snaplen: 30,
        max_bytes: 1 << 20,
    };
    // Every marked packet shows in `delivered` as the host got it: with CE.
    let h = start_capturing(
        AqmConfig::Ecn { k: Bytes(0) },
        &[],
        Some(Capture::create(&spec).unwrap()),
    );
    let wall_before = tailcut_sys::clock::realtime_ns();
    h.nics[0].send(&udp(0x02, H1, 17)).unwrap();
    h.nics[0].send(&udp(0, [10, 9, 9, 9], 17)).unwrap(); // read, then rejected
    assert!(recv(&h.nics[1]).is_some());
    let r = h.finish();
    let sent = pcap_records(&spec.sent_path());
    let delivered = pcap_records(&spec.delivered_path());
    std::fs::remove_dir_all(&dir).unwrap();
    let c = r.capture.unwrap();
    assert_eq!((c.sent.records, c.delivered.records), (2, 1));
    assert_eq!((c.sent.not_written, c.delivered.not_written), (0, 0));
    assert_eq!(sent.len(), 2);
    assert_eq!(delivered.len(), 1);
    assert_eq!(sent[0].2, udp(0x02, H1, 17)[..30], "cut at snaplen");
    assert_eq!(sent[0].3, 128, "original length kept");
    assert_eq!(delivered[0].2[1] & 3, 3, "CE as delivered");
    // Wall-clock stamps: the epoch, not the monotonic clock's boot-relative time.
    let ts = |r: &(u32, u32, Vec<u8>, u32)| u64::from(r.0) * 1_000_000_000 + u64::from(r.1);
    assert!(ts(&sent[0]) + 1_000_000_000 > wall_before);
    assert!(ts(&sent[0]) <= ts(&delivered[0]));
}
