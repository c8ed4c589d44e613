//! The tc-BPF backend: packets never wait for the agent. A BPF program on the NIC's tcx egress and
//! ingress (`bpf/tap.bpf.c`) copies the headers of the TCP packets the shim needs into a ring buffer
//! and lets them go; the agent reads the copies afterwards. The shim's one verdict that matters, the
//! drop of real duplicate ACKs during a recovery, is taken in the kernel from the `recovering` map,
//! which the agent keeps equal to the shim's [`Tracks::recovering`].
//!
//! Nothing outlives the agent: the program hangs on tcx links held only by the agent's file
//! descriptors, so an exit, a crash or SIGKILL detaches it and traffic passes untouched (fail-open),
//! with no rule, filter or pinned object left behind. tcx needs Linux >= 6.6.

use crate::addr6::V6Addrs;
use crate::bpf_build;
use crate::tap::{PacketTap, TapDir, Tapped, CAPTURE_BYTES};
use aya::maps::{HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::tc::{TcAttachOptions, TcAttachType};
use aya::programs::{LinkOrder, SchedClassifier, TestRun, TestRunOptions};
use aya::{Ebpf, EbpfLoader};
use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, BorrowedFd};
use tailcut_proto::packet::Addr;
use tailcut_proto::tracks::{RecoveringFlow, Tracks};

const SOURCE: &str = include_str!("../bpf/tap.bpf.c");
const WHAT: &str = "tc-BPF tap";
/// The two programs of the object and their hooks, egress first.
const PROGRAMS: [(&str, TcAttachType); 2] = [
    ("tailcut_tracks_egress", TcAttachType::Egress),
    ("tailcut_tracks_ingress", TcAttachType::Ingress),
];
/// The programs' return values (`linux/pkt_cls.h`).
const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
/// The program's record: ktime_ns (u64), wire_len (u32), cap_len (u16), dir (u8), dropped (u8),
/// then the bytes.
const RECORD_HEAD: usize = 16;
/// Indices of the program's `stats` array.
const STAT_RING_FULL: u32 = 0;
const STAT_DROPPED: u32 = 1;
const STAT_PAST_GAMMA: u32 = 2;
const STAT_NOT_COPIED: u32 = 3;
/// `struct flow_key`: local address, remote address (16 bytes each), local port, remote port.
type FlowKey = [u8; 36];

/// What the program is told at load time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfTapConfig {
    pub interface: String,
    /// Flows past this many bytes (both directions, IP lengths) are no longer reported: gamma.
    pub gamma_bytes: Option<u64>,
    /// Whether duplicate ACKs with SACK blocks pass during a recovery (the shim's option).
    pub pass_sack_dupacks: bool,
    /// Entries of the per-flow byte counts and of `recovering` (the shim's `max_flows`).
    pub max_flows: u32,
    /// Size of the ring buffer in bytes (a power of two, at least a page).
    pub ring_bytes: u32,
}

/// The program's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BpfTapCounters {
    /// Packets passed unseen because the ring was full (the agent fell behind).
    pub ring_full: u64,
    /// Real duplicate ACKs the program dropped.
    pub kernel_dropped: u64,
    /// Packets of flows past gamma, passed without a record.
    pub past_gamma: u64,
    /// Packets too short to hold IPv4 and TCP headers, passed without a record.
    pub not_copied: u64,
    /// Updates of `recovering` the kernel refused (map full): those flows' duplicates pass.
    pub mirror_errors: u64,
}

pub struct BpfTap {
    ring: RingBuf<MapData>,
    recovering: BpfHashMap<MapData, FlowKey, u32>,
    stats: PerCpuArray<MapData, u64>,
    /// What `recovering` holds now, so a rescan writes only the differences.
    mirrored: HashMap<FlowKey, u32>,
    /// The shim's episode generation at the last rescan.
    generation: Option<u64>,
    mirror_errors: u64,
    /// Holds the programs and their tcx links: dropping it detaches them. Declared last so that the
    /// maps above are closed first (drop order is declaration order).
    ebpf: Ebpf,
}

impl BpfTap {
    /// Builds the program, loads it and attaches it to the interface's tcx egress and ingress.
    pub fn open(cfg: &BpfTapConfig) -> Result<BpfTap, String> {
        let mut tap = BpfTap::load(cfg, link_header_len(&cfg.interface)?)?;
        tap.attach(&cfg.interface)?;
        Ok(tap)
    }

