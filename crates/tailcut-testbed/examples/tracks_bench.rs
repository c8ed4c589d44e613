//! Measurements of the agent on testbed hosts (never run in CI: they time things).
//!
//! `incast`: the paper's dumbbell incast (Sec. V-A, CASE 1: 20 senders x 14.6 KB to one receiver,
//! 1 Gbit/s, 150 KB buffer) scaled to the testbed: rates / 10, the same buffer in bytes (the burst
//! overflows it alike at any rate), real Linux TCP, with or without one agent per sender. `--long N`
//! adds CASE 2's long-lived flows: N more senders each stream to the receiver during the rounds (the
//! paper's small:large ratio of 3:1 is `--senders 20 --long 6`, `--senders 80 --long 26`).
//!
//! `pingpong`: 1-byte TCP request/response round trips between two hosts, with or without the agent
//! on the client; the difference of the medians is the agent's added latency (both directions).
//!
//! ```text
//! cargo build --release -p tailcut-tracksd --bin tailcut-tracksd -p tailcut-testbed --example tracks_bench
//! target/release/examples/tracks_bench incast --senders 20 --rounds 10 --sack off --agent on
//! target/release/examples/tracks_bench pingpong --count 2000 --agent on --backend bpf
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;
use tailcut_proto::stats::sample_percentile;
use tailcut_proto::Dur;
use tailcut_sim::net::aqm::AqmConfig;
use tailcut_sim::topo::{LinkSpec, NodeKind, NodeSpec, PortQueueSpec, TopoSpec};
use tailcut_sys::clock::monotonic_ns;
use tailcut_testbed::fabric::LoopConfig;
use tailcut_testbed::netstat::Netstat;
use tailcut_testbed::{HostNs, HostSetup, Testbed, TestbedSpec};

const PORT: u16 = 7000;

struct Args {
    mode: String,
    senders: usize,
    rounds: usize,
    bytes: usize,
    sack: bool,
    agent: bool,
    /// The agent's packet tap: `nfqueue` or `bpf`.
    backend: String,
    /// CASE 2: long-lived flows from this many more senders to the receiver during the rounds.
    long: usize,
    count: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or("usage: tracks_bench incast|pingpong [--senders N] [--rounds N] [--bytes N] [--sack on|off] [--agent on|off] [--backend nfqueue|bpf] [--long N] [--count N]")?;
    let mut a = Args {
        mode,
        senders: 20,
        rounds: 10,
        bytes: 14_600,
        sack: false,
        agent: true,
        backend: "nfqueue".into(),
        long: 0,
        count: 2_000,
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag}: value missing"))?;
        let num = || v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        let onoff = || match v.as_str() {
            "on" => Ok(true),
            "off" => Ok(false),
            _ => Err(format!("{flag}: on or off, got {v}")),
        };
        match flag.as_str() {
            "--senders" => a.senders = num()?,
            "--rounds" => a.rounds = num()?,
            "--bytes" => a.bytes = num()?,
            "--count" => a.count = num()?,
            "--long" => a.long = num()?,
            "--sack" => a.sack = onoff()?,
            "--agent" => a.agent = onoff()?,
            "--backend" if v == "nfqueue" || v == "bpf" => a.backend = v.clone(),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

/// A star: host 0 receives; hosts 1..=n send; every link at `rate`, the switch ports with `buffer`.
fn star(n: usize, rate: u64, buffer: u64) -> TopoSpec {
    let sw = n + 1;
    let mut nodes: Vec<NodeSpec> = (0..=n)
        .map(|i| NodeSpec {
            name: format!("h{i}"),
            kind: NodeKind::Host,
        })
        .collect();
    nodes.push(NodeSpec {
        name: "sw0".into(),
        kind: NodeKind::Switch,
    });
    let links = (0..=n)
        .map(|i| LinkSpec {
            a: i as u32,
            b: sw as u32,
            rate_bps: rate,
            delay: Dur::from_micros(25),
            buffer_a: 16_000_000,
            buffer_b: buffer,
            aqm_a: PortQueueSpec::default(),
            aqm_b: PortQueueSpec {
                aqm: AqmConfig::DropTail,
                ..Default::default()
            },
            tier: 0,
        })
        .collect();
    TopoSpec {
        nodes,
        links,
        host_rack: vec![0; n + 1],
        host_tsq: tailcut_sim::topo::HostTsq::Fixed(0),
    }
}

fn agent_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("own path");
    // target/release/examples/tracks_bench -> target/release/tailcut-tracksd
    exe.parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .join("tailcut-tracksd")
}

/// Starts an agent in `h` with the real-host defaults plus `tracks` lines, and waits for its "ready"
/// line.
fn start_agent(h: &HostNs, dir: &std::path::Path, backend: &str, sack: bool, tracks: &str) -> Child {
    let cfg = dir.join(format!("{}.toml", h.name));
    let text = format!(
        "interface = \"tc0\"\nbackend = \"{backend}\"\nqueue = 3\nsack = {sack}\nreport_every = \"60s\"\n[tracks]\n{tracks}"
    );
    std::fs::write(&cfg, text).unwrap();
    let mut child = h
        .spawn(Command::new(agent_bin()).arg(&cfg).stdout(Stdio::piped()))
        .expect("agent starts");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("ready"), "agent: {line}");
    child
}

