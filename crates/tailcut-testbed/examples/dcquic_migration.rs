//! DCQUIC's migration experiment (Sec. 4.3, Fig. 7) on the testbed: real Linux hosts in network
//! namespaces through the emulated fabric, the testbed twin of `experiments/dcquic/migration.toml`.
//!
//! Clients with two NICs (the first via switch sw2, the second via sw3, both reaching the server's
//! switch sw0; `experiments/dcquic/migration_topo.toml`) call one server: 100 KB request, 100 KB
//! response, Poisson arrivals of 100/s per client for 8 s, then a drain period. From 2 s to 4 s the
//! link sw2 -> sw0 adds 100 ms; from 5 s to 7 s it loses every packet (both directions). Schemes:
//! - DCQUIC (tailcut-net, W = 50, w = 10, alpha = 2), which migrates to its second NIC by itself;
//! - kernel TCP with application-level reconnection (the simulator's `dctcp_reconnect`): one
//!   persistent connection carries the calls in order; after `RECONNECT_AFTER` without progress on
//!   an outstanding call it connects from its other NIC and re-sends every unanswered call there;
//! - kernel TCP that never reconnects (the simulator's `dctcp` row; Linux's default congestion
//!   control here, not DCTCP).
//!
//! Scaled for a 2-core machine: 1 Gbit/s links instead of 10 (delays kept). Needs root (namespaces,
//! TUN). Each scheme gets a fresh testbed.
//!
//!   cargo run --release -p tailcut-testbed --example dcquic_migration -- [SEED] [CLIENTS] [SCHEMES] [CSV]
//!
//! SEED defaults to 1, CLIENTS (1 to 3) to 1, SCHEMES (comma-separated: dcquic, tcp-reconnect, tcp)
//! to all three. With CSV, every call's arrival and task completion time also go to that file (the
//! data of Fig. 7's time series).

use socket2::{Domain, SockAddr, SockRef, Socket, Type};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle, Scope};
use std::time::Duration;
use tailcut_net::cli::echo_framed;
use tailcut_net::tls::TlsConfig;
use tailcut_net::{Client, NetConfig, PathAddrs, Server};
use tailcut_proto::rng::{derive_seed, mix64, Stream};
use tailcut_proto::stats::percentile;
use tailcut_proto::Dur;
use tailcut_sim::fault::{Direction, FaultConfig, LinkRef};
use tailcut_sim::net::link::LossConfig;
use tailcut_sim::topo::{self, File, SwitchQueues, TopoSpec, TopologyConfig};
use tailcut_sys::clock::monotonic_ns;
use tailcut_testbed::fabric::LoopConfig;
use tailcut_testbed::{FabricReport, HostNs, HostSetup, Testbed, TestbedSpec};

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
const LINK_BPS: u64 = 1_000_000_000;
const MSG_BYTES: usize = 100_000;
const RATE_PER_CLIENT: f64 = 100.0;
const ARRIVALS_UNTIL: u64 = 8 * S;
/// The simulator stops at 10 s; the testbed waits longer so that kernel TCP's RTO backoff after the
/// loss epoch (its next retransmission may come up to ~1.6 s after the path heals) and the backlog
/// behind it can finish inside the window instead of being cut off.
const DRAIN: u64 = 4 * S;
const RECONNECT_AFTER: u64 = S;
/// Head start between the last client being ready and the first arrival, so that no client thread
/// is still waking up when the schedule begins.
const START_SLACK: u64 = 200 * MS;
const KERNEL_PORT: u16 = 7300;
const SERVER_NAME: &str = "tailcut-server";
const MAX_CLIENTS: usize = 3;
const PHASES: [(&str, u64, u64); 5] = [
    ("normal [0,2) s", 0, 2 * S),
    ("+100 ms [2,4) s", 2 * S, 4 * S),
    ("between [4,5) s", 4 * S, 5 * S),
    ("100% loss [5,7) s", 5 * S, 7 * S),
    ("after [7,8) s", 7 * S, 8 * S),
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dcquic,
    TcpReconnect,
    Tcp,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Dcquic => "DCQUIC (tailcut-net)",
            Kind::TcpReconnect => "kernel TCP, reconnecting",
            Kind::Tcp => "kernel TCP, never reconnects",
        }
    }

    fn parse(s: &str) -> Result<Kind, String> {
        match s {
            "dcquic" => Ok(Kind::Dcquic),
            "tcp-reconnect" => Ok(Kind::TcpReconnect),
            "tcp" => Ok(Kind::Tcp),
            _ => Err(format!("unknown scheme '{s}' (dcquic, tcp-reconnect, tcp)")),
        }
    }
}

/// What one client saw.
#[derive(Default)]
struct ClientOutcome {
    /// Per call, in arrival order: its task completion time, `None` if unanswered at the deadline.
    tct: Vec<Option<u64>>,
    /// Migrations or reconnections, with their time from the start of arrivals.
    moves: Vec<(u64, String)>,
    /// Things that went wrong without stopping the run (failed calls, bad echoes).
    problems: Vec<String>,
    /// How late the scheduler issued its latest call: the client machine's own lag.
    issue_late_max: u64,
    /// Per call: how late it was issued (in the CSV, to tell a stalled client from a slow path).
    issue_late: Vec<u64>,
    /// Scheme counters worth a line (handshakes, final path).
    note: String,
}