    /// Builds and loads the program for packets with `l2_len` bytes before the IP header, without
    /// attaching it anywhere ([`BpfTap::test_run`] runs it on given frames).
    pub fn load(cfg: &BpfTapConfig, l2: u32) -> Result<BpfTap, String> {
        if !cfg.ring_bytes.is_power_of_two() || cfg.ring_bytes < 4096 {
            return Err(format!(
                "{WHAT}: ring_bytes {} must be a power of two of at least 4096",
                cfg.ring_bytes
            ));
        }
        bpf_build::toolchain(WHAT)?;
        let dir = bpf_build::private_dir("tracks-tap")?;
        let object = (|| {
            let src = dir.join("tap.bpf.c");
            std::fs::write(&src, SOURCE).map_err(|e| format!("{WHAT}: {}: {e}", src.display()))?;
            let obj = dir.join("tap.o");
            bpf_build::compile_bpf(&src, &obj, &[], WHAT)?;
            std::fs::read(&obj).map_err(|e| format!("{WHAT}: {}: {e}", obj.display()))
        })();
        let _ = std::fs::remove_dir_all(&dir);
        let object = object?;
        let gamma = cfg.gamma_bytes.unwrap_or(u64::MAX);
        let pass_sack = u32::from(cfg.pass_sack_dupacks);
        let mut ebpf = EbpfLoader::new()
            .override_global("l2_len", &l2, true)
            .override_global("gamma_bytes", &gamma, true)
            .override_global("pass_sack_dupacks", &pass_sack, true)
            .map_max_entries("flow_bytes", cfg.max_flows)
            .map_max_entries("recovering", cfg.max_flows)
            .map_max_entries("events", cfg.ring_bytes)
            .load(&object)
            .map_err(|e| format!("{WHAT}: the kernel refused the program: {e}"))?;
        for (name, _) in PROGRAMS {
            program(&mut ebpf, name)?
                .load()
                .map_err(|e| format!("{WHAT}: the verifier refused {name}: {e}"))?;
        }
        let take = |ebpf: &mut Ebpf, name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| format!("{WHAT}: map {name} missing from the object"))
        };
        let ring =
            RingBuf::try_from(take(&mut ebpf, "events")?).map_err(|e| format!("{WHAT}: events: {e}"))?;
        let recovering = BpfHashMap::try_from(take(&mut ebpf, "recovering")?)
            .map_err(|e| format!("{WHAT}: recovering: {e}"))?;
        let stats =
            PerCpuArray::try_from(take(&mut ebpf, "stats")?).map_err(|e| format!("{WHAT}: stats: {e}"))?;
        Ok(BpfTap {
            ring,
            recovering,
            stats,
            mirrored: HashMap::new(),
            generation: None,
            mirror_errors: 0,
            ebpf,
        })
    }

    /// Attaches both programs to `interface` (tcx links, released with the tap or the process).
    fn attach(&mut self, interface: &str) -> Result<(), String> {
        for (name, at) in PROGRAMS {
            program(&mut self.ebpf, name)?
                .attach_with_options(interface, at, TcAttachOptions::TcxOrder(LinkOrder::default()))
                .map_err(|e| {
                    format!(
                        "{WHAT}: cannot attach {name} to {interface} by tcx (needs Linux >= 6.6; use backend = \"nfqueue\" otherwise): {e}"
                    )
                })?;
        }
        Ok(())
    }

    /// Runs the egress or ingress program once on an Ethernet `frame` (`BPF_PROG_TEST_RUN`; load
    /// with `l2 = 14`), as if it had crossed the hook: its record lands in the ring and its
    /// decision is returned (true: dropped).
    pub fn test_run(&mut self, ingress: bool, frame: &[u8]) -> Result<bool, String> {
        let name = PROGRAMS[usize::from(ingress)].0;
        let result = program(&mut self.ebpf, name)?
            .test_run(TestRunOptions {
                data_in: Some(frame),
                ..TestRunOptions::default()
            })
            .map_err(|e| format!("{WHAT}: test run of {name}: {e}"))?;
        match result.return_value {
            TC_ACT_OK => Ok(false),
            TC_ACT_SHOT => Ok(true),
            v => Err(format!("{WHAT}: {name} returned {v}")),
        }
    }

    fn stat(&self, index: u32) -> u64 {
        self.stats
            .get(&index, 0)
            .map_or(0, |per_cpu| per_cpu.iter().copied().sum())
    }

    pub fn counters(&self) -> BpfTapCounters {
        BpfTapCounters {
            ring_full: self.stat(STAT_RING_FULL),
            kernel_dropped: self.stat(STAT_DROPPED),
            past_gamma: self.stat(STAT_PAST_GAMMA),
            not_copied: self.stat(STAT_NOT_COPIED),
            mirror_errors: self.mirror_errors,
        }
    }
}

