//! RPC latency of every tailcut-net scheme beside kernel TCP through the testbed (`docs/net.md`,
//! "Through the testbed"): two hosts on a leaf-spine fabric with four spines (four equal-cost paths),
//! without loss and with 1% loss on one of the four paths, closed-loop echo calls, latency seen by
//! the calling thread. Needs root (namespaces, TUN). A benchmark, not a test.
//!
//!   cargo run --release -p tailcut-testbed --example net_bench -- [CALLS]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use tailcut_net::cli::{echo_framed, framed_call};
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
/// 1 Gbit/s), 4 sub-flows.
fn config(scheme: &str) -> NetConfig {
    let params = match scheme {
        "cloudburst" => serde_json::json!({"paths": 4, "nic_rate": "1Gbps"}),
        "mptcp" | "fuso" => serde_json::json!({"subflows": 4}),
        _ => serde_json::json!({}),
    };
    NetConfig::default().scheme_json(scheme, params).unwrap()
}

/// p50 / p99 / p99.9 in microseconds.
fn quantiles(mut ns: Vec<u64>) -> (f64, f64, f64) {
    ns.sort_unstable();
    let q = |per_mille| sample_percentile(&ns, per_mille).map_or(f64::NAN, |v| v as f64 / 1e3);
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
                match cs[i % clients].call(&req) {
                    Ok(r) => assert_eq!(r.bytes, req),
                    Err(e) => eprintln!("{scheme:?} {size} B call {i}: {e}"),
                }
                lat.push(monotonic_ns() - t);
            }
            lat
        })
        .unwrap();
    let _ = server.shutdown();
    lat
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    println!("| Path | Size | Stack | p50 us | p99 us | p99.9 us |");
    println!("|---|---|---|---|---|---|");
    for lossy in [false, true] {
        let tb = testbed(lossy);
        let path = if lossy {
            "1% loss on 1 of 4 paths"
        } else {
            "no loss"
        };
        for size in SIZES {
            let mut rows: Vec<(&str, Vec<u64>)> =
                vec![("kernel TCP, 8 connections", kernel_tcp(&tb, size, calls))];
            for (name, s) in [
                ("tcp over UDP, 8 clients", "tcp"),
                ("mptcp, 4 sub-flows", "mptcp"),
                ("fuso, 4 sub-flows", "fuso"),
                ("cloudburst, 4 paths", "cloudburst"),
            ] {
                if s == "cloudburst" && size > 92_000 {
                    continue; // one block of 64 x 1448 B (docs/net.md)
                }
                rows.push((name, runtime(&tb, s, size, calls)));
            }
            for (name, lat) in rows {
                let (a, b, c) = quantiles(lat);
                println!("| {path} | {size} B | {name} | {a:.1} | {b:.1} | {c:.1} |");
            }
        }
        let report = tb.stop().expect("stop");
        eprintln!("{path}: fabric dropped {}", report.total_dropped());
    }
}