/// How well the fabric kept up during one scheme's run.
struct FabricHealth {
    lateness_p50: u64,
    lateness_p99: u64,
    lateness_max: u64,
    /// Drops at full buffers or AQM: congestion, not the fault.
    queue_drops: u64,
    /// Drops the loss fault made.
    fault_drops: u64,
    /// Packets the fabric could not write to a host's TUN, or the kernel could not queue to it.
    tun_drops: u64,
    /// Datagrams and segments the hosts' kernels dropped at full socket buffers: losses the fabric
    /// does not see (a UDP receiver descheduled while a 1 Gbit/s burst arrives).
    socket_drops: u64,
}

struct SchemeRun {
    kind: Kind,
    /// Per client, per call: (arrival from the start, TCT).
    calls: Vec<Vec<(u64, Option<u64>)>>,
    clients: Vec<ClientOutcome>,
    fabric: FabricHealth,
    wall: u64,
}

fn main() {
    let started = monotonic_ns();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (seed, clients, kinds, csv) = match parse_args(&args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("dcquic_migration: {e}\nusage: dcquic_migration [SEED] [CLIENTS 1-3] [SCHEMES] [CSV]");
            std::process::exit(2);
        }
    };
    let arrivals: Vec<Vec<u64>> = (0..clients).map(|c| poisson_arrivals(seed, c)).collect();
    let mut runs = Vec::new();
    for &kind in &kinds {
        eprintln!("dcquic_migration: running {} ...", kind.label());
        match run_scheme(kind, seed, &arrivals) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("dcquic_migration: {}: {e}", kind.label());
                std::process::exit(1);
            }
        }
    }
    print_tables(seed, clients, &runs);
    if let Some(path) = csv {
        if let Err(e) = write_csv(&path, &runs) {
            eprintln!("dcquic_migration: {path}: {e}");
            std::process::exit(1);
        }
    }
    println!(
        "\nWall time of the whole run: {:.1} s.",
        (monotonic_ns() - started) as f64 / S as f64
    );
}

fn parse_args(args: &[String]) -> Result<(u64, usize, Vec<Kind>, Option<String>), String> {
    let seed = match args.first() {
        Some(a) => a.parse().map_err(|_| format!("SEED: '{a}' is not an integer"))?,
        None => 1,
    };
    let clients = match args.get(1) {
        Some(a) => a
            .parse()
            .map_err(|_| format!("CLIENTS: '{a}' is not an integer"))?,
        None => 1,
    };
    if !(1..=MAX_CLIENTS).contains(&clients) {
        return Err(format!(
            "CLIENTS: the topology has {MAX_CLIENTS} clients, got {clients}"
        ));
    }
    let kinds = match args.get(2) {
        Some(a) => a.split(',').map(Kind::parse).collect::<Result<Vec<_>, _>>()?,
        None => vec![Kind::Dcquic, Kind::TcpReconnect, Kind::Tcp],
    };
    if args.len() > 4 {
        return Err(format!("unexpected argument '{}'", args[4]));
    }
    Ok((seed, clients, kinds, args.get(3).cloned()))
}

/// Offsets from the start of a client's Poisson arrivals until `ARRIVALS_UNTIL`; the same for every
/// scheme so that they answer the same calls.
fn poisson_arrivals(seed: u64, client: usize) -> Vec<u64> {
    let base = derive_seed(seed, Stream::Workload, client as u64);
    let mut out = Vec::new();
    let mut t = 0.0;
    for k in 0u64.. {
        let u = (mix64(base.wrapping_add(k)) >> 11) as f64 / (1u64 << 53) as f64;
        t += -(1.0 - u).ln() / RATE_PER_CLIENT;
        let at = (t * S as f64) as u64;
        if at >= ARRIVALS_UNTIL {
            break;
        }
        out.push(at);
    }
    out
}

/// Call `i`'s request: distinct per call, so a response answering the wrong call is caught.
fn request(i: usize) -> Vec<u8> {
    let mut r: Vec<u8> = (0..MSG_BYTES).map(|k| (k * 7 + i * 13) as u8).collect();
    r[..8].copy_from_slice(&(i as u64).to_le_bytes());
    r
}

fn topology() -> Result<TopoSpec, String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/dcquic/migration_topo.toml"
    );
    let mut spec = topo::build(
        &TopologyConfig::File(File { path: path.into() }),
        &SwitchQueues::default(),
    )
    .map_err(|e| format!("topology: {e}"))?;
    for l in &mut spec.links {
        l.rate_bps = LINK_BPS;
    }
    Ok(spec)
}

fn sw2_sw0() -> LinkRef {
    LinkRef {
        between: ["sw2".into(), "sw0".into()],
        index: 0,
    }
}

