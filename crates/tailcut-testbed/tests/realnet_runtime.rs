//! Real-network tests of the schemes Linux does not run: an experiment file's schemes on tailcut's
//! engines over UDP (`tailcut-net`) inside the testbed's hosts (`runtime_agent.rs`). Like
//! `realnet.rs`, they need root, namespaces and TUN (skipping with the reason where those are missing,
//! failing instead under `TAILCUT_REQUIRE_REALNET=1`), run one at a time, and assert functional facts
//! only: every flow completes with its bytes intact (each agent checks every byte against the flow's
//! pattern and reports an altered one as an error), the counters agree with what the fabric did, and
//! which schemes survive a black hole. Never timings.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tailcut_testbed::experiment::{FlowRow, SchemeSummary};

mod common;
use common::{held_netns_inodes, realnet, root_net_state, run_file, run_text, GRACE};

/// Two racks of four hosts under four spines (CloudBurst's testbed) at 100 Mbit/s: one-way flows
/// between the racks, request/response calls, a component on persistent connections, and flows of
/// 250 KB (three CloudBurst blocks each).
fn clean_fabric(schemes: &str) -> String {
    format!(
        r#"name = "runtime"
seed = 5
max_time = "2s"
[topology]
kind = "cloudburst_testbed"
rate = "100Mbps"
link_delay = "20us"
[[workload]]
name = "one_way"
pattern = {{ kind = "pairs", pairs = [[0, 4], [5, 1], [2, 6]] }}
fixed = "30KB"
rate_per_host = 40
flows = 12
[[workload]]
name = "rpc"
pattern = {{ kind = "pairs", pairs = [[3, 7], [6, 2]] }}
fixed = "20KB"
request_bytes = "300B"
rate_per_host = 40
flows = 8
[[workload]]
name = "pooled"
pattern = {{ kind = "pairs", pairs = [[1, 5]] }}
fixed = "10KB"
rate_per_host = 40
flows = 8
connection = "persistent"
[[workload]]
name = "large"
pattern = {{ kind = "pairs", pairs = [[7, 3]] }}
fixed = "250KB"
rate_per_host = 20
flows = 3
{schemes}
[testbed]
{GRACE}
"#
    )
}

fn rows_of<'a>(rows: &'a [FlowRow], scheme: &str) -> Vec<&'a FlowRow> {
    rows.iter().filter(|r| r.scheme == scheme).collect()
}

fn summary<'a>(summaries: &'a [SchemeSummary], scheme: &str) -> &'a SchemeSummary {
    summaries.iter().find(|s| s.scheme == scheme).unwrap()
}

