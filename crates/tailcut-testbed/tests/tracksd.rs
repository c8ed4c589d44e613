//! The T-RACKs agent (`tailcut-tracksd`) against real Linux TCP: two testbed hosts (anonymous namespaces with TUN NICs) through
//! the emulated fabric, the agent running in the sender's namespace, and a deterministic tail loss made
//! by an iptables rule in the receiver's namespace that drops the last 10 segments of every request on
//! their first transmission (by the connection's byte count, so retransmissions pass).
//!
//! The tests need root, namespaces, TUN and iptables; without namespaces or TUN they skip unless
//! `TAILCUT_REQUIRE_REALNET=1` (CI), and a missing iptables is always a failure (CI installs it).
//! They assert kernel counters and bytes, never timings. Everything they create lives in namespaces
//! held by this process and its children, which die with it.
//!
//! They live here, not in tailcut-tracksd, because they need the testbed, which depends on
//! tailcut-tracksd; the agent is started as `tailcut-testbed tracksd CONFIG.toml`, the same
//! `tailcut_tracksd::cli::run` as the `tailcut-tracksd` binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;
use tailcut_proto::Dur;
use tailcut_sim::net::aqm::AqmConfig;
use tailcut_sim::topo::{LinkSpec, NodeKind, NodeSpec, PortQueueSpec, TopoSpec};
use tailcut_testbed::fabric::LoopConfig;
use tailcut_testbed::netstat::Netstat;
use tailcut_testbed::{probe, HostNs, HostSetup, Testbed, TestbedSpec};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn realnet(test: &str) -> Option<MutexGuard<'static, ()>> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !probe::should_run(test) {
        return None;
    }
    let ok = Command::new("iptables")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "{test}: iptables is needed (apt-get install iptables)");
    Some(guard)
}

/// Request size and port: 46 segments of at most 1448 B (MSS 1460 less the timestamps option).
const REQ: usize = 65_536;
const PORT: u16 = 7000;
const FLOWS: usize = 8;

/// The receiver's drop window, in bytes the client sent on the connection (IP packets, headers
/// included, as conntrack counts them): SYN 60 B, handshake ACK 52 B, then data segments of 1500 B
/// (20 IP + 32 TCP + 1448) and a last one of 428 B. Segments 37..=46 fall in
/// [112 + 36 * 1500 + 1, 112 + 45 * 1500 + 428]; their retransmissions count beyond it and pass.
const DROP_FROM: u64 = 112 + 36 * 1500 + 1;
const DROP_TO: u64 = 112 + 45 * 1500 + 428;

fn node(name: &str, kind: NodeKind) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        kind,
    }
}

/// h0 (sender, agent) and h1 (receiver) through one switch at 100 Mbit/s.
fn two_hosts() -> TopoSpec {
    let link = |a, b| LinkSpec {
        a,
        b,
        rate_bps: 100_000_000,
        delay: Dur::from_micros(20),
        buffer_a: 16_000_000,
        buffer_b: 1_000_000,
        aqm_a: PortQueueSpec::default(),
        aqm_b: PortQueueSpec {
            aqm: AqmConfig::DropTail,
            ..Default::default()
        },
        tier: 0,
    };
    TopoSpec {
        nodes: vec![
            node("h0", NodeKind::Host),
            node("h1", NodeKind::Host),
            node("sw0", NodeKind::Switch),
        ],
        links: vec![link(0, 2), link(1, 2)],
        host_rack: vec![0, 0],
        host_tsq: tailcut_sim::topo::HostTsq::Fixed(0),
    }
}

fn start(sack: bool) -> Testbed {
    start_with(sack, None)
}

/// The two hosts, with `shim` at every NIC of the emulated fabric (as the simulator runs it).
fn start_with(sack: bool, shim: Option<tailcut_proto::tracks::TracksConfig>) -> Testbed {
    let sack = if sack { "1" } else { "0" };
    Testbed::start(TestbedSpec {
        topo: two_hosts(),
        faults: vec![],
        seed: 7,
        host: HostSetup {
            sysctls: vec![("net.ipv4.tcp_sack".into(), sack.into())],
            ..HostSetup::default()
        },
        loop_cfg: LoopConfig::default(),
        capture: None,
        shim,
    })
    .expect("testbed starts")
}