impl AsFd for BpfTap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.ring.as_fd()
    }
}

impl PacketTap for BpfTap {
    fn recv(&mut self, out: &mut Vec<Tapped>) -> io::Result<()> {
        while let Some(item) = self.ring.next() {
            if let Some(t) = parse_record(&item) {
                out.push(t);
            }
        }
        Ok(())
    }

    /// The packet has gone already; the kernel took the only verdict that drops.
    fn verdict(&mut self, _id: u32, _pass: bool) -> io::Result<()> {
        Ok(())
    }

    fn missed(&self) -> u64 {
        self.stat(STAT_RING_FULL)
    }

    /// Writes the differences between the shim's recovering flows and the kernel's map, when the
    /// shim's episodes changed since the last call.
    fn mirror_recovering(&mut self, shim: &Tracks, addrs: &V6Addrs) {
        let generation = shim.episode_generation();
        if self.generation == Some(generation) {
            return;
        }
        self.generation = Some(generation);
        let now: HashMap<FlowKey, u32> = shim
            .recovering()
            .filter_map(|r| Some((flow_key(&r, addrs)?, ack_value(&r))))
            .collect();
        let gone: Vec<FlowKey> = self
            .mirrored
            .keys()
            .filter(|k| !now.contains_key(*k))
            .copied()
            .collect();
        for k in gone {
            // Already absent (never written) is fine.
            let _ = self.recovering.remove(&k);
            self.mirrored.remove(&k);
        }
        for (k, v) in now {
            if self.mirrored.get(&k) == Some(&v) {
                continue;
            }
            match self.recovering.insert(k, v, 0) {
                Ok(()) => {
                    self.mirrored.insert(k, v);
                }
                Err(_) => self.mirror_errors += 1,
            }
        }
    }

    fn extra_counters(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.counters()).ok()
    }
}

fn program<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut SchedClassifier, String> {
    ebpf.program_mut(name)
        .ok_or_else(|| format!("{WHAT}: program {name} missing from the object"))?
        .try_into()
        .map_err(|e| format!("{WHAT}: {name}: {e}"))
}

/// The program's `struct flow_key` for a recovering flow: IPv6 addresses (IPv4 ones mapped,
/// `::ffff:a.b.c.d`), then the ports, all in network order. `None` for an IPv6 id the table no
/// longer holds.
fn flow_key(r: &RecoveringFlow, addrs: &V6Addrs) -> Option<FlowKey> {
    let v6 = |a: Addr| -> Option<[u8; 16]> {
        if V6Addrs::is_id(a) {
            addrs.addr(a)
        } else {
            Some(Ipv4Addr::from(a.0).to_ipv6_mapped().octets())
        }
    };
    let mut k = [0u8; 36];
    k[0..16].copy_from_slice(&v6(r.local)?);
    k[16..32].copy_from_slice(&v6(r.remote)?);
    k[32..34].copy_from_slice(&r.local_port.to_be_bytes());
    k[34..36].copy_from_slice(&r.remote_port.to_be_bytes());
    Some(k)
}

/// The ACK number as the program compares it: the header's bytes read as a native u32.
fn ack_value(r: &RecoveringFlow) -> u32 {
    u32::from_ne_bytes(r.ack.0.to_be_bytes())
}

/// One ring record as a tapped packet; `None` for a record that does not have the program's layout.
pub fn parse_record(rec: &[u8]) -> Option<Tapped> {
    if rec.len() < RECORD_HEAD {
        return None;
    }
    let at_ns = u64::from_ne_bytes(rec[0..8].try_into().ok()?);
    let cap = usize::from(u16::from_ne_bytes([rec[12], rec[13]]));
    let dir = match rec[14] {
        0 => TapDir::Egress,
        1 => TapDir::Ingress,
        _ => return None,
    };
    let bytes = rec.get(RECORD_HEAD..RECORD_HEAD + cap.min(CAPTURE_BYTES))?;
    let mut t = Tapped::new(0, dir, bytes, Some(rec[15] == 1));
    t.at_ns = Some(at_ns);
    Some(t)
}