/// Every runtime scheme carries every flow of one file byte-exact: FUSO, CP, CloudBurst (LT and
/// RaptorQ), DCQUIC and tailcut's TCP beside Linux's (`testbed.runtime`). CloudBurst gives a message
/// up after its transmission timeout (20 ms on sockets), which a loaded machine's late wake-ups can
/// pass on a healthy fabric, and a receiver drops a multi-block message idle past its decoder timeout
/// (5 ms on sockets: a loaded CI machine lost one); here both are long, as this test is about bytes,
/// not time. On a fabric that dropped
/// nothing (nor a host's TUN queue, which a loaded machine's fabric can let fill), a one-way flow's
/// sender sent its whole payload and no timeout fired; its counters came from the runtime (the
/// kernel's column stays empty), the kernel's from the kernel. A CloudBurst response whose STOP and
/// close were both dropped is final only when its server gives it up (after the 1 s transmission
/// timeout here, and up to 1 s more of the server's own delay): the run waits that long for its
/// counters (`RuntimePlan::responses_settle`).
#[test]
fn every_runtime_scheme_carries_a_file_byte_exact() {
    let Some(_g) = realnet("every_runtime_scheme_carries_a_file_byte_exact") else {
        return;
    };
    let schemes = r#"
[[schemes]]
name = "linux"
transport = "tcp"
[[schemes]]
name = "tailcut-tcp"
transport = "tcp"
[[schemes]]
name = "fuso"
transport = "fuso"
params = { subflows = 4 }
[[schemes]]
name = "cp"
transport = "cp"
[[schemes]]
name = "cloudburst"
transport = "cloudburst"
params = { paths = 4, transmission_timeout = "1s", decoder_timeout = "100ms" }
[[schemes]]
name = "cloudburst-raptorq"
transport = "cloudburst"
params = { paths = 4, codec = "raptorq", transmission_timeout = "1s", decoder_timeout = "100ms" }
[[schemes]]
name = "dcquic"
transport = "dcquic"
"#;
    let text = clean_fabric(schemes).replace("[testbed]\n", "[testbed]\nruntime = [\"tailcut-tcp\"]\n");
    let (rows, summaries) = run_file(&text);
    for s in &summaries {
        let expected = if s.scheme == "linux" { "kernel" } else { "runtime" };
        assert_eq!(s.stack, expected, "{}", s.scheme);
        let mine = rows_of(&rows, &s.scheme);
        assert_eq!(mine.len(), 31, "{}", s.scheme);
        assert!(mine.iter().all(|r| r.error.is_none()), "{}: {mine:?}", s.scheme);
        for r in &mine {
            if s.stack == "kernel" {
                assert!(
                    r.sent_bytes.is_none() && r.timeouts.is_none(),
                    "the kernel counts no flow"
                );
                continue;
            }
            let sent = r.sent_bytes.unwrap_or_else(|| {
                panic!(
                    "{}: flow {} has counters (fabric drops {}, TUN drops {}, socket drops {})",
                    s.scheme, r.flow_id, s.fabric_drops, s.tun_tx_drops, s.kernel["Udp.RcvbufErrors"]
                )
            });
            // A one-way flow's request is its 24-byte header and its data; a request/response
            // flow's counters add its response's, which its server reported.
            let least = match r.request_bytes {
                0 => r.size_bytes + 24,
                req => req + 24 + r.size_bytes,
            };
            assert!(sent >= least, "{}: flow {} sent {sent}", s.scheme, r.flow_id);
            // (DCQUIC's QUIC counts none: its 0 is `n/m` in the summaries, docs/metrics.md.)
            if s.fabric_drops == 0 && s.tun_tx_drops == 0 && s.kernel["Udp.RcvbufErrors"] == 0 {
                assert_eq!(r.timeouts, Some(0), "{}: nothing was lost", s.scheme);
            }
        }
        if s.stack == "runtime" {
            assert_eq!(s.kernel["Tcp.ActiveOpens"], 0, "{}: no kernel TCP", s.scheme);
            assert!(s.kernel["Udp.InDatagrams"] > 0, "{}", s.scheme);
        }
    }
    // The persistent component's flows shared their clients: one connecting port per connection.
    let pooled: std::collections::BTreeSet<_> = rows_of(&rows, "fuso")
        .iter()
        .filter(|r| r.component == "pooled")
        .map(|r| r.client_port)
        .collect();
    assert_eq!(
        pooled.len(),
        1,
        "one persistent connection (connections_per_pair = 1)"
    );
}

