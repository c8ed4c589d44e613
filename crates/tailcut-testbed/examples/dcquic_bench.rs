//! DCQUIC's handshake and RPC latency beside TLS 1.3 over kernel TCP (rustls, the same kind of
//! certificate) through the testbed (`docs/dcquic.md`, "On real sockets"): two hosts on a leaf-spine
//! fabric of 1 Gbit/s links, 10 us per hop, hosts' MTU 9000 (DCQUIC's MPS rule wants jumbo frames)
//! or 1500; closed-loop echo calls on one connection, and calls that each open a new connection (set-up
//! included). Needs root (namespaces, TUN). A benchmark, not a test.
//!
//!   cargo run --release -p tailcut-testbed --example dcquic_bench -- [CALLS] [MTU]

use std::net::{SocketAddr, TcpListener};
use tailcut_net::kernel_tls;
use tailcut_net::tls::TlsConfig;
use tailcut_net::{Client, NetConfig, Server};
use tailcut_proto::stats::sample_percentile;
use tailcut_proto::units::Rate;
use tailcut_proto::Dur;
use tailcut_sim::topo::{self, LeafSpine, SwitchQueues};
use tailcut_sys::clock::monotonic_ns;
use tailcut_testbed::fabric::LoopConfig;
use tailcut_testbed::{HostSetup, Testbed, TestbedSpec};

const SIZES: [usize; 2] = [10_000, 100_000];
const NAME: &str = "tailcut-server";

fn testbed(mtu: u32) -> Testbed {
    let topo = topo::build(
        &topo::TopologyConfig::LeafSpine(LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 1,
            host_rate: Rate(1_000_000_000),
            fabric_rate: Some(Rate(1_000_000_000)),
            oversubscription: None,
            link_delay: Dur::from_micros(10),
        }),
        &SwitchQueues::default(),
    )
    .expect("topology");
    Testbed::start(TestbedSpec {
        topo,
        faults: Vec::new(),
        seed: 7,
        host: HostSetup {
            mtu,
            ..HostSetup::default()
        },
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim: None,
    })
    .expect("testbed starts (root, namespaces, TUN)")
}

/// p50 and p99 in microseconds, as table cells ("-" without samples).
fn quantiles(mut ns: Vec<u64>) -> (String, String) {
    if ns.is_empty() {
        return ("-".into(), "-".into());
    }
    ns.sort_unstable();
    let q = |per_mille| {
        let v = sample_percentile(&ns, per_mille).unwrap_or_default() as f64 / 1e3;
        format!("{v:.1}")
    };
    (q(500), q(990))
}

/// (handshakes, calls) in ns; `fresh`: a new connection per call, its set-up in the call's time.
fn dcquic(
    tb: &Testbed,
    tls: &TlsConfig,
    size: usize,
    calls: usize,
    fresh: bool,
) -> (Vec<u64>, Vec<u64>, u16) {
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let cfg = NetConfig {
        scheme: NetConfig::default()
            .scheme_json("dcquic", serde_json::json!({}))
            .unwrap()
            .scheme,
        tls: tls.clone(),
        ..NetConfig::default()
    };
    let scfg = cfg.clone();
    let at: SocketAddr = (h1.ips[0], 0).into();
    let server = h1
        .run(move || Server::bind(at, scfg, |r: &[u8], o: &mut Vec<u8>| o.extend_from_slice(r)))
        .unwrap()
        .expect("server");
    let to = server.local_addr();
    let out = h0
        .run(move || {
            let req = vec![7u8; size];
            let (mut hs, mut lat, mut mps) = (Vec::new(), Vec::with_capacity(calls), 0);
            let mut warm = None;
            for i in 0..calls + 20 {
                let t = monotonic_ns();
                if fresh || warm.is_none() {
                    warm = Some(Client::connect(to, cfg.clone()).expect("client"));
                }
                let c = warm.as_ref().expect("a client");
                let r = c.call(&req).expect("call");
                let dt = monotonic_ns() - t;
                assert_eq!(r.bytes, req);
                let q = c.stats().dcquic.unwrap_or_default();
                mps = q.mps;
                if i >= 20 {
                    lat.push(dt);
                    if fresh {
                        hs.push(q.handshake_ns);
                    }
                }
                if fresh {
                    warm = None;
                }
            }
            (hs, lat, mps)
        })
        .unwrap();
    let _ = server.shutdown();
    out
}

fn kernel(tb: &Testbed, tls: &TlsConfig, size: usize, calls: usize, fresh: bool) -> (Vec<u64>, Vec<u64>) {
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let any: SocketAddr = (h1.ips[0], 0).into();
    let listener = h1.run(move || TcpListener::bind(any)).unwrap().expect("listen");
    let at = listener.local_addr().expect("bound");
    let scfg = kernel_tls::server_config(tls).expect("server TLS");
    // Serves until the process ends (the listener's namespace goes with the testbed).
    std::thread::spawn(move || kernel_tls::serve_echo(listener, scfg));
    let ccfg = kernel_tls::client_config(tls).expect("client TLS");
    h0.run(move || {
        let req = vec![7u8; size];
        let mut back = vec![0u8; size];
        let (mut hs, mut lat) = (Vec::new(), Vec::with_capacity(calls));
        let mut conn = None;
        for i in 0..calls + 20 {
            let t = monotonic_ns();
            if fresh || conn.is_none() {
                conn = Some(kernel_tls::Conn::connect(at, ccfg.clone(), NAME).expect("connect"));
            }
            let th = monotonic_ns();
            conn.as_mut()
                .expect("a connection")
                .call(&req, &mut back)
                .expect("call");
            let t1 = monotonic_ns();
            assert_eq!(back, req);
            if i >= 20 {
                lat.push(t1 - t);
                if fresh {
                    hs.push(th - t);
                }
            }
            if fresh {
                conn = None;
            }
        }
        (hs, lat)
    })
    .unwrap()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let mtu: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(9000);
    let (tls, _) = TlsConfig::generate(&[NAME.into()]).expect("certificate");
    let tb = testbed(mtu);
    println!("| Size | Stack, mode | handshake p50 us | handshake p99 us | call p50 us | call p99 us |");
    println!("|---|---|---|---|---|---|");
    for size in SIZES {
        for fresh in [false, true] {
            let mode = if fresh { "fresh connection" } else { "persistent" };
            let (hs, lat, mps) = dcquic(&tb, &tls, size, calls, fresh);
            let ((h50, h99), (c50, c99)) = (quantiles(hs), quantiles(lat));
            println!("| {size} B | DCQUIC (MPS {mps} B), {mode} | {h50} | {h99} | {c50} | {c99} |");
            let (hs, lat) = kernel(&tb, &tls, size, calls, fresh);
            let ((h50, h99), (c50, c99)) = (quantiles(hs), quantiles(lat));
            println!("| {size} B | kernel TCP + TLS 1.3, {mode} | {h50} | {h99} | {c50} | {c99} |");
        }
    }
    let report = tb.stop().expect("stop");
    eprintln!("MTU {mtu}: fabric dropped {}", report.total_dropped());
}