fn stop_agent(h: &HostNs, mut child: Child) -> serde_json::Value {
    let pid = child.id().to_string();
    h.spawn(Command::new("kill").args(["-TERM", &pid]))
        .unwrap()
        .wait()
        .unwrap();
    child.wait().unwrap();
    let mut rest = String::new();
    child.stdout.take().unwrap().read_to_string(&mut rest).unwrap();
    rest.lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_default()
}

/// The `per_mille` percentile of ascending samples by `docs/metrics.md`'s nearest rank; NaN without any.
fn pct(sorted: &[f64], per_mille: u64) -> f64 {
    sample_percentile(sorted, per_mille).unwrap_or(f64::NAN)
}

fn sum(before: &[Netstat], after: &[Netstat], key: &str) -> u64 {
    before
        .iter()
        .zip(after)
        .map(|(b, a)| a.get(key) - b.get(key))
        .sum()
}

/// CASE 2's long-lived flows: one connection from each of `senders` to `recv`, written to until the
/// returned flag is set. The handles give the bytes each sent.
fn long_flows(
    recv: &HostNs,
    senders: &[HostNs],
) -> (Arc<std::sync::atomic::AtomicBool>, Vec<thread::JoinHandle<u64>>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    if senders.is_empty() {
        return (stop, Vec::new());
    }
    let to = SocketAddr::V4(SocketAddrV4::new(recv.ips[0], PORT + 1));
    let (tx, rx) = std::sync::mpsc::channel();
    let recv = recv.clone();
    let count = senders.len();
    thread::spawn(move || {
        recv.enter().unwrap();
        let l = TcpListener::bind(to).unwrap();
        tx.send(()).unwrap();
        for _ in 0..count {
            let (mut s, _) = l.accept().unwrap();
            thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    rx.recv().unwrap();
    let handles = senders
        .iter()
        .cloned()
        .map(|h| {
            let stop = stop.clone();
            thread::spawn(move || {
                h.enter().unwrap();
                let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(10)).unwrap();
                let chunk = vec![9u8; 65_536];
                let mut sent = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    s.write_all(&chunk).unwrap();
                    sent += chunk.len() as u64;
                }
                sent
            })
        })
        .collect();
    (stop, handles)
}

fn incast(a: &Args) {
    let n = a.senders;
    let tb = Testbed::start(TestbedSpec {
        topo: star(n + a.long, 100_000_000, 150_000),
        faults: vec![],
        seed: 1,
        host: HostSetup {
            sysctls: vec![("net.ipv4.tcp_sack".into(), if a.sack { "1" } else { "0" }.into())],
            ..HostSetup::default()
        },
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim: None,
    })
    .expect("testbed");
    let hosts: Vec<HostNs> = tb.hosts().to_vec();
    let dir = std::env::temp_dir().join(format!("tracks-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let agents: Vec<Child> = if a.agent {
        hosts[1..]
            .iter()
            .map(|h| start_agent(h, &dir, &a.backend, a.sack, ""))
            .collect()
    } else {
        Vec::new()
    };
    let to = SocketAddr::V4(SocketAddrV4::new(hosts[0].ips[0], PORT));
    let total = n * a.rounds;
    let bytes = a.bytes;
    let recv = hosts[0].clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let server = thread::spawn(move || {
        recv.enter().unwrap();
        let l = TcpListener::bind(to).unwrap();
        tx.send(()).unwrap();
        let mut workers = Vec::new();
        for _ in 0..total {
            let (mut s, _) = l.accept().unwrap();
            workers.push(thread::spawn(move || {
                let mut buf = vec![0u8; bytes];
                let ok = s.read_exact(&mut buf).is_ok();
                let _ = s.write_all(&[u8::from(ok)]);
            }));
        }
        for w in workers {
            w.join().unwrap();
        }
    });
    rx.recv().unwrap();
    let (stop_long, long_flows) = long_flows(&hosts[0], &hosts[n + 1..]);
    let small = &hosts[1..=n];
    let before: Vec<Netstat> = small.iter().map(|h| h.netstat().unwrap()).collect();
    let barrier = Arc::new(Barrier::new(n));
    let senders: Vec<_> = small
        .iter()
        .cloned()
        .map(|h| {
            let barrier = barrier.clone();
            let rounds = a.rounds;
            thread::spawn(move || {
                h.enter().unwrap();
                let payload = vec![7u8; bytes];
                let mut fcts = Vec::new();
                for _ in 0..rounds {
                    barrier.wait();
                    let t0 = monotonic_ns();
                    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(10)).unwrap();
                    s.write_all(&payload).unwrap();
                    let mut r = [0u8; 1];
                    s.read_exact(&mut r).unwrap();
                    assert_eq!(r[0], 1);
                    fcts.push((monotonic_ns() - t0) as f64 / 1e6);
                    drop(s);
                    barrier.wait();
                    thread::sleep(Duration::from_millis(300));
                }
                fcts
            })
        })
        .collect();
    let mut fcts: Vec<f64> = senders.into_iter().flat_map(|t| t.join().unwrap()).collect();
    server.join().unwrap();
    let after: Vec<Netstat> = small.iter().map(|h| h.netstat().unwrap()).collect();
    stop_long.store(true, std::sync::atomic::Ordering::Relaxed);
    let long_mb: f64 = long_flows.into_iter().map(|t| t.join().unwrap()).sum::<u64>() as f64 / 1e6;
    let reports: Vec<serde_json::Value> = hosts[1..]
        .iter()
        .zip(agents)
        .map(|(h, c)| stop_agent(h, c))
        .collect();
    let injected: u64 = reports
        .iter()
        .filter_map(|r| r["agent"]["injected"].as_u64())
        .sum();
    let recoveries: u64 = reports
        .iter()
        .filter_map(|r| r["shim"]["tracks_recoveries"].as_u64())
        .sum();
    // Every shim counter summed over the senders' agents.
    let mut shim = std::collections::BTreeMap::<String, u64>::new();
    for r in &reports {
        if let Some(m) = r["shim"].as_object() {
            for (k, v) in m {
                *shim.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
            }
        }
    }
    let fabric = tb.stop().unwrap();
    let drops: u64 = fabric.ports.iter().map(|p| p.counters.dropped_overflow).sum();
    fcts.sort_by(f64::total_cmp);
    let over = fcts.iter().filter(|&&f| f > 100.0).count();
    println!(
        "{}",
        serde_json::json!({
            "senders": n, "long": a.long, "long_mb": long_mb, "rounds": a.rounds, "bytes": bytes, "sack": a.sack,
            "agent": a.agent, "backend": a.backend,
            "flows": fcts.len(),
            "fct_ms": {"p50": pct(&fcts, 500), "p99": pct(&fcts, 990), "max": pct(&fcts, 1000)},
            "over_100ms": over,
            "queue_drops": drops,
            "TCPTimeouts": sum(&before, &after, "TcpExt.TCPTimeouts"),
            "TCPRenoRecovery": sum(&before, &after, "TcpExt.TCPRenoRecovery"),
            "TCPSackRecovery": sum(&before, &after, "TcpExt.TCPSackRecovery"),
            "TCPLossProbes": sum(&before, &after, "TcpExt.TCPLossProbes"),
            "agent_injected": injected,
            "agent_recoveries": recoveries,
            "shim": shim,
        })
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn pingpong(a: &Args) {
    let tb = Testbed::start(TestbedSpec {
        topo: star(1, 1_000_000_000, 1_000_000),
        faults: vec![],
        seed: 1,
        host: HostSetup::default(),
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim: None,
    })
    .expect("testbed");
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let dir = std::env::temp_dir().join(format!("tracks-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // gamma = inf: the kernel would otherwise stop queueing the connection after 100 KB.
    let agent = a
        .agent
        .then(|| start_agent(&h1, &dir, &a.backend, false, "gamma = \"inf\"\n"));
    let to = SocketAddr::V4(SocketAddrV4::new(h0.ips[0], PORT));
    let count = a.count;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = thread::spawn(move || {
        h0.enter().unwrap();
        let l = TcpListener::bind(to).unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut b = [0u8; 1];
        for _ in 0..count {
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
        }
    });
    rx.recv().unwrap();
    let mut rtts = h1
        .run(|| {
            let mut s = TcpStream::connect(to).unwrap();
            s.set_nodelay(true).unwrap();
            let mut b = [1u8; 1];
            let mut v = Vec::with_capacity(count);
            for _ in 0..count {
                let t0 = monotonic_ns();
                s.write_all(&b).unwrap();
                s.read_exact(&mut b).unwrap();
                v.push((monotonic_ns() - t0) as f64 / 1e3);
            }
            v
        })
        .unwrap();
    server.join().unwrap();
    if let Some(c) = agent {
        stop_agent(&h1, c);
    }
    tb.stop().unwrap();
    rtts.sort_by(f64::total_cmp);
    println!(
        "{}",
        serde_json::json!({"agent": a.agent, "backend": a.backend, "round_trips": count,
            "rtt_us": {"p50": pct(&rtts, 500), "p90": pct(&rtts, 900), "p99": pct(&rtts, 990)}})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match a.mode.as_str() {
        "incast" => incast(&a),
        "pingpong" => pingpong(&a),
        m => {
            eprintln!("unknown mode {m}");
            std::process::exit(2);
        }
    }
}