/// CP through the fabric's trimming ports: an incast into a small buffer cuts payloads instead of
/// dropping them, every cut segment is resent on the receiver's precise NACK, and nothing is
/// dropped or times out.
#[test]
fn cp_resends_every_payload_the_fabric_cut() {
    let Some(_g) = realnet("cp_resends_every_payload_the_fabric_cut") else {
        return;
    };
    let text = format!(
        r#"name = "cp_incast"
seed = 3
max_time = "2s"
[topology]
kind = "star"
hosts = 9
host_rate = "100Mbps"
link_delay = "20us"
[network]
buffer = "12KB"
[[workload]]
name = "incast"
pattern = {{ kind = "incast", receiver = 0, fanout = 8 }}
fixed = "58960B"
[[schemes]]
name = "cp"
transport = "cp"
params = {{ loss_detection = "dupthresh" }}
[testbed]
{GRACE}
"#
    );
    let (rows, summaries) = run_file(&text);
    let s = summary(&summaries, "cp");
    assert_eq!(s.stack, "runtime");
    let trimmed: u64 = s.fabric.ports.iter().map(|p| p.counters.trimmed).sum();
    let dropped: u64 = s.fabric.ports.iter().map(|p| p.counters.dropped_overflow).sum();
    assert!(trimmed > 0, "the incast filled the buffer");
    assert_eq!(dropped, 0, "a trimming port cuts, it does not drop");
    // Every cut header reached its host as one its receiver reads (but those still on a wire when the
    // fabric stopped).
    let forwarded = s.fabric.rejects.cut_forwarded;
    assert!(
        forwarded <= trimmed && trimmed - forwarded <= s.fabric.in_flight,
        "{forwarded} cut headers forwarded of {trimmed}, {} in flight; rejects {:?}; ports {:?}",
        s.fabric.in_flight,
        s.fabric.rejects,
        s.fabric
            .ports
            .iter()
            .map(|p| (&p.node, &p.peer, p.counters, p.tun_write_drops))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        s.fabric.rejects.cut_delivered, 0,
        "none reached a host that cannot read it"
    );
    // Each flow's request is the stream's 12-byte frame header, the flow's 24-byte header and 58,960
    // bytes: 43 full segments of the sockets' MSS (tailcut_scheme::driver::SOCKET_DEFAULTS: 1372), so
    // every cut took one full segment. Without TLP (DupThresh) and with no RTO nothing is sent again
    // but on a cut's NACK, so the runtime never resends more than the fabric cut; and it resends
    // nearly all of it (a cut of a segment whose data had already arrived, or whose header was on a
    // wire at the end, needs none: one or two in 400 here).
    let mss = 1372;
    let resent: u64 = rows.iter().map(|r| r.retransmitted_bytes.unwrap()).sum();
    assert!(
        resent <= trimmed * mss && resent * 100 >= trimmed * mss * 95,
        "{resent} bytes sent again for {trimmed} cuts of {mss} bytes"
    );
    assert!(rows.iter().all(|r| r.timeouts == Some(0)), "no RTO: {rows:?}");
}

/// One of a rack's four uplinks black-holes everything going up: a TCP flow whose ECMP hash picks it
/// never finishes, while FUSO (16 sub-flows, each its own 5-tuple) and CloudBurst (16 paths) deliver
/// every flow over the others. CloudBurst gives a message up at its transmission timeout (20 ms on
/// sockets), which a loaded machine's late wake-ups passed in CI; this test is about surviving the
/// hole, so the timeout is long.
#[test]
fn a_black_holed_uplink_is_survived_by_fuso_and_cloudburst_not_by_tcp() {
    let Some(_g) = realnet("a_black_holed_uplink_is_survived_by_fuso_and_cloudburst_not_by_tcp") else {
        return;
    };
    // 32 TCP flows: each avoids the hole with probability 3/4, so all of them do once in 10^4 runs.
    // A FUSO or CloudBurst flow fails only if all 16 paths hash onto it: (1/4)^16 per flow.
    let text = r#"name = "blackhole"
seed = 2
max_time = "1s"
[topology]
kind = "cloudburst_testbed"
rate = "100Mbps"
link_delay = "20us"
[[faults]]
kind = "loss"
link = { between = ["leaf0", "spine0"] }
direction = "forward"
model = { kind = "bernoulli", p = 1.0 }
[[workload]]
name = "up"
pattern = { kind = "pairs", pairs = [[0, 4], [1, 5], [2, 6], [3, 7]] }
fixed = "20KB"
rate_per_host = 50
flows = 32
[[schemes]]
name = "tcp"
transport = "tcp"
[[schemes]]
name = "fuso"
transport = "fuso"
params = { subflows = 16 }
[[schemes]]
name = "cloudburst"
transport = "cloudburst"
params = { paths = 16, transmission_timeout = "1s" }
[testbed]
grace = "5s"
"#;
    let (rows, summaries) = run_text(text);
    let hole: u64 = summary(&summaries, "fuso")
        .fabric
        .ports
        .iter()
        .map(|p| p.counters.dropped_link_loss)
        .sum();
    assert!(hole > 0, "FUSO's sub-flows crossed the hole");
    for scheme in ["fuso", "cloudburst"] {
        let unfinished: Vec<_> = rows_of(&rows, scheme)
            .iter()
            .filter(|r| !r.completed)
            .map(|r| (r.flow_id, r.error.clone()))
            .collect();
        assert!(
            unfinished.is_empty(),
            "{scheme} delivered every flow: {unfinished:?}"
        );
    }
    let tcp = rows_of(&rows, "tcp");
    assert!(
        tcp.iter().any(|r| !r.completed),
        "some TCP flow hashed onto the hole"
    );
    assert!(tcp.iter().any(|r| r.completed), "and some did not");
}