/// Runs `ip` with `args` inside `host`'s namespace.
fn ip(host: &HostNs, args: &[&str]) -> Result<(), String> {
    let out = host
        .run(|| Command::new("ip").args(args).output())
        .and_then(|r| r)
        .map_err(|e| format!("{}: cannot run ip {}: {e}", host.name, args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "{}: ip {} failed: {}",
            host.name,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// The testbed gives each NIC only its plane's connected route (NIC k on 10.(k+1)/16), which is
/// enough when both ends have a NIC on every plane. Here the server has one NIC, so its replies to a
/// client's second address need a route, and a client's packets from its second address must leave
/// by its second NIC (as the simulator's do) rather than by the connected route to the server's
/// plane, which goes out of the first NIC and through the faulty link.
fn add_routes(srv: &HostNs, clients: &[HostNs]) -> Result<(), String> {
    ip(srv, &["route", "add", "10.0.0.0/8", "dev", "tc0"])?;
    for c in clients {
        let second = c.ips[1].to_string();
        ip(c, &["rule", "add", "from", &second, "lookup", "101"])?;
        ip(c, &["route", "add", "10.0.0.0/8", "dev", "tc1", "table", "101"])?;
    }
    Ok(())
}

fn run_scheme(kind: Kind, seed: u64, arrivals: &[Vec<u64>]) -> Result<SchemeRun, String> {
    let wall_start = monotonic_ns();
    let tb = Testbed::start(TestbedSpec {
        topo: topology()?,
        faults: Vec::new(),
        seed,
        host: HostSetup {
            // Replies reach a client's second NIC from the server's plane, for which the main table
            // names the first NIC: strict reverse-path filtering would drop them.
            sysctls: vec![
                ("net.ipv4.conf.all.rp_filter".into(), "0".into()),
                ("net.ipv4.conf.default.rp_filter".into(), "0".into()),
            ],
            // Jumbo frames, as DCQUIC's MPS rule assumes and the simulator's links carry.
            mtu: 9000,
            ..HostSetup::default()
        },
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim: None,
    })
    .map_err(|e| e.to_string())?;
    let srv = tb.host("srv").ok_or("topology has no host 'srv'")?.clone();
    let hosts: Vec<HostNs> = (0..arrivals.len())
        .map(|c| {
            tb.host(&format!("c{}", c + 1))
                .cloned()
                .ok_or_else(|| format!("topology has no host 'c{}'", c + 1))
        })
        .collect::<Result<_, _>>()?;
    add_routes(&srv, &hosts)?;

    let outcome = match kind {
        Kind::Dcquic => run_dcquic(&tb, &srv, &hosts, arrivals),
        Kind::TcpReconnect | Kind::Tcp => {
            run_kernel_tcp(&tb, &srv, &hosts, arrivals, kind == Kind::TcpReconnect)
        }
    };
    let kernel_tun_drops: u64 = tb
        .hosts()
        .iter()
        .filter_map(|h| h.tun_tx_drops().ok())
        .flatten()
        .sum();
    let socket_drops: u64 = tb
        .hosts()
        .iter()
        .filter_map(|h| h.netstat().ok())
        .map(|n| {
            n.get("Udp.RcvbufErrors")
                + n.get("Udp.SndbufErrors")
                + n.get("TcpExt.TCPRcvQDrop")
                + n.get("TcpExt.TCPBacklogDrop")
        })
        .sum();
    let report = tb.stop().map_err(|e| format!("stopping the fabric: {e}"))?;
    let rj = &report.rejects;
    eprintln!(
        "  fabric: {} packets read from the hosts, {} rejected (unknown destination {}, no route {}, \
         malformed {}, other protocol {})",
        rj.packets_read,
        rj.unknown_dst + rj.no_route + rj.malformed + rj.other_protocol + rj.fragment,
        rj.unknown_dst,
        rj.no_route,
        rj.malformed,
        rj.other_protocol
    );
    let clients = outcome?;
    let calls = arrivals
        .iter()
        .zip(&clients)
        .map(|(a, o)| a.iter().copied().zip(o.tct.iter().copied()).collect())
        .collect();
    Ok(SchemeRun {
        kind,
        calls,
        clients,
        fabric: health(&report, kernel_tun_drops, socket_drops),
        wall: monotonic_ns() - wall_start,
    })
}

fn health(r: &FabricReport, kernel_tun_drops: u64, socket_drops: u64) -> FabricHealth {
    let c = |f: fn(&tailcut_testbed::report::PortReport) -> u64| r.ports.iter().map(f).sum::<u64>();
    FabricHealth {
        lateness_p50: r.lateness.p50_ns,
        lateness_p99: r.lateness.p99_ns,
        lateness_max: r.lateness.max_ns,
        queue_drops: c(|p| p.counters.dropped_overflow + p.counters.dropped_aqm) + r.rejects.no_route,
        fault_drops: c(|p| p.counters.dropped_link_loss + p.counters.dropped_link_down),
        tun_drops: c(|p| p.tun_write_drops) + kernel_tun_drops,
        socket_drops,
    }
}

/// Applies the two faults at their times from `t0` (the first arrival's reference); `fault_now`
/// counts from its call, so each is sent when it starts.
fn apply_faults(tb: &Testbed, t0: u64) -> Result<(), String> {
    sleep_until(t0 + 2 * S);
    tb.fault_now(&FaultConfig::Delay {
        link: sw2_sw0(),
        direction: Direction::Forward,
        extra: Dur::from_millis(100),
        at: Dur::ZERO,
        until: Some(Dur::from_millis(2_000)),
    })
    .map_err(|e| e.to_string())?;
    sleep_until(t0 + 5 * S);
    tb.fault_now(&FaultConfig::Loss {
        link: sw2_sw0(),
        direction: Direction::Both,
        model: LossConfig::Bernoulli { p: 1.0 },
        at: Dur::ZERO,
        until: Some(Dur::from_millis(2_000)),
    })
    .map_err(|e| e.to_string())
}

fn sleep_until(t: u64) {
    let now = monotonic_ns();
    if t > now {
        thread::sleep(Duration::from_nanos(t - now));
    }
}

/// Client threads: each reports ready (or why not) and waits for the common start time; when any
/// fails to get ready, dropping the start senders sends every other home.
struct StartGate {
    ready: Sender<Result<(), String>>,
    start: Receiver<u64>,
}

impl StartGate {
    fn wait(self, ready: Result<(), String>) -> Option<u64> {
        let StartGate { ready: tx, start } = self;
        let ok = ready.is_ok();
        let _ = tx.send(ready);
        // Dropped before waiting, so that a client lost before reporting makes `recv` fail at the
        // orchestrator instead of blocking it.
        drop(tx);
        if ok {
            start.recv().ok()
        } else {
            None
        }
    }
}

/// Starts `n` client threads through `spawn_client`, releases them together once all are ready,
/// applies the faults on the calling thread and collects the outcomes.
fn orchestrate<'s>(
    tb: &Testbed,
    n: usize,
    mut spawn_client: impl FnMut(usize, StartGate) -> thread::ScopedJoinHandle<'s, Result<ClientOutcome, String>>,
) -> Result<Vec<ClientOutcome>, String> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut starts = Vec::new();
    let mut handles = Vec::new();
    for c in 0..n {
        let (start_tx, start_rx) = mpsc::channel();
        starts.push(start_tx);
        handles.push(spawn_client(
            c,
            StartGate {
                ready: ready_tx.clone(),
                start: start_rx,
            },
        ));
    }
    drop(ready_tx);
    let mut setup = Ok(());
    for _ in 0..n {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => setup = Err(e),
            Err(_) => setup = Err("a client thread ended before it was ready".into()),
        }
        if setup.is_err() {
            break;
        }
    }
    let faults = match setup {
        Ok(()) => {
            let t0 = monotonic_ns() + START_SLACK;
            for tx in &starts {
                let _ = tx.send(t0);
            }
            apply_faults(tb, t0)
        }
        Err(e) => Err(e),
    };
    drop(starts);
    let mut out = Vec::new();
    let mut first_err = faults.err();
    for h in handles {
        match h.join() {
            Ok(Ok(o)) => out.push(o),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert("a client thread panicked".into());
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

// ---------------------------------------------------------------------------------------------
// DCQUIC

fn run_dcquic(
    tb: &Testbed,
    srv: &HostNs,
    hosts: &[HostNs],
    arrivals: &[Vec<u64>],
) -> Result<Vec<ClientOutcome>, String> {
    let (tls, _) = TlsConfig::generate(&[SERVER_NAME.into()])?;
    let mut cfg = NetConfig {
        // The paper's rule, stated here rather than inherited so that a changed default shows.
        scheme: NetConfig::default()
            .scheme_json(
                "dcquic",
                serde_json::json!({"migration": {"enabled": true, "long_window": 50, "short_window": 10, "alpha": 2.0}}),
            )
            .map_err(|e| e.to_string())?
            .scheme,
        tls,
        // A call is at most ARRIVALS_UNTIL + DRAIN old at the deadline: none is abandoned before it,
        // and one still stuck after it ends (as unfinished) without holding the run for long.
        stream_call_timeout: Dur::from_nanos(ARRIVALS_UNTIL + DRAIN),
        dcquic_task_bytes: MSG_BYTES as u64,
        ..NetConfig::default()
    };
    cfg.tls.server_name = SERVER_NAME.into();
    let scfg = cfg.clone();
    let any: SocketAddr = (Ipv4Addr::UNSPECIFIED, 0).into();
    let server = srv
        .run(move || Server::bind(any, scfg, |r: &[u8], o: &mut Vec<u8>| o.extend_from_slice(r)))
        .map_err(|e| format!("server thread: {e}"))?
        .map_err(|e| format!("DCQUIC server: {e}"))?;
    let remote: SocketAddr = (srv.ips[0], server.local_addr().port()).into();
    let out = thread::scope(|s| {
        orchestrate(tb, hosts.len(), |c, gate| {
            let host = hosts[c].clone();
            let mut cfg = cfg.clone();
            cfg.seed = c as u64 + 1;
            cfg.path_addrs = host
                .ips
                .iter()
                .map(|&ip| PathAddrs {
                    local: ip.into(),
                    remote,
                })
                .collect();
            let arrivals = &arrivals[c];
            s.spawn(move || {
                host.run(|| dcquic_client(remote, cfg, arrivals, gate))
                    .map_err(|e| format!("c{}: {e}", c + 1))?
            })
        })
    });
    let stats = server.stats();
    let _ = server.shutdown();
    eprintln!(
        "  DCQUIC server: {} requests ({} duplicates), {} associations opened",
        stats.requests, stats.duplicate_requests, stats.associations_opened
    );
    out
}

fn dcquic_client(
    remote: SocketAddr,
    cfg: NetConfig,
    arrivals: &[u64],
    gate: StartGate,
) -> Result<ClientOutcome, String> {
    let client = match Client::connect(remote, cfg) {
        Ok(c) => c,
        Err(e) => {
            let e = format!("DCQUIC client: {e}");
            gate.wait(Err(e.clone()));
            return Err(e);
        }
    };
    // The connection handshakes on its first call: one small call before the first arrival, as the
    // TCP clients connect before theirs. It adds one short RPC to the migration rule's window of 50.
    let warm = vec![1u8; 1_000];
    match client.call(&warm) {
        Ok(r) if r.bytes == warm => {}
        Ok(_) | Err(_) => {
            let e = "DCQUIC warm-up call failed (no handshake?)".to_string();
            gate.wait(Err(e.clone()));
            return Err(e);
        }
    }
    let Some(t0) = gate.wait(Ok(())) else {
        return Ok(ClientOutcome::default());
    };
    let deadline = t0 + ARRIVALS_UNTIL + DRAIN;
    let done: Mutex<Vec<Option<u64>>> = Mutex::new(vec![None; arrivals.len()]);
    let problems = Mutex::new(Vec::new());
    let mut out = ClientOutcome::default();
    let client = &client;
    thread::scope(|s| {
        // Migration times: the runtime publishes its counters every loop, so polling finds each
        // migration within a couple of milliseconds.
        let watcher = s.spawn(move || {
            let mut seen = (0, 0);
            let mut moves = Vec::new();
            while monotonic_ns() < deadline {
                if let Some(d) = client.stats().dcquic {
                    if (d.migrations, d.path) != seen {
                        let t = monotonic_ns().saturating_sub(t0);
                        moves.push((t, format!("migration #{} to NIC {}", d.migrations, d.path)));
                        seen = (d.migrations, d.path);
                    }
                }
                thread::sleep(Duration::from_millis(2));
            }
            moves
        });
        for (i, &at) in arrivals.iter().enumerate() {
            sleep_until(t0 + at);
            let late = monotonic_ns().saturating_sub(t0 + at);
            out.issue_late_max = out.issue_late_max.max(late);
            out.issue_late.push(late);
            let (done, problems) = (&done, &problems);
            // A thread per call: calls overlap as open-loop arrivals do, and a slow call delays no
            // other call's start.
            s.spawn(move || {
                let req = request(i);
                let r = client.call(&req);
                let end = monotonic_ns();
                match r {
                    Ok(reply) if reply.bytes == req => {
                        if end <= deadline {
                            lock(done)[i] = Some(end - (t0 + at));
                        }
                    }
                    Ok(_) => lock(problems).push(format!("call {i}: wrong response")),
                    Err(e) => lock(problems).push(format!("call {i}: {e}")),
                }
            });
        }
        out.moves = watcher.join().unwrap_or_default();
    });
    let st = client.stats();
    if let Some(d) = st.dcquic {
        out.note = format!(
            "{} handshake(s), {} reconnect(s), ended on NIC {}, {} packets declared lost, MPS {} B",
            d.handshakes, d.reconnects, d.path, d.lost_packets, d.mps
        );
    }
    out.tct = lock(&done).clone();
    out.problems = std::mem::take(&mut *lock(&problems));
    Ok(out)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Kernel TCP

/// The framed echo server, a thread per connection. Stopping it shuts every connection down, also
/// the ones a reconnecting client abandoned while their packets were being lost.
struct EchoServer {
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl EchoServer {
    fn start(srv: &HostNs) -> Result<EchoServer, String> {
        let at: SocketAddr = (srv.ips[0], KERNEL_PORT).into();
        let listener = srv
            .run(move || TcpListener::bind(at))
            .and_then(|r| r)
            .map_err(|e| format!("kernel TCP server on {at}: {e}"))?;
        // Polled rather than blocking, so that stopping needs no connection to wake accept().
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("kernel TCP server: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let (stop2, conns2) = (stop.clone(), conns.clone());
        let acceptor = thread::spawn(move || {
            let mut echoes = Vec::new();
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let _ = s.set_nonblocking(false);
                        if let Ok(c) = s.try_clone() {
                            lock(&conns2).push(c);
                        }
                        echoes.push(thread::spawn(move || echo_framed(s)));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(2))
                    }
                    Err(e) => {
                        eprintln!("  kernel TCP server: accept: {e}");
                        thread::sleep(Duration::from_millis(2));
                    }
                }
            }
            echoes
        });
        Ok(EchoServer {
            stop,
            conns,
            acceptor: Some(acceptor),
        })
    }

    /// Connections the server accepted (the first one plus one per reconnection).
    fn stop(&mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let echoes = self
            .acceptor
            .take()
            .map(|a| a.join().unwrap_or_default())
            .unwrap_or_default();
        let conns = std::mem::take(&mut *lock(&self.conns));
        for c in &conns {
            let _ = c.shutdown(Shutdown::Both);
        }
        for e in echoes {
            let _ = e.join();
        }
        conns.len()
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        if self.acceptor.is_some() {
            self.stop();
        }
    }
}

fn run_kernel_tcp(
    tb: &Testbed,
    srv: &HostNs,
    hosts: &[HostNs],
    arrivals: &[Vec<u64>],
    reconnect: bool,
) -> Result<Vec<ClientOutcome>, String> {
    let mut server = EchoServer::start(srv)?;
    let to: SocketAddr = (srv.ips[0], KERNEL_PORT).into();
    let out = thread::scope(|s| {
        orchestrate(tb, hosts.len(), |c, gate| {
            let host = hosts[c].clone();
            let arrivals = &arrivals[c];
            s.spawn(move || {
                let ips = host.ips.clone();
                host.run(|| tcp_client(to, &ips, arrivals, reconnect, gate))
                    .map_err(|e| format!("c{}: {e}", c + 1))?
            })
        })
    });
    let accepted = server.stop();
    eprintln!("  kernel TCP server: {accepted} connection(s) accepted");
    out
}

/// A connection from local address `from` to `to`, with Nagle off (a framed call's last segment
/// must not wait for an ACK).
fn connect_from(from: Ipv4Addr, to: SocketAddr) -> io::Result<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SockAddr::from(SocketAddr::from((from, 0))))?;
    s.set_tcp_nodelay(true)?;
    s.connect_timeout(&SockAddr::from(to), Duration::from_secs(2))?;
    Ok(s.into())
}