/// The two hosts with SACK off, and a fresh folder for the agent's configuration named after `tag`.
fn sack_off_hosts(tag: &str) -> (Testbed, HostNs, HostNs, std::path::PathBuf) {
    let tb = start(false);
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    let dir = std::env::temp_dir().join(format!("tracksd-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    (tb, h0, h1, dir)
}

/// Runs a command inside `h` and panics with its stderr if it fails.
fn sh(h: &HostNs, args: &[&str]) -> String {
    let out = h
        .spawn(
            Command::new(args[0])
                .args(&args[1..])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .and_then(Child::wait_with_output)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The receiver drops the tail of each request once, and ACKs at once (no delayed ACK), so that the
/// only thing between a lost tail and its recovery is the sender's choice of fast retransmit or RTO.
fn install_tail_drop(h1: &HostNs, h0_ip: Ipv4Addr) {
    drop_request_tails(h1, "iptables", "tc0", DROP_FROM, DROP_TO);
    sh(
        h1,
        &[
            "ip",
            "route",
            "add",
            &format!("{h0_ip}/32"),
            "dev",
            "tc0",
            "quickack",
            "1",
        ],
    );
}

/// `prog` (iptables or ip6tables) in `h` drops the segments arriving on `dev` for [`PORT`] while
/// the connection's byte count (the client's direction) is in `from..=to`.
fn drop_request_tails(h: &HostNs, prog: &str, dev: &str, from: u64, to: u64) {
    let range = format!("{from}:{to}");
    let port = PORT.to_string();
    sh(
        h,
        &[
            prog,
            "-w",
            "-A",
            "INPUT",
            "-i",
            dev,
            "-p",
            "tcp",
            "--dport",
            &port,
            "-m",
            "connbytes",
            "--connbytes",
            &range,
            "--connbytes-dir",
            "original",
            "--connbytes-mode",
            "bytes",
            "-j",
            "DROP",
        ],
    );
}

/// Packets the receiver's tail-drop rule dropped.
fn tail_drops(h1: &HostNs) -> u64 {
    let out = sh(h1, &["iptables", "-w", "-L", "INPUT", "-v", "-n", "-x"]);
    out.lines()
        .filter(|l| l.contains("connbytes"))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Deterministic request bytes.
fn request(i: usize) -> Vec<u8> {
    (0..REQ).map(|k| (k.wrapping_mul(31) ^ i) as u8).collect()
}

/// A server in h1 that checks each request byte for byte and answers with one byte (1 = intact).
fn serve(h1: &HostNs, flows: usize) -> thread::JoinHandle<usize> {
    serve_at(h1, SocketAddr::V4(SocketAddrV4::new(h1.ips[0], PORT)), flows)
}

/// [`serve`] on address `to` of h1.
fn serve_at(h1: &HostNs, to: SocketAddr, flows: usize) -> thread::JoinHandle<usize> {
    let h1 = h1.clone();
    let (tx, rx) = mpsc::channel();
    let server = thread::spawn(move || {
        h1.enter().unwrap();
        let l = TcpListener::bind(to).unwrap();
        tx.send(()).unwrap();
        let mut intact = 0;
        for i in 0..flows {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut got = vec![0u8; REQ];
            let ok = s.read_exact(&mut got).is_ok() && got == request(i);
            intact += usize::from(ok);
            s.write_all(&[u8::from(ok)]).unwrap();
        }
        intact
    });
    rx.recv().unwrap();
    server
}

/// `flows` sequential requests from h0, each on a fresh connection, waiting for the reply.
fn requests(h0: &HostNs, h1_ip: Ipv4Addr, flows: usize) {
    requests_to(h0, SocketAddr::V4(SocketAddrV4::new(h1_ip, PORT)), flows);
}

/// [`requests`] to address `to`.
fn requests_to(h0: &HostNs, to: SocketAddr, flows: usize) {
    h0.run(|| {
        for i in 0..flows {
            let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(30)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            s.write_all(&request(i)).unwrap();
            let mut r = [0u8; 1];
            s.read_exact(&mut r).unwrap();
            assert_eq!(r[0], 1, "flow {i}: the server saw corrupted bytes");
        }
    })
    .unwrap();
}

/// The senders' minimum RTO where a test asserts that no RTO fired because the agent (or the shim)
/// acted first: 5 s instead of Linux's 200 ms. With 200 ms, "no RTO" also needed the agent's process
/// (or the emulator thread) never to be descheduled for ~180 ms between a tail loss and its spoofed
/// ACKs, which a loaded 2-CPU machine does not promise; with 5 s only an agent that never acted
/// lets an RTO fire. The runs without the agent, and with SACK on, keep the kernel's 200 ms (there
/// tails may wait for it).
const SLOW_RTO_US: u64 = 5_000_000;

/// Sets `net.ipv4.tcp_rto_min_us` (all of the namespace's TCP, IPv6 too) in `h` to [`SLOW_RTO_US`].
fn slow_rto(h: &HostNs) {
    let path = "/proc/sys/net/ipv4/tcp_rto_min_us";
    // The entered thread's /proc/sys/net is its namespace's.
    h.run(|| std::fs::write(path, SLOW_RTO_US.to_string()))
        .unwrap()
        .unwrap();
    let set = h.run(|| std::fs::read_to_string(path)).unwrap().unwrap();
    assert_eq!(
        set.trim(),
        SLOW_RTO_US.to_string(),
        "tcp_rto_min_us in {}",
        h.name
    );
}

/// The namespace's minimum RTO (`net.ipv4.tcp_rto_min_us`), as the agent's `min_rto`.
fn rto_min_of(h: &HostNs) -> String {
    let us = h
        .run(|| std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rto_min_us"))
        .unwrap()
        .unwrap();
    format!("{}us", us.trim())
}

/// A running agent and its counter lines.
struct RunningAgent {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

/// Starts the agent (NFQUEUE backend) in h0 on its NIC and waits for its "ready" line (queue bound,
/// rules installed).
/// beta is fixed at 20 ms: far below the min RTO (200 ms, or [`SLOW_RTO_US`]), and above the stalls
/// a loaded machine usually adds, which would otherwise start spurious recoveries whose
/// retransmissions shift the receiver's byte counts, and so its drop window. The agent's `min_rto` is
/// the namespace's.
fn start_agent(h0: &HostNs, dir: &std::path::Path, sack: bool) -> RunningAgent {
    start_agent_with(h0, dir, sack, NFQUEUE, "")
}

const NFQUEUE: &str = "nfqueue";
const BPF: &str = "bpf";

/// [`start_agent`] with a backend (`nfqueue` or `bpf`) and extra `[tracks]` lines.
fn start_agent_with(
    h0: &HostNs,
    dir: &std::path::Path,
    sack: bool,
    backend: &str,
    extra: &str,
) -> RunningAgent {
    start_agent_on(h0, "tc0", dir, sack, backend, extra)
}

/// [`start_agent_with`] on NIC `interface`.
fn start_agent_on(
    h0: &HostNs,
    interface: &str,
    dir: &std::path::Path,
    sack: bool,
    backend: &str,
    extra: &str,
) -> RunningAgent {
    let cfg = dir.join("tracksd.toml");
    let min_rto = rto_min_of(h0);
    // `extra` may set its own beta (TOML forbids a key twice).
    let beta = if extra.contains("fixed_beta") {
        ""
    } else {
        "fixed_beta = \"20ms\"\n"
    };
    std::fs::write(
        &cfg,
        format!(
            "interface = \"{interface}\"\nbackend = \"{backend}\"\nqueue = 3\nsack = {sack}\nreport_every = \"100ms\"\n\
             [tracks]\n{beta}gamma = \"inf\"\nmin_rto = \"{min_rto}\"\nmax_flows = 1024\n{extra}"
        ),
    )
    .unwrap();
    let mut child = h0
        .spawn(
            // The agent's command line as the `tailcut-tracksd` binary runs it (`tailcut_tracksd::cli`).
            Command::new(env!("CARGO_BIN_EXE_tailcut-testbed"))
                .arg("tracksd")
                .arg(&cfg)
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )
        .expect("agent starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    if out.read_line(&mut first).is_err() || !first.contains("\"ready\"") {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the agent did not start: {first:?}");
    }
    RunningAgent { child, out }
}

/// Stops the agent with SIGTERM and returns its last counter line.
fn stop_agent(h0: &HostNs, mut agent: RunningAgent) -> serde_json::Value {
    sh(h0, &["kill", "-TERM", &agent.child.id().to_string()]);
    let status = agent.child.wait().unwrap();
    assert!(status.success(), "agent exit: {status}");
    let last = agent
        .out
        .lines()
        .map_while(Result::ok)
        .last()
        .expect("a counter line");
    serde_json::from_str(&last).expect("counters are JSON")
}

fn delta(after: &Netstat, before: &Netstat, key: &str) -> u64 {
    after.get(key) - before.get(key)
}

struct Outcome {
    timeouts: u64,
    reno_recoveries: u64,
    sack_recoveries: u64,
    tail_drops: u64,
    agent: Option<serde_json::Value>,
}

/// FLOWS requests with the tail drop, with or without the agent (NFQUEUE backend).
fn run_case(sack: bool, agent: bool) -> Outcome {
    run_case_with(sack, agent.then_some(NFQUEUE), "")
}

/// FLOWS requests with the tail drop, with the agent on `backend` or without it (`None`).
fn run_case_with(sack: bool, backend: Option<&str>, extra: &str) -> Outcome {
    let agent = backend.is_some();
    let tb = start(sack);
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    install_tail_drop(&h1, h0.ips[0]);
    let dir = std::env::temp_dir().join(format!("tracksd-{}-{sack}-{agent}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Only the SACK-off runs with the agent assert "no RTO"; the SACK-on ones (the fake-block
    // diagnostics above all) recover by RTOs too, which must stay the kernel's 200 ms.
    if agent && !sack {
        slow_rto(&h0);
    }
    let child = backend.map(|b| start_agent_with(&h0, &dir, sack, b, extra));
    let server = serve(&h1, FLOWS);
    let before = h0.netstat().unwrap();
    requests(&h0, h1.ips[0], FLOWS);
    let after = h0.netstat().unwrap();
    assert_eq!(server.join().unwrap(), FLOWS, "every request arrived intact");
    let agent = child.map(|c| stop_agent(&h0, c));
    if agent.is_some() {
        let rules = sh(&h0, &["iptables", "-w", "-S"]);
        assert!(
            !rules.contains("TAILCUT_TRACKS"),
            "the agent removed its rules on SIGTERM:\n{rules}"
        );
    }
    let out = Outcome {
        timeouts: delta(&after, &before, "TcpExt.TCPTimeouts"),
        reno_recoveries: delta(&after, &before, "TcpExt.TCPRenoRecovery"),
        sack_recoveries: delta(&after, &before, "TcpExt.TCPSackRecovery"),
        tail_drops: tail_drops(&h1),
        agent,
    };
    tb.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "sack={sack} agent={}: TCPTimeouts={} TCPRenoRecovery={} TCPSackRecovery={} tail drops={} agent={:?}",
        out.agent.is_some(),
        out.timeouts,
        out.reno_recoveries,
        out.sack_recoveries,
        out.tail_drops,
        out.agent.as_ref().map(|a| a.to_string())
    );
    out
}

/// The same shim at the sender's NIC port inside the testbed's fabric (`[[schemes]] shim` of an
/// experiment file on the testbed), instead of the agent on the host: SACK off, the tails recover by
/// NewReno fast recovery with no RTO, as with the agent. beta is fixed at 20 ms for the reason
/// [`start_agent`] gives: with beta from the ~100 us RTT, a fabric thread descheduled on a loaded
/// machine started spurious recoveries, whose retransmissions moved the receiver's drop window.
#[test]
fn sack_off_tail_losses_recover_with_the_shim_in_the_fabric() {
    let Some(_g) = realnet("sack_off_tail_losses_recover_with_the_shim_in_the_fabric") else {
        return;
    };
    let shim = tailcut_proto::tracks::TracksConfig {
        sack: false,
        min_rto: Dur::from_micros(SLOW_RTO_US),
        fixed_beta: Some(Dur::from_millis(20)),
        ..tailcut_tracksd::config::real_host_tracks()
    };
    let tb = start_with(false, Some(shim));
    let (h0, h1) = (tb.hosts()[0].clone(), tb.hosts()[1].clone());
    slow_rto(&h0);
    install_tail_drop(&h1, h0.ips[0]);
    let server = serve(&h1, FLOWS);
    let before = h0.netstat().unwrap();
    requests(&h0, h1.ips[0], FLOWS);
    let after = h0.netstat().unwrap();
    assert_eq!(server.join().unwrap(), FLOWS, "every request arrived intact");
    let drops = tail_drops(&h1);
    let report = tb.stop().unwrap();
    let shims = report.shims.expect("the fabric ran shims").0;
    eprintln!("fabric shim: {shims:?}");
    assert!(drops >= FLOWS as u64, "the tail drop rule dropped {drops}");
    assert_eq!(
        delta(&after, &before, "TcpExt.TCPTimeouts"),
        0,
        "no RTO: {shims:?}"
    );
    assert!(
        delta(&after, &before, "TcpExt.TCPRenoRecovery") >= FLOWS as u64,
        "{shims:?}"
    );
    assert!(shims["tracks_recoveries"] >= FLOWS as u64, "{shims:?}");
    assert!(shims["agent.injected"] >= 3 * FLOWS as u64, "{shims:?}");
}

/// SACK off: without the agent every lost tail waits for the RTO; with it, the spoofed dupACKs turn
/// every one into NewReno fast recovery and no RTO fires.
#[test]
fn sack_off_tail_losses_recover_by_fast_retransmit_with_the_agent() {
    let Some(_g) = realnet("sack_off_tail_losses_recover_by_fast_retransmit_with_the_agent") else {
        return;
    };
    sack_off_case(NFQUEUE);
}

/// The same with the tc-BPF backend: packets never wait for the agent, and the outcome is the same.
#[test]
fn sack_off_tail_losses_recover_by_fast_retransmit_with_the_bpf_tap() {
    let Some(_g) = realnet("sack_off_tail_losses_recover_by_fast_retransmit_with_the_bpf_tap") else {
        return;
    };
    let agent = sack_off_case(BPF);
    let tap = &agent["tap"];
    assert_eq!(tap["ring_full"], 0, "{agent}");
    assert_eq!(tap["mirror_errors"], 0, "{agent}");
    assert_eq!(agent["tap_missed"], 0, "{agent}");
}

/// Runs FLOWS requests without and with the agent on `backend`, asserts the RTOs became fast
/// retransmits, and returns the agent's last counter line.
fn sack_off_case(backend: &str) -> serde_json::Value {
    let without = run_case(false, false);
    assert!(
        without.tail_drops >= FLOWS as u64 * 10,
        "the tail drop rule dropped {}",
        without.tail_drops
    );
    assert!(
        without.timeouts >= FLOWS as u64,
        "without the agent every tail waits for an RTO: {}",
        without.timeouts
    );
    assert_eq!(without.reno_recoveries, 0);

    let with = run_case_with(false, Some(backend), "");
    let agent = with.agent.unwrap();
    assert!(
        with.tail_drops >= FLOWS as u64,
        "the tail drop rule dropped {}",
        with.tail_drops
    );
    assert_eq!(with.timeouts, 0, "no RTO with the agent (agent: {agent})");
    assert!(
        with.reno_recoveries >= FLOWS as u64,
        "fast recoveries {} (agent: {agent})",
        with.reno_recoveries
    );
    assert!(
        agent["shim"]["tracks_recoveries"].as_u64().unwrap() >= FLOWS as u64,
        "{agent}"
    );
    assert!(
        agent["agent"]["injected"].as_u64().unwrap() >= 3 * FLOWS as u64,
        "{agent}"
    );
    assert_eq!(agent["agent"]["inject_errors"], 0, "{agent}");
    agent
}

/// An echo server in h1 on `port` for one long-lived connection: echoes `rounds` messages of 1000 B.
fn echo(h1: &HostNs, port: u16, rounds: usize) -> thread::JoinHandle<()> {
    let h1 = h1.clone();
    let (tx, rx) = mpsc::channel();
    let to = SocketAddr::V4(SocketAddrV4::new(h1.ips[0], port));
    let server = thread::spawn(move || {
        h1.enter().unwrap();
        let l = TcpListener::bind(to).unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut buf = [0u8; 1000];
        for _ in 0..rounds {
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        }
    });
    rx.recv().unwrap();
    server
}

/// A connection from h0 to the echo server at `to`, after its first round.
fn echo_connection(h0: &HostNs, to: SocketAddr) -> TcpStream {
    let mut s = h0
        .run(|| TcpStream::connect_timeout(&to, Duration::from_secs(30)))
        .unwrap()
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    echo_round(&mut s, 1);
    s
}

fn echo_round(s: &mut TcpStream, tag: u8) {
    let msg = [tag; 1000];
    s.write_all(&msg).unwrap();
    let mut back = [0u8; 1000];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, msg, "echo intact");
}

/// SIGKILL leaves the agent no chance to remove its rules: the queue-bypass must then pass every
/// packet, so an open connection and new connections keep working (losses recovered by the kernel's
/// own RTO), and the next agent removes the stale rules before installing its own.
#[test]
fn a_killed_agent_leaves_every_connection_working() {
    let Some(_g) = realnet("a_killed_agent_leaves_every_connection_working") else {
        return;
    };
    let (tb, h0, h1, dir) = sack_off_hosts("kill");
    install_tail_drop(&h1, h0.ips[0]);
    let mut agent = start_agent(&h0, &dir, false);
    let server = serve(&h1, FLOWS);
    let echo_server = echo(&h1, PORT + 1, 2);
    let echo_to = SocketAddr::V4(SocketAddrV4::new(h1.ips[0], PORT + 1));
    let (killed_tx, killed_rx) = mpsc::channel::<()>();
    let (half_tx, half_rx) = mpsc::channel::<()>();
    let h1_ip = h1.ips[0];
    let client = {
        let h0 = h0.clone();
        thread::spawn(move || {
            let mut long = echo_connection(&h0, echo_to);
            requests(&h0, h1_ip, FLOWS / 2);
            half_tx.send(()).unwrap();
            killed_rx.recv().unwrap();
            echo_round(&mut long, 2);
            // The server numbers requests by arrival; continue its sequence.
            let to = SocketAddr::V4(SocketAddrV4::new(h1_ip, PORT));
            h0.run(|| {
                for i in FLOWS / 2..FLOWS {
                    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(30)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    s.write_all(&request(i)).unwrap();
                    let mut r = [0u8; 1];
                    s.read_exact(&mut r).unwrap();
                    assert_eq!(r[0], 1, "flow {i}: the server saw corrupted bytes");
                }
            })
            .unwrap();
        })
    };
    half_rx.recv().unwrap();
    agent.child.kill().unwrap();
    agent.child.wait().unwrap();
    let rules = sh(&h0, &["iptables", "-w", "-S"]);
    assert!(
        rules.contains("TAILCUT_TRACKS_OUT_3"),
        "a killed agent cannot remove its rules:\n{rules}"
    );
    killed_tx.send(()).unwrap();
    client.join().expect("every connection worked after the kill");
    echo_server.join().unwrap();
    assert_eq!(server.join().unwrap(), FLOWS, "every request arrived intact");

    // A new agent replaces the stale rules (one jump each, not two) and removes them on SIGTERM.
    let agent = start_agent(&h0, &dir, false);
    let jumps = sh(&h0, &["iptables", "-w", "-S"])
        .matches("-j TAILCUT_TRACKS_")
        .count();
    assert_eq!(jumps, 2, "one jump from OUTPUT and one from INPUT");
    stop_agent(&h0, agent);
    assert!(!sh(&h0, &["iptables", "-w", "-S"]).contains("TAILCUT_TRACKS"));
    tb.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tap's programs loaded in the kernel now (bpftool lists programs machine-wide; names are cut
/// at 15 bytes, so both read "tailcut_tracks_").
fn tap_programs() -> usize {
    let out = Command::new("bpftool")
        .args(["-j", "prog", "show"])
        .output()
        .expect("bpftool is needed (apt-get install bpftool)");
    assert!(
        out.status.success(),
        "bpftool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let progs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("bpftool -j prints JSON");
    progs
        .iter()
        .filter(|p| {
            p["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("tailcut_tracks"))
        })
        .count()
}

/// The BPF backend's programs hang on tcx links that only the agent's process holds: SIGKILL
/// detaches them and the kernel frees them, so nothing is left on the NIC, an open connection keeps
/// working, and new ones too.
#[test]
fn a_killed_bpf_agent_leaves_nothing_attached() {
    let Some(_g) = realnet("a_killed_bpf_agent_leaves_nothing_attached") else {
        return;
    };
    let (tb, h0, h1, dir) = sack_off_hosts("bpf-kill");
    let before = tap_programs();
    let mut agent = start_agent_with(&h0, &dir, false, BPF, "");
    assert_eq!(tap_programs(), before + 2, "egress and ingress programs loaded");
    let echo_server = echo(&h1, PORT + 1, 2);
    let echo_to = SocketAddr::V4(SocketAddrV4::new(h1.ips[0], PORT + 1));
    let mut long = echo_connection(&h0, echo_to);
    agent.child.kill().unwrap();
    agent.child.wait().unwrap();
    // The last reference goes with the process's files; the kernel may free the programs a moment
    // after the exit (deferred work), so wait for it, up to 10 s.
    let freed = (0..100).any(|_| {
        let done = tap_programs() == before;
        if !done {
            thread::sleep(Duration::from_millis(100));
        }
        done
    });
    assert!(freed, "the kernel freed the killed agent's programs");
    echo_round(&mut long, 2);
    echo_server.join().unwrap();
    let server = serve(&h1, FLOWS);
    requests(&h0, h1.ips[0], FLOWS);
    assert_eq!(server.join().unwrap(), FLOWS, "every request arrived intact");
    tb.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// SACK on (Linux's default, with RACK and tail loss probes): the agent must do no harm. With its
/// real-host defaults it tracks SACK flows but never spoofs for them, never drops a packet, and
/// Linux's own SACK recovery handles the tails. The fake-block strategies are run too and their
/// counters printed: they are the measurement behind that default (docs/tracks.md), not asserted,
/// since they document the kernel's reneging handling.
#[test]
fn sack_on_the_agent_does_no_harm() {
    let Some(_g) = realnet("sack_on_the_agent_does_no_harm") else {
        return;
    };
    let without = run_case(true, false);
    let with = run_case(true, true);
    let agent = with.agent.unwrap();
    assert!(
        without.tail_drops >= FLOWS as u64 * 10,
        "the tail drop rule dropped {}",
        without.tail_drops
    );
    assert!(
        with.tail_drops >= FLOWS as u64,
        "the tail drop rule dropped {}",
        with.tail_drops
    );
    assert_eq!(agent["agent"]["injected"], 0, "{agent}");
    assert_eq!(agent["agent"]["dropped"], 0, "{agent}");
    assert!(
        agent["agent"]["egress_packets"].as_u64().unwrap() > 0,
        "the agent saw the traffic: {agent}"
    );
    assert!(
        with.sack_recoveries + with.timeouts >= FLOWS as u64,
        "every tail was recovered by the kernel"
    );
    // With beta 2 ms the shim acts before most tail loss probes fire (with 20 ms it rarely acts).
    let growing = "fixed_beta = \"2ms\"\nskip_sack_flows = false\nfake_sack = true\n";
    let highest =
        "fixed_beta = \"2ms\"\nskip_sack_flows = false\nfake_sack = true\nfake_sack_block = \"highest\"\n";
    let plain = "fixed_beta = \"2ms\"\nskip_sack_flows = false\nfake_sack = false\n";
    for extra in [growing, highest, plain] {
        eprint!("diagnostic [{}]: ", extra.trim().replace('\n', ", "));
        run_case_with(true, Some(NFQUEUE), extra);
    }
}

/// IPv6 between two namespaces joined by a veth pair (the testbed's fabric carries IPv4 only):
/// a = fd00::1 on `va` (the sender, where the agent runs), b = fd00::2 on `vb`. One segment per
/// packet (`gso_max_segs 1`), so the receiver's byte-range drop sees each segment.
fn ipv6_pair() -> (HostNs, HostNs) {
    let setup = HostSetup {
        sysctls: vec![
            ("net.ipv6.conf.all.disable_ipv6".into(), "0".into()),
            ("net.ipv6.conf.default.disable_ipv6".into(), "0".into()),
            ("net.ipv4.tcp_sack".into(), "0".into()),
        ],
        ..HostSetup::default()
    };
    let (a, _) = HostNs::create("a", &[], &setup).expect("namespace a");
    let (b, _) = HostNs::create("b", &[], &setup).expect("namespace b");
    // `ip link set ... netns PID` names b by a process living in it.
    let mut holder = b.spawn(Command::new("sleep").arg("60")).expect("a process in b");
    sh(
        &a,
        &[
            "ip",
            "link",
            "add",
            "va",
            "gso_max_segs",
            "1",
            "type",
            "veth",
            "peer",
            "name",
            "vb",
        ],
    );
    sh(
        &a,
        &["ip", "link", "set", "vb", "netns", &holder.id().to_string()],
    );
    let _ = holder.kill();
    let _ = holder.wait();
    sh(&b, &["ip", "link", "set", "vb", "gso_max_segs", "1"]);
    for (h, dev, ip) in [(&a, "va", "fd00::1/64"), (&b, "vb", "fd00::2/64")] {
        sh(h, &["ip", "-6", "addr", "add", ip, "dev", dev, "nodad"]);
        sh(h, &["ip", "link", "set", dev, "up"]);
    }
    (a, b)
}

/// The receiver's drop window over IPv6, as [`DROP_FROM`]..[`DROP_TO`] over IPv4: SYN 80 B (40 +
/// 40), handshake ACK 72 B, data segments of 1500 B (40 IPv6 + 32 TCP + 1428), the last of 1348 B.
const DROP6_FROM: u64 = 80 + 72 + 36 * 1500 + 1;
const DROP6_TO: u64 = 80 + 72 + 45 * 1500 + 1348;

fn install_tail_drop_v6(b: &HostNs) {
    drop_request_tails(b, "ip6tables", "vb", DROP6_FROM, DROP6_TO);
    sh(
        b,
        &[
            "ip",
            "-6",
            "route",
            "replace",
            "fd00::1/128",
            "dev",
            "vb",
            "quickack",
            "1",
        ],
    );
}

/// The IPv6 tail losses with and without the agent on `backend`: the same assertions as over IPv4.
fn ipv6_case(backend: &str) {
    let (a, b) = ipv6_pair();
    install_tail_drop_v6(&b);
    let to: SocketAddr = "[fd00::2]:7000".parse().unwrap();
    let dir = std::env::temp_dir().join(format!("tracksd-v6-{}-{backend}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut outcome = Vec::new();
    for agent in [false, true] {
        if agent {
            slow_rto(&a);
        }
        let child = agent.then(|| start_agent_on(&a, "va", &dir, false, backend, ""));
        let server = serve_at(&b, to, FLOWS);
        let before = a.netstat().unwrap();
        requests_to(&a, to, FLOWS);
        let after = a.netstat().unwrap();
        assert_eq!(server.join().unwrap(), FLOWS, "every request arrived intact");
        let counters = child.map(|c| stop_agent(&a, c));
        let timeouts = delta(&after, &before, "TcpExt.TCPTimeouts");
        let reno = delta(&after, &before, "TcpExt.TCPRenoRecovery");
        eprintln!("ipv6 {backend} agent={agent}: TCPTimeouts={timeouts} TCPRenoRecovery={reno} {counters:?}");
        outcome.push((timeouts, reno, counters));
    }
    let drops = sh(&b, &["ip6tables", "-w", "-L", "INPUT", "-v", "-n", "-x"]);
    let (t0, r0, _) = &outcome[0];
    assert!(
        *t0 >= FLOWS as u64,
        "without the agent every tail waits for an RTO: {t0}\n{drops}"
    );
    assert_eq!(*r0, 0);
    let (t1, r1, agent) = &outcome[1];
    let agent = agent.as_ref().unwrap();
    assert_eq!(*t1, 0, "no RTO with the agent (agent: {agent})");
    assert!(*r1 >= FLOWS as u64, "fast recoveries {r1} (agent: {agent})");
    assert!(agent["agent"]["ipv6_packets"].as_u64().unwrap() > 0, "{agent}");
    assert!(
        agent["agent"]["injected"].as_u64().unwrap() >= 3 * FLOWS as u64,
        "{agent}"
    );
    assert_eq!(agent["agent"]["inject_errors"], 0, "{agent}");
    for prog in ["iptables", "ip6tables"] {
        assert!(
            !sh(&a, &[prog, "-w", "-S"]).contains("TAILCUT_TRACKS"),
            "{prog} rules removed"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// IPv6, SACK off: the agent turns the RTOs into fast retransmits, on either backend (address ids in
/// the shim, IPv6 spoofed ACKs through the raw IPv6 socket, ip6tables rules or the BPF program's
/// IPv6 path).
#[test]
fn ipv6_tail_losses_recover_by_fast_retransmit_with_the_agent() {
    let Some(_g) = realnet("ipv6_tail_losses_recover_by_fast_retransmit_with_the_agent") else {
        return;
    };
    ipv6_case(NFQUEUE);
    ipv6_case(BPF);
}