/// DCQUIC's baseline on real hosts: Linux TCP with TLS 1.3 over each connection (a certificate made
/// for the run, which every agent presents and trusts), beside DCQUIC on the runtime. Every flow
/// completes; each TLS flow opened a kernel connection of its own.
#[test]
fn tcp_with_tls_and_dcquic_carry_a_file() {
    let Some(_g) = realnet("tcp_with_tls_and_dcquic_carry_a_file") else {
        return;
    };
    let text = format!(
        r#"name = "tls"
seed = 4
max_time = "2s"
[topology]
kind = "star"
hosts = 4
host_rate = "100Mbps"
link_delay = "20us"
[[workload]]
name = "rpc"
pattern = {{ kind = "one_to_all", clients = [0, 1] }}
server_hosts = [2, 3]
fixed = "20KB"
request_bytes = "100B"
rate_per_host = 40
flows = 12
[[workload]]
name = "one_way"
pattern = {{ kind = "pairs", pairs = [[3, 0]] }}
fixed = "50KB"
rate_per_host = 40
flows = 6
[[schemes]]
name = "tls"
transport = "tcp_tls13"
[[schemes]]
name = "dcquic"
transport = "dcquic"
[testbed]
{GRACE}
"#
    );
    let (rows, summaries) = run_file(&text);
    let tls = summary(&summaries, "tls");
    assert_eq!(tls.stack, "kernel");
    assert_eq!(tls.kernel["Tcp.ActiveOpens"], 18, "one connection per flow");
    assert_eq!(summary(&summaries, "dcquic").stack, "runtime");
    assert_eq!(rows.len(), 36);
}

/// Bounds on waiting for what must happen (agents up, flows crossing, a process gone): generous, as
/// the machine's two CPUs are shared; a passing run never waits them out.
const EVENTUALLY: Duration = Duration::from_secs(60);
const AGENTS_UP: Duration = Duration::from_secs(300);

/// Polls `done` every 50 ms until it holds or `bound` passes; whether it held.
fn within(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tailcut_sys::clock::monotonic_ns() + bound.as_nanos() as u64;
    loop {
        if done() {
            return true;
        }
        if tailcut_sys::clock::monotonic_ns() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A file that keeps a runtime scheme busy for tens of seconds: 80 flows from two of four hosts,
/// two a second from each, on a clean dumbbell, captured.
fn long_run(scheme: &str) -> String {
    format!(
        r#"name = "long"
seed = 3
max_time = "60s"
[topology]
kind = "dumbbell"
left = 2
right = 2
host_rate = "100Mbps"
bottleneck_rate = "100Mbps"
[[workload]]
name = "steady"
pattern = {{ kind = "pairs", pairs = [[0, 2], [3, 1]] }}
fixed = "30KB"
rate_per_host = 2
flows = 80
[[schemes]]
{scheme}
[testbed]
{GRACE}
[testbed.pcap]
snaplen = 128
"#
    )
}

/// The `tailcut-testbed agent` processes `parent` started.
fn agents_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let last = cmdline.split(|&b| b == 0).rfind(|a| !a.is_empty());
        if ppid == Some(parent) && last == Some(&b"agent"[..]) {
            out.push(pid);
        }
    }
    out
}