/// Drops a connection for good: shutting it down wakes the threads blocked on it, and a zero linger
/// makes the last close reset it instead of leaving its unsent requests to be retransmitted.
fn abandon(s: &TcpStream) {
    let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
    let _ = s.shutdown(Shutdown::Both);
}

/// The reconnecting client's state, shared by its scheduler, writer, readers and monitor.
struct TcpState {
    /// Unanswered calls, in the order they were issued (and are answered: one connection, in order).
    outstanding: VecDeque<usize>,
    /// How many of `outstanding` went onto the current connection.
    written: usize,
    /// Connection generation; a reader of an older one is stale.
    gen: u64,
    conn: Option<TcpStream>,
    nic: usize,
    /// Last response byte, or when the outstanding list became non-empty, or the last reconnection.
    last_progress: u64,
    /// Per call: when its response completed.
    done_at: Vec<Option<u64>>,
    stop: bool,
    moves: Vec<(u64, String)>,
    problems: Vec<String>,
}

struct TcpShared {
    st: Mutex<TcpState>,
    cv: Condvar,
}

impl TcpShared {
    fn lock(&self) -> MutexGuard<'_, TcpState> {
        lock(&self.st)
    }

    fn wait<'a>(&self, g: MutexGuard<'a, TcpState>) -> MutexGuard<'a, TcpState> {
        self.cv.wait(g).unwrap_or_else(|e| e.into_inner())
    }
}

