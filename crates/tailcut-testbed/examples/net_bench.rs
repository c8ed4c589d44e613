//! RPC latency of every tailcut-net scheme beside kernel TCP through the testbed (`docs/net.md`,
//! "Through the testbed"): two hosts on a leaf-spine fabric with four spines (four equal-cost paths),
//! without loss and with 1% loss on one of the four paths, closed-loop echo calls, latency seen by
//! the calling thread. Each row runs RUNS times, each run on a testbed of its own, and gives the
//! median [min-max] over the runs of each figure; the last line of each path gives the fabric's
//! lateness p99 (how late it forwarded: none of these runs keeps the testbed's timing on a 2-core
//! machine). Needs root (namespaces, TUN). A benchmark, not a test. `NB_ONLY=SCHEME` runs one
//! runtime scheme alone (`cloudburst`, `raptorq`, `tcp`, ...; the other rows print zeros); each
//! testbed's ports (largest queue, packets sent, TUN write drops) go to stderr. A call that timed
//! out counts as infinite latency (`inf`).
//!
//!   cargo run --release -p tailcut-testbed --example net_bench -- [CALLS] [RUNS]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use tailcut_net::cli::{echo_framed, framed_call};
use tailcut_net::tls::TlsConfig;
use tailcut_net::{Client, NetConfig, Server};
use tailcut_proto::stats::sample_percentile;
use tailcut_proto::units::Rate;
use tailcut_proto::Dur;
use tailcut_sim::fault::{Direction, FaultConfig, LinkRef};
use tailcut_sim::net::link::LossConfig;
use tailcut_sim::topo::{self, LeafSpine, SwitchQueues};
use tailcut_sys::clock::monotonic_ns;
use tailcut_testbed::fabric::LoopConfig;
use tailcut_testbed::{HostSetup, Testbed, TestbedSpec};

/// Connections (kernel TCP) or clients (tailcut's TCP) the single-path stacks spread calls over, so
/// that some of them hash onto the lossy path as a fleet's would.
const SINGLE_PATH_CONNECTIONS: usize = 8;
const SIZES: [usize; 3] = [100, 10_000, 100_000];

fn testbed(lossy: bool) -> Testbed {
    let topo = topo::build(
        &topo::TopologyConfig::LeafSpine(LeafSpine {
            leaves: 2,
            spines: 4,
            hosts_per_leaf: 1,
            host_rate: Rate(1_000_000_000),
            fabric_rate: Some(Rate(1_000_000_000)),
            oversubscription: None,
            link_delay: Dur::from_micros(10),
        }),
        &SwitchQueues::default(),
    )
    .expect("topology");
    let loss = FaultConfig::Loss {
        link: LinkRef {
            between: ["leaf0".into(), "spine0".into()],
            index: 0,
        },
        direction: Direction::Both,
        model: LossConfig::Bernoulli { p: 0.01 },
        at: Dur::ZERO,
        until: None,
    };
    Testbed::start(TestbedSpec {
        topo,
        faults: if lossy { vec![loss] } else { vec![] },
        seed: 7,
        host: HostSetup::default(),
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim: None,
    })
    .expect("testbed starts (root, namespaces, TUN)")
}

/// The scheme as an experiment entry would give it: 4 paths (CloudBurst LINK_CAP at the fabric's
/// 1 Gbit/s), 4 sub-flows; DCQUIC with a throwaway certificate, one path.
fn config(scheme: &str) -> NetConfig {
    let (name, params) = match scheme {
        "cloudburst" => ("cloudburst", serde_json::json!({"paths": 4, "nic_rate": "1Gbps"})),
        "raptorq" => (
            "cloudburst",
            serde_json::json!({"paths": 4, "nic_rate": "1Gbps", "codec": "raptorq"}),
        ),
        "mptcp" | "fuso" => (scheme, serde_json::json!({"subflows": 4})),
        _ => (scheme, serde_json::json!({})),
    };
    let mut cfg = NetConfig::default().scheme_json(name, params).unwrap();
    if name == "dcquic" {
        let (tls, _) = TlsConfig::generate(&[cfg.tls.server_name.clone()]).expect("certificate");
        cfg.tls = TlsConfig {
            alpn: std::mem::take(&mut cfg.tls.alpn),
            ..tls
        };
    }
    cfg
}

/// p50 / p99 / p99.9 in microseconds; `u64::MAX` is a call that never completed (infinite).
fn quantiles(mut ns: Vec<u64>) -> (f64, f64, f64) {
    ns.sort_unstable();
    let us = |v: u64| match v {
        u64::MAX => f64::INFINITY,
        v => v as f64 / 1e3,
    };
    let q = |per_mille| sample_percentile(&ns, per_mille).map_or(f64::NAN, us);
    (q(500), q(990), q(999))
}

