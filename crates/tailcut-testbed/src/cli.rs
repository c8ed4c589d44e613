//! The binary's subcommands other than `run` and `agent`: `hold` (for the leak test) and `bench`
//! (forwarding capacity and lateness of this machine).

use crate::fabric::LoopConfig;
use crate::{HostSetup, Testbed, TestbedError, TestbedSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;
use tailcut_proto::flags::{present, value as flag};
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::{ConfigError, Dur};
use tailcut_sim::topo::{self, Star, SwitchQueues, TopologyConfig};

/// A star of `hosts` hosts. Its only user input is `--hosts`, so a refused star is that flag's error.
fn star(
    hosts: u32,
    rate_bps: u64,
    delay: Dur,
    buffer: u64,
) -> Result<tailcut_sim::topo::TopoSpec, ConfigError> {
    let q = SwitchQueues {
        buffer: Bytes(buffer),
        ..Default::default()
    };
    topo::build(
        &TopologyConfig::Star(Star {
            hosts,
            host_rate: Rate(rate_bps),
            link_delay: delay,
        }),
        &q,
    )
    .map_err(|e| ConfigError::new("--hosts", e.reason))
}

/// Starts a star of `--hosts` hosts (default 3) with `sleep 600` in each and, with `--dctcp`, registers
/// the BPF DCTCP; prints one JSON line with this process's pid, the sleepers' pids, the namespaces'
/// inodes and the DCTCP's name, then waits to be killed.
pub fn hold(args: &[String]) -> Result<(), TestbedError> {
    let hosts: u32 = flag(args, "--hosts")?.unwrap_or(3);
    let dctcp = present(args, "--dctcp")
        .then(|| crate::dctcp::Dctcp::load(crate::dctcp::DEFAULT_G))
        .transpose()?;
    let tb = Testbed::start(TestbedSpec {
        topo: star(hosts, 100_000_000, Dur::from_micros(10), 100_000)?,
        faults: vec![],
        seed: 1,
        host: HostSetup::default(),
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim: None,
    })?;
    let mut children = Vec::new();
    let mut inodes = Vec::new();
    for h in tb.hosts() {
        let c = h
            .spawn(Command::new("sleep").arg("600"))
            .map_err(|e| format!("spawn sleep: {e}"))?;
        children.push(c.id());
        inodes.push(h.inode().map_err(|e| e.to_string())?);
    }
    let line = serde_json::json!({
        "pid": std::process::id(),
        "children": children,
        "netns_inodes": inodes,
        "dctcp": dctcp.as_ref().map(|d| d.name()),
    });
    println!("{line}");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Bulk TCP from h0 to h1 through one switch (two ports of `--rate` Mbit/s each way, a buffer of
/// `--buffer-kb`, `--delay-us` per link) for `--seconds`; prints goodput, the fabric's packet rate
/// and lateness as JSON.
pub fn bench(args: &[String]) -> Result<(), TestbedError> {
    let rate_mbit: u64 = flag(args, "--rate")?.unwrap_or(10_000);
    let seconds: f64 = flag(args, "--seconds")?.unwrap_or(5.0);
    let delay_us: u64 = flag(args, "--delay-us")?.unwrap_or(10);
    let buffer_kb: u64 = flag(args, "--buffer-kb")?.unwrap_or(4_000);
    let spin_us: u64 = flag(args, "--spin-us")?.unwrap_or(60);
    let cc: Option<String> = flag(args, "--cc")?;
    // `--cc dctcp` registers tailcut's BPF DCTCP for the bench (unregistered when it returns).
    let dctcp = (cc.as_deref() == Some(crate::dctcp::CONFIG_NAME))
        .then(|| crate::dctcp::Dctcp::load(crate::dctcp::DEFAULT_G))
        .transpose()?;
    let cc = dctcp.as_ref().map(|d| d.name().to_string()).or(cc);
    let tb = Testbed::start(TestbedSpec {
        topo: star(
            2,
            rate_mbit * 1_000_000,
            Dur::from_micros(delay_us),
            buffer_kb * 1000,
        )?,
        faults: vec![],
        seed: 1,
        host: HostSetup::default(),
        loop_cfg: LoopConfig {
            spin: Dur::from_micros(spin_us),
            nice: flag(args, "--nice")?.or(LoopConfig::default().nice),
            cpu: flag(args, "--cpu")?,
            // `--fifo 0` keeps the fabric in the normal class (nice only).
            fifo: match flag::<i32>(args, "--fifo")? {
                Some(0) => None,
                Some(p) => Some(p),
                None => LoopConfig::default().fifo,
            },
        },
        capture: None,
        shim: None,
    })?;
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let to = SocketAddr::V4(SocketAddrV4::new(h1.ips[0], 5201));
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || -> Result<u64, String> {
        h1.enter().map_err(|e| e.to_string())?;
        let l = TcpListener::bind(to).map_err(|e| e.to_string())?;
        tx.send(()).map_err(|e| e.to_string())?;
        let (mut s, _) = l.accept().map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return Ok(n),
                Ok(k) => n += k as u64,
            }
        }
    });
    rx.recv().map_err(|e| e.to_string())?;
    let before = tb.hosts()[0].netstat().map_err(|e| e.to_string())?;
    let started = tailcut_sys::clock::monotonic_ns();
    let client = std::thread::spawn(move || -> Result<(), String> {
        h0.enter().map_err(|e| e.to_string())?;
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .map_err(|e| e.to_string())?;
        if let Some(cc) = &cc {
            s.set_tcp_congestion(cc.as_bytes())
                .map_err(|e| format!("--cc {cc}: {e}"))?;
        }
        s.connect(&to.into()).map_err(|e| e.to_string())?;
        let mut s: TcpStream = s.into();
        let buf = vec![0u8; 1 << 20];
        let end = tailcut_sys::clock::monotonic_ns() + (seconds * 1e9) as u64;
        while tailcut_sys::clock::monotonic_ns() < end {
            s.write_all(&buf).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    client.join().map_err(|_| "client panicked")??;
    let bytes = server.join().map_err(|_| "server panicked")??;
    let secs = (tailcut_sys::clock::monotonic_ns() - started) as f64 / 1e9;
    let after = tb.hosts()[0].netstat().map_err(|e| e.to_string())?;
    let tun_drops: u64 = tb.hosts()[0]
        .tun_tx_drops()
        .map_err(|e| e.to_string())?
        .iter()
        .sum();
    let report = tb.stop().map_err(|e| e.to_string())?;
    let hops: u64 = report.ports.iter().map(|p| p.counters.tx_packets).sum();
    let fabric_secs = report.elapsed_ns as f64 / 1e9;
    let out = serde_json::json!({
        "link_rate_mbit": rate_mbit,
        "seconds": secs,
        "goodput_mbit": bytes as f64 * 8.0 / secs / 1e6,
        "packets_read_per_s": report.rejects.packets_read as f64 / fabric_secs,
        "port_transmissions_per_s": hops as f64 / fabric_secs,
        "lateness_ns": report.lateness,
        "tun_tx_drops_h0": tun_drops,
        "fabric_drops": report.total_dropped(),
        "retrans_segs": after.get("Tcp.RetransSegs") - before.get("Tcp.RetransSegs"),
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
    );
    Ok(())
}