fn tcp_client(
    to: SocketAddr,
    ips: &[Ipv4Addr],
    arrivals: &[u64],
    reconnect: bool,
    gate: StartGate,
) -> Result<ClientOutcome, String> {
    let first = match connect_from(ips[0], to) {
        Ok(s) => s,
        Err(e) => {
            let e = format!("kernel TCP connect from {} to {to}: {e}", ips[0]);
            gate.wait(Err(e.clone()));
            return Err(e);
        }
    };
    let reader0 = first.try_clone().map_err(|e| e.to_string())?;
    let Some(t0) = gate.wait(Ok(())) else {
        abandon(&first);
        return Ok(ClientOutcome::default());
    };
    let deadline = t0 + ARRIVALS_UNTIL + DRAIN;
    let sh = TcpShared {
        st: Mutex::new(TcpState {
            outstanding: VecDeque::new(),
            written: 0,
            gen: 0,
            conn: Some(first),
            nic: 0,
            last_progress: t0,
            done_at: vec![None; arrivals.len()],
            stop: false,
            moves: Vec::new(),
            problems: Vec::new(),
        }),
        cv: Condvar::new(),
    };
    let sh = &sh;
    let mut issue_late = Vec::with_capacity(arrivals.len());
    thread::scope(|s| {
        s.spawn(move || tcp_reader(sh, 0, reader0));
        s.spawn(move || tcp_writer(sh));
        s.spawn(move || tcp_monitor(s, sh, to, ips, t0, deadline, reconnect));
        for (i, &at) in arrivals.iter().enumerate() {
            sleep_until(t0 + at);
            let now = monotonic_ns();
            issue_late.push(now.saturating_sub(t0 + at));
            let mut g = sh.lock();
            // As the simulator's model: the no-progress clock starts when a call finds none pending.
            if g.outstanding.is_empty() {
                g.last_progress = now;
            }
            g.outstanding.push_back(i);
            sh.cv.notify_all();
        }
    });
    let mut g = sh.lock();
    let tct = arrivals
        .iter()
        .zip(&g.done_at)
        .map(|(&at, d)| d.filter(|&e| e <= deadline).map(|e| e.saturating_sub(t0 + at)))
        .collect();
    Ok(ClientOutcome {
        tct,
        moves: std::mem::take(&mut g.moves),
        problems: std::mem::take(&mut g.problems),
        issue_late_max: issue_late.iter().copied().max().unwrap_or(0),
        issue_late,
        note: format!("ended on NIC {}", g.nic),
    })
}