fn kernel_tcp(tb: &Testbed, size: usize, calls: usize) -> Vec<u64> {
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let at: SocketAddr = (h1.ips[0], 7100).into();
    let listener = h1.run(move || TcpListener::bind(at)).unwrap().expect("listen");
    let server = thread::spawn(move || {
        let mut echoes = Vec::new();
        for _ in 0..SINGLE_PATH_CONNECTIONS {
            let Ok((s, _)) = listener.accept() else { break };
            echoes.push(thread::spawn(move || echo_framed(s)));
        }
        for e in echoes {
            let _ = e.join();
        }
    });
    let lat = h0
        .run(move || {
            let mut conns: Vec<TcpStream> = (0..SINGLE_PATH_CONNECTIONS)
                .map(|_| {
                    let s = TcpStream::connect(at).expect("connect");
                    s.set_nodelay(true).unwrap();
                    s
                })
                .collect();
            let req = vec![7u8; size];
            let mut back = vec![0u8; size];
            let mut lat = Vec::with_capacity(calls);
            for i in 0..calls {
                let s = &mut conns[i % SINGLE_PATH_CONNECTIONS];
                let t = monotonic_ns();
                framed_call(s, &req, &mut back).expect("kernel TCP call");
                lat.push(monotonic_ns() - t);
            }
            lat
        })
        .unwrap();
    server.join().unwrap();
    lat
}

fn runtime(tb: &Testbed, scheme: &str, size: usize, calls: usize) -> Vec<u64> {
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let at: SocketAddr = (h1.ips[0], 0).into();
    let cfg = config(scheme);
    let scfg = cfg.clone();
    let server = h1
        .run(move || Server::bind(at, scfg, |r: &[u8], o: &mut Vec<u8>| o.extend_from_slice(r)))
        .unwrap()
        .expect("server");
    let to = server.local_addr();
    let clients = if scheme == "tcp" {
        SINGLE_PATH_CONNECTIONS
    } else {
        1
    };
    let lat = h0
        .run(move || {
            let cs: Vec<Client> = (0..clients)
                .map(|k| {
                    Client::connect(
                        to,
                        NetConfig {
                            seed: k as u64 + 1,
                            ..cfg.clone()
                        },
                    )
                    .expect("client")
                })
                .collect();
            let req = vec![7u8; size];
            let mut lat = Vec::with_capacity(calls);
            for i in 0..calls {
                let t = monotonic_ns();
                // A call that timed out never completed: infinite latency, as `tailcut-net bench`
                // counts it, not the time it took to give up.
                match cs[i % clients].call(&req) {
                    Ok(r) => {
                        assert_eq!(r.bytes, req);
                        lat.push(monotonic_ns() - t);
                    }
                    Err(e) => {
                        eprintln!("{scheme:?} {size} B call {i}: {e}");
                        lat.push(u64::MAX);
                    }
                }
            }
            lat
        })
        .unwrap();
    let _ = server.shutdown();
    lat
}

/// The stacks of a row: (label, runtime scheme or None for kernel TCP).
const STACKS: [(&str, Option<&str>); 7] = [
    ("kernel TCP, 8 connections", None),
    ("tcp over UDP, 8 clients", Some("tcp")),
    ("mptcp, 4 sub-flows", Some("mptcp")),
    ("fuso, 4 sub-flows", Some("fuso")),
    ("cloudburst, 4 paths", Some("cloudburst")),
    ("cloudburst RaptorQ, 4 paths", Some("raptorq")),
    ("dcquic", Some("dcquic")),
];

/// One figure's median [min-max] over the runs.
fn spread(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let m = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    format!("{m:.1} [{:.1}-{:.1}]", v[0], v[v.len() - 1])
}

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (calls, runs) = (arg(1, 500), arg(2, 5).max(1));
    println!("| Path | Size | Stack | p50 us | p99 us | p99.9 us |");
    println!("|---|---|---|---|---|---|");
    for lossy in [false, true] {
        let path = if lossy {
            "1% loss on 1 of 4 paths"
        } else {
            "no loss"
        };
        // [size][stack] -> per run (p50, p99, p99.9).
        let mut got = vec![vec![Vec::new(); STACKS.len()]; SIZES.len()];
        let mut late = Vec::new();
        for _ in 0..runs {
            let tb = testbed(lossy);
            for (k, &size) in SIZES.iter().enumerate() {
                for (j, (_, scheme)) in STACKS.iter().enumerate() {
                    if std::env::var("NB_ONLY").is_ok_and(|o| Some(o.as_str()) != *scheme) {
                        got[k][j].push((0.0, 0.0, 0.0));
                        continue;
                    }
                    let lat = match scheme {
                        None => kernel_tcp(&tb, size, calls),
                        Some(s) => runtime(&tb, s, size, calls),
                    };
                    got[k][j].push(quantiles(lat));
                }
            }
            let report = tb.stop().expect("stop");
            for p in &report.ports {
                eprintln!(
                    "port {} {}->{}: max occupancy {} B, tx {} pkts, tun write drops {}",
                    p.port,
                    p.node,
                    p.peer,
                    p.counters.max_occupancy_bytes,
                    p.counters.tx_packets,
                    p.tun_write_drops
                );
            }
            let p99 = report.ports.iter().map(|p| p.lateness.p99_ns).max().unwrap_or(0);
            late.push(p99 as f64 / 1e3);
            eprintln!("{path}: fabric dropped {}", report.total_dropped());
        }
        for (k, size) in SIZES.iter().enumerate() {
            for (j, (name, _)) in STACKS.iter().enumerate() {
                let q = &got[k][j];
                let col = |f: fn(&(f64, f64, f64)) -> f64| spread(q.iter().map(f).collect());
                println!(
                    "| {path} | {size} B | {name} | {} | {} | {} |",
                    col(|x| x.0),
                    col(|x| x.1),
                    col(|x| x.2)
                );
            }
        }
        println!(
            "| {path} | | fabric lateness p99, us (worst port) | {} | | |",
            spread(late)
        );
    }
}