/// The record the program writes for a packet whose first bytes are `bytes`, crossing the hook at
/// `at_ns`: what [`parse_record`] reads, for drivers that feed the agent without the kernel.
pub fn record(at_ns: u64, dir: TapDir, bytes: &[u8], dropped: bool) -> Vec<u8> {
    let cap = bytes.len().min(CAPTURE_BYTES);
    let mut rec = vec![0u8; RECORD_HEAD + CAPTURE_BYTES];
    rec[0..8].copy_from_slice(&at_ns.to_ne_bytes());
    rec[8..12].copy_from_slice(&(bytes.len() as u32).to_ne_bytes());
    rec[12..14].copy_from_slice(&(cap as u16).to_ne_bytes());
    rec[14] = u8::from(dir == TapDir::Ingress);
    rec[15] = u8::from(dropped);
    rec[RECORD_HEAD..RECORD_HEAD + cap].copy_from_slice(&bytes[..cap]);
    rec
}

/// Bytes before the IP header in what tc sees on `interface`: 14 on Ethernet (and loopback), 0 on
/// an L3 device such as TUN.
fn link_header_len(interface: &str) -> Result<u32, String> {
    const ARPHRD_ETHER: u16 = 1;
    const ARPHRD_LOOPBACK: u16 = 772;
    const ARPHRD_RAWIP: u16 = 519;
    const ARPHRD_NONE: u16 = 65534;
    let t =
        tailcut_sys::link::link_type(interface).map_err(|e| format!("{WHAT}: interface {interface}: {e}"))?;
    match t {
        ARPHRD_ETHER | ARPHRD_LOOPBACK => Ok(14),
        ARPHRD_NONE | ARPHRD_RAWIP => Ok(0),
        t => Err(format!(
            "{WHAT}: interface {interface} has link type {t}; only Ethernet and L3 (TUN) devices are handled"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailcut_proto::packet::Addr;
    use tailcut_proto::Seq;

    #[test]
    fn records_parse_or_are_refused() {
        let mut rec = vec![0u8; RECORD_HEAD + CAPTURE_BYTES];
        rec[0..8].copy_from_slice(&123_456u64.to_ne_bytes());
        rec[8..12].copy_from_slice(&1500u32.to_ne_bytes());
        rec[12..14].copy_from_slice(&60u16.to_ne_bytes());
        rec[14] = 1;
        rec[15] = 1;
        rec[16] = 0x45;
        let t = parse_record(&rec).unwrap();
        assert_eq!(
            (t.dir, t.bytes().len(), t.bytes()[0]),
            (TapDir::Ingress, 60, 0x45)
        );
        assert_eq!((t.kernel_dropped, t.at_ns), (Some(true), Some(123_456)));
        rec[14] = 2;
        assert!(parse_record(&rec).is_none(), "unknown direction");
        rec[14] = 0;
        rec[12..14].copy_from_slice(&u16::MAX.to_ne_bytes());
        assert_eq!(parse_record(&rec).unwrap().bytes().len(), CAPTURE_BYTES, "capped");
        assert!(
            parse_record(&rec[..RECORD_HEAD + 10]).is_none(),
            "shorter than it says"
        );
        assert!(parse_record(&rec[..3]).is_none());
    }

    #[test]
    fn the_flow_key_and_ack_have_the_programs_byte_order() {
        let r = RecoveringFlow {
            local: Addr(0x0a00_0001),
            remote: Addr(0x0a00_0102),
            local_port: 40_000,
            remote_port: 80,
            ack: Seq(0x0102_0304),
        };
        let mut addrs = V6Addrs::new(4);
        let mut want = [0u8; 36];
        want[10..16].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
        want[26..32].copy_from_slice(&[0xff, 0xff, 10, 0, 1, 2]);
        want[32..36].copy_from_slice(&[0x9c, 0x40, 0, 80]);
        assert_eq!(
            flow_key(&r, &addrs),
            Some(want),
            "IPv4-mapped, network order, as the program builds it"
        );
        let local6 = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let r6 = RecoveringFlow {
            local: addrs.id(local6),
            remote: addrs.id([0xfd; 16]),
            ..r
        };
        let k = flow_key(&r6, &addrs).unwrap();
        assert_eq!((&k[0..16], &k[16..32]), (&local6[..], &[0xfd; 16][..]));
        let gone = RecoveringFlow {
            remote: Addr(77),
            ..r6
        };
        assert_eq!(flow_key(&gone, &addrs), None, "an id the table does not hold");
        assert_eq!(ack_value(&r).to_ne_bytes(), [1, 2, 3, 4]);
    }
}