/// Writes the calls in order onto the current connection; after a reconnection starts over from the
/// first unanswered call.
fn tcp_writer(sh: &TcpShared) {
    let mut conn: Option<(u64, TcpStream)> = None;
    loop {
        let (gen, idx) = {
            let mut g = sh.lock();
            loop {
                if g.stop {
                    return;
                }
                if g.written < g.outstanding.len() && g.conn.is_some() {
                    break;
                }
                g = sh.wait(g);
            }
            if conn.as_ref().is_none_or(|c| c.0 != g.gen) {
                match g.conn.as_ref().map(TcpStream::try_clone) {
                    Some(Ok(c)) => conn = Some((g.gen, c)),
                    Some(Err(e)) => {
                        g.problems.push(format!("writer: {e}"));
                        return;
                    }
                    None => continue,
                }
            }
            let idx = g.outstanding[g.written];
            g.written += 1;
            (g.gen, idx)
        };
        let mut frame = Vec::with_capacity(4 + MSG_BYTES);
        frame.extend_from_slice(&(MSG_BYTES as u32).to_be_bytes());
        frame.extend_from_slice(&request(idx));
        let Some((_, s)) = conn.as_mut() else { return };
        if s.write_all(&frame).is_err() {
            // Shut down by a reconnection or the end of the run: wait for either.
            let mut g = sh.lock();
            while !g.stop && g.gen == gen {
                g = sh.wait(g);
            }
        }
    }
}