/// The `net:[INODE]` of process `pid`'s namespace.
fn netns_of(pid: u32) -> Option<u64> {
    let l = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok()?;
    l.to_str()?.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// UDP datagrams delivered to sockets in process `pid`'s namespace.
fn udp_in(pid: u32) -> u64 {
    let snmp = std::fs::read_to_string(format!("/proc/{pid}/net/snmp")).unwrap_or_default();
    let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
    let [names, values] = udp[..] else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "InDatagrams")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// A live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// `tailcut-testbed run` of a [`long_run`] file with `scheme` (its `[[schemes]]` lines), caught
/// mid-run: every host's agent runs in its namespace, the scheme's datagrams cross the fabric and
/// its capture file exists, and the run has not ended. With `stale`, `--out` holds an earlier run's
/// files (results and a capture) and the run is given `--overwrite`.
struct MidRun {
    run: Child,
    stderr: std::thread::JoinHandle<String>,
    agents: Vec<u32>,
    namespaces: Vec<u64>,
    out: PathBuf,
    dir: PathBuf,
}

fn start_mid_run(test: &str, scheme: &str, capture: &str, stale: bool) -> MidRun {
    let dir = std::env::temp_dir().join(format!("tailcut-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("long.toml");
    std::fs::write(&file, long_run(scheme)).unwrap();
    let out = dir.join("out");
    if stale {
        std::fs::create_dir_all(out.join("pcap")).unwrap();
        for f in STALE {
            std::fs::write(out.join(f), "{}").unwrap();
        }
    }
    let mut run = Command::new(env!("CARGO_BIN_EXE_tailcut-testbed"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(stale.then_some("--overwrite"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = run.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    // Killed (and its folder removed) by its drop if an assertion below fails.
    let mut mid = MidRun {
        run,
        stderr,
        agents: Vec::new(),
        namespaces: Vec::new(),
        out,
        dir,
    };
    let pid = mid.run.id();
    let up = within(AGENTS_UP, || {
        assert!(
            mid.run.try_wait().unwrap().is_none(),
            "the run ended before it was caught mid-run"
        );
        mid.agents = agents_of(pid);
        mid.agents.len() == 4 && mid.agents.iter().any(|&a| udp_in(a) > 0)
    });
    assert!(up, "four agents, datagrams crossing: {:?}", mid.agents);
    assert!(
        mid.out.join("pcap").join(capture).exists(),
        "the run captures into {}",
        mid.out.display()
    );
    mid.namespaces = mid.agents.iter().filter_map(|&a| netns_of(a)).collect();
    assert_eq!(mid.namespaces.len(), 4, "each agent in its host's namespace");
    // The run's own handling of SIGINT, SIGTERM and SIGHUP is not the agents': they neither block nor
    // catch them.
    for &a in &mid.agents {
        let status = std::fs::read_to_string(format!("/proc/{a}/status")).unwrap();
        for field in ["SigBlk:", "SigCgt:"] {
            let mask = status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
                .unwrap();
            // Bit n - 1 is signal n: SIGHUP (1), SIGINT (2), SIGTERM (15).
            let termination: u64 = [1, 2, 15].iter().map(|n| 1 << (n - 1)).sum();
            assert_eq!(mask & termination, 0, "agent {a} {field} {mask:x}");
        }
    }
    assert!(
        mid.run.try_wait().unwrap().is_none(),
        "still running when interrupted"
    );
    mid
}

impl MidRun {
    /// Waits for the run to end after its signal; its status and what it printed on stderr.
    fn ended(&mut self) -> (std::process::ExitStatus, String) {
        let mut status = None;
        assert!(
            within(EVENTUALLY, || {
                status = self.run.try_wait().unwrap();
                status.is_some()
            }),
            "the run ended after its signal"
        );
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        (status.unwrap(), stderr.join().unwrap())
    }

    /// Asserts that nothing of the run remains: no agent process, no host namespace (and with them
    /// their TUN NICs and sockets), no interface or named namespace in the root namespace.
    fn nothing_remains(&self, before: &(Vec<String>, String)) {
        let mut left = (Vec::new(), Vec::new());
        let gone = within(EVENTUALLY, || {
            let held = held_netns_inodes();
            left = (
                self.agents.iter().copied().filter(|&p| alive(p)).collect(),
                self.namespaces
                    .iter()
                    .copied()
                    .filter(|i| held.contains(i))
                    .collect(),
            );
            left.0.is_empty() && left.1.is_empty()
        });
        assert!(gone, "left behind: agents {:?}, namespaces {:?}", left.0, left.1);
        assert_eq!(
            &root_net_state(),
            before,
            "no interface or named namespace added to the root namespace"
        );
    }

    fn no_results(&self) {
        for f in ["flows.json", "ports.json", "testbed.json"] {
            assert!(!self.out.join(f).exists(), "{f} written by an interrupted run");
        }
    }
}

impl Drop for MidRun {
    fn drop(&mut self) {
        let _ = self.run.kill();
        let _ = self.run.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An earlier run's files in `--out`.
const STALE: [&str; 4] = [
    "flows.json",
    "ports.json",
    "testbed.json",
    "pcap/earlier.sent.pcap",
];

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// SIGKILL of `tailcut-testbed run` mid-run on the runtime (no destructor runs): its agents, their
/// namespaces and NICs all go, and no result file exists.
#[test]
fn nothing_remains_after_a_runtime_run_is_killed() {
    let Some(_g) = realnet("nothing_remains_after_a_runtime_run_is_killed") else {
        return;
    };
    let before = root_net_state();
    let mut mid = start_mid_run(
        "killed",
        "name = \"fuso\"\ntransport = \"fuso\"\nparams = { subflows = 2 }",
        "fuso.sent.pcap",
        false,
    );
    mid.run.kill().unwrap();
    let (status, _) = mid.ended();
    assert!(!status.success());
    mid.nothing_remains(&before);
    mid.no_results();
}

/// Ctrl-C (SIGINT) of `tailcut-testbed run` mid-run on the runtime: it exits with the interrupted
/// status, saying so, leaves nothing running or set up, and no output: no results and none of its
/// captures, and not the `--out` folder it made.
#[test]
fn ctrl_c_ends_a_runtime_run_with_nothing_left() {
    let Some(_g) = realnet("ctrl_c_ends_a_runtime_run_with_nothing_left") else {
        return;
    };
    let before = root_net_state();
    let mut mid = start_mid_run(
        "ctrl-c",
        "name = \"cloudburst\"\ntransport = \"cloudburst\"\nparams = { paths = 2, transmission_timeout = \"1s\" }",
        "cloudburst.sent.pcap",
        false,
    );
    signal(mid.run.id(), "-INT");
    let (status, stderr) = mid.ended();
    assert_eq!(
        status.code(),
        Some(tailcut_testbed::experiment::interrupted_exit_code(2)),
        "{stderr}"
    );
    assert!(
        stderr.contains("interrupted by SIGINT") && stderr.contains("wrote no results"),
        "{stderr}"
    );
    mid.nothing_remains(&before);
    mid.no_results();
    assert!(!mid.out.exists(), "the folder the run made is gone");
}

/// SIGTERM of a run that replaces an earlier run's folder (`--overwrite`): the earlier files go at
/// the start, so that the interrupted run leaves none that look like its own; the folder stays.
#[test]
fn sigterm_ends_an_overwriting_runtime_run_without_stale_results() {
    let Some(_g) = realnet("sigterm_ends_an_overwriting_runtime_run_without_stale_results") else {
        return;
    };
    let before = root_net_state();
    let mut mid = start_mid_run(
        "sigterm",
        "name = \"fuso\"\ntransport = \"fuso\"\nparams = { subflows = 2 }",
        "fuso.sent.pcap",
        true,
    );
    assert!(
        !mid.out.join(STALE[3]).exists(),
        "the earlier capture went before the run"
    );
    signal(mid.run.id(), "-TERM");
    let (status, stderr) = mid.ended();
    assert_eq!(
        status.code(),
        Some(tailcut_testbed::experiment::interrupted_exit_code(15)),
        "{stderr}"
    );
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    mid.nothing_remains(&before);
    mid.no_results();
    assert!(mid.out.is_dir(), "the folder given stays");
    assert!(!mid.out.join("pcap").exists(), "no capture of the run");
}