/// Reads framed responses of connection `gen`; each answers the oldest unanswered call.
fn tcp_reader(sh: &TcpShared, gen: u64, mut s: TcpStream) {
    let mut len = [0u8; 4];
    let mut body = Vec::new();
    loop {
        if read_tracked(sh, gen, &mut s, &mut len).is_err() {
            return;
        }
        body.resize(u32::from_be_bytes(len) as usize, 0);
        if read_tracked(sh, gen, &mut s, &mut body).is_err() {
            return;
        }
        let now = monotonic_ns();
        let mut g = sh.lock();
        if g.gen != gen {
            return;
        }
        let Some(idx) = g.outstanding.pop_front() else {
            g.problems.push("a response with no call outstanding".into());
            return;
        };
        g.written = g.written.saturating_sub(1);
        if body != request(idx) {
            g.problems.push(format!("call {idx}: wrong response"));
        }
        g.done_at[idx] = Some(now);
        sh.cv.notify_all();
    }
}

/// Fills `buf`, counting every byte that arrives as progress of connection `gen`; fails once the
/// connection is closed or no longer the current one.
fn read_tracked(sh: &TcpShared, gen: u64, s: &mut TcpStream, buf: &mut [u8]) -> io::Result<()> {
    let mut off = 0;
    while off < buf.len() {
        let n = s.read(&mut buf[off..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        off += n;
        let mut g = sh.lock();
        if g.gen != gen {
            return Err(io::ErrorKind::ConnectionAborted.into());
        }
        g.last_progress = monotonic_ns();
    }
    Ok(())
}

/// Ends the run at `deadline` and, when `reconnect`, applies the simulator's rule: with a call
/// outstanding and no progress for `RECONNECT_AFTER`, connect from the next NIC and resend every
/// unanswered call there. Progress is what the application sees: response bytes (the simulator also
/// counts ACKs of requests, which a kernel socket does not show; with echo-sized responses that
/// stream back as requests arrive, the two agree except on the first RTTs of a new call).
fn tcp_monitor<'s>(
    s: &'s Scope<'s, '_>,
    sh: &'s TcpShared,
    to: SocketAddr,
    ips: &'s [Ipv4Addr],
    t0: u64,
    deadline: u64,
    reconnect: bool,
) {
    loop {
        thread::sleep(Duration::from_millis(2));
        let now = monotonic_ns();
        let mut g = sh.lock();
        if now >= deadline {
            g.stop = true;
            if let Some(c) = g.conn.take() {
                abandon(&c);
            }
            sh.cv.notify_all();
            return;
        }
        if !(reconnect
            && ips.len() > 1
            && !g.outstanding.is_empty()
            && now >= g.last_progress + RECONNECT_AFTER)
        {
            continue;
        }
        let nic = (g.nic + 1) % ips.len();
        let pending = g.outstanding.len();
        drop(g);
        let fresh = connect_from(ips[nic], to).and_then(|c| c.try_clone().map(|r| (c, r)));
        let mut g = sh.lock();
        g.nic = nic;
        g.last_progress = monotonic_ns();
        let t = now.saturating_sub(t0);
        match fresh {
            Ok((c, r)) => {
                g.gen += 1;
                g.written = 0;
                if let Some(old) = g.conn.replace(c) {
                    abandon(&old);
                }
                g.moves
                    .push((t, format!("reconnect to NIC {nic}, {pending} call(s) resent")));
                let gen = g.gen;
                sh.cv.notify_all();
                drop(g);
                s.spawn(move || tcp_reader(sh, gen, r));
            }
            Err(e) => g.moves.push((t, format!("reconnect from NIC {nic} failed: {e}"))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Results

/// Task completion times of a set of calls: the finished ones sorted, and how many did not finish.
struct Tcts {
    finished: Vec<u64>,
    unfinished: usize,
}

impl Tcts {
    fn of<'a>(calls: impl Iterator<Item = &'a (u64, Option<u64>)>) -> Tcts {
        let mut finished = Vec::new();
        let mut unfinished = 0;
        for c in calls {
            match c.1 {
                Some(t) => finished.push(t),
                None => unfinished += 1,
            }
        }
        finished.sort_unstable();
        Tcts { finished, unfinished }
    }

    fn issued(&self) -> usize {
        self.finished.len() + self.unfinished
    }

    /// The `per_mille` percentile over every issued call by `docs/metrics.md`'s rule, an unfinished
    /// call infinitely late: `None` when it falls on an unfinished call (or without calls).
    fn quantile(&self, per_mille: u64) -> Option<u64> {
        let p = percentile(&self.finished, self.unfinished as u64, per_mille);
        p.is_finite().then_some(p as u64)
    }

    fn mean(&self) -> String {
        if self.finished.is_empty() {
            return "-".into();
        }
        let m = self.finished.iter().sum::<u64>() as f64 / self.finished.len() as f64;
        if self.unfinished > 0 {
            format!("{} (finished only)", ms(m as u64))
        } else {
            ms(m as u64)
        }
    }

    fn q(&self, per_mille: u64) -> String {
        match (self.issued(), self.quantile(per_mille)) {
            (0, _) => "-".into(),
            (_, Some(t)) => ms(t),
            (_, None) => "unfinished".into(),
        }
    }
}

/// One line per call: scheme, client, call, arrival (ns from the start), how late the client issued
/// it (ns), TCT (ns; empty if unfinished).
fn write_csv(path: &str, runs: &[SchemeRun]) -> io::Result<()> {
    let mut t = String::from("scheme,client,call,arrival_ns,issue_late_ns,tct_ns\n");
    for r in runs {
        for (c, (calls, o)) in r.calls.iter().zip(&r.clients).enumerate() {
            for (i, (at, tct)) in calls.iter().enumerate() {
                let late = o.issue_late.get(i).copied().unwrap_or(0);
                let tct = tct.map_or(String::new(), |d| d.to_string());
                t += &format!("{:?},c{},{i},{at},{late},{tct}\n", r.kind, c + 1);
            }
        }
    }
    std::fs::write(path, t)
}

fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / MS as f64)
}

fn secs(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / S as f64)
}

fn print_tables(seed: u64, clients: usize, runs: &[SchemeRun]) {
    println!(
        "## DCQUIC migration on the testbed (seed {seed}, {clients} client(s), 1 Gbit/s links, \
         100 KB request + 100 KB response, Poisson {RATE_PER_CLIENT}/s per client for 8 s, drain {} s)\n",
        DRAIN / S
    );
    println!("Task completion time (arrival to response) in ms; an unfinished call counts as longer than any finished one.\n");
    println!("| scheme | RPCs issued | completed | unfinished | mean | p50 | p95 | p99 | max | migrations / reconnections |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in runs {
        let all = Tcts::of(r.calls.iter().flatten());
        let moves: usize = r.clients.iter().map(|c| c.moves.len()).sum();
        let what = match r.kind {
            Kind::Dcquic => "migration",
            Kind::TcpReconnect => "reconnection",
            Kind::Tcp => "",
        };
        let moves = if r.kind == Kind::Tcp {
            "- (never reconnects)".to_string()
        } else {
            format!("{moves} {what}(s)")
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.kind.label(),
            all.issued(),
            all.finished.len(),
            all.unfinished,
            all.mean(),
            all.q(500),
            all.q(950),
            all.q(990),
            all.q(1000),
            moves
        );
    }

    println!("\n### Per phase (by arrival time)\n");
    println!("| scheme | phase | issued | completed | unfinished | mean | p99 |");
    println!("|---|---|---|---|---|---|---|");
    for r in runs {
        for (name, from, until) in PHASES {
            let t = Tcts::of(r.calls.iter().flatten().filter(|c| (from..until).contains(&c.0)));
            println!(
                "| {} | {name} | {} | {} | {} | {} | {} |",
                r.kind.label(),
                t.issued(),
                t.finished.len(),
                t.unfinished,
                t.mean(),
                t.q(990)
            );
        }
    }

    println!("\n### Migrations and reconnections (time from the first arrival)\n");
    println!("| scheme | client | events | notes |");
    println!("|---|---|---|---|");
    for r in runs {
        for (c, o) in r.clients.iter().enumerate() {
            let events = if o.moves.is_empty() {
                "none".to_string()
            } else {
                o.moves
                    .iter()
                    .map(|(t, what)| format!("{}: {what}", secs(*t)))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            let mut notes = vec![o.note.clone()];
            if !o.problems.is_empty() {
                notes.push(format!(
                    "{} problem(s), first: {}",
                    o.problems.len(),
                    o.problems[0]
                ));
            }
            println!(
                "| {} | c{} | {events} | {} |",
                r.kind.label(),
                c + 1,
                notes.join("; ")
            );
        }
    }

    println!("\n### Did the testbed keep up?\n");
    println!(
        "| scheme | fabric lateness p50 / p99 / max (us) | queue drops | fault drops | TUN drops | \
         host socket-buffer drops | latest call issue (us) | wall time |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in runs {
        let f = &r.fabric;
        let late = r.clients.iter().map(|c| c.issue_late_max).max().unwrap_or(0);
        println!(
            "| {} | {:.1} / {:.1} / {:.1} | {} | {} | {} | {} | {:.1} | {:.1} s |",
            r.kind.label(),
            f.lateness_p50 as f64 / 1e3,
            f.lateness_p99 as f64 / 1e3,
            f.lateness_max as f64 / 1e3,
            f.queue_drops,
            f.fault_drops,
            f.tun_drops,
            f.socket_drops,
            late as f64 / 1e3,
            r.wall as f64 / S as f64
        );
    }
}
