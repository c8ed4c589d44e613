//! The workload agent: one process per host, started inside the host's namespace. It reads its plan
//! (JSON on stdin: the flows it initiates, when, and to whom), serves incoming flows on one port,
//! opens a real socket per flow at its start time, and prints one JSON line per event on stdout:
//! `start` (connector, before `connect`), `port` (connector, its connection's local port),
//! `finish` (the side that received a flow's data, when the last byte arrived), `retrans` (the data sender's `tcpi_total_retrans` once the peer closed),
//! `reconnect` (a reconnecting client, `reconnect.rs`, opened a new connection) and `error`. Times are `CLOCK_MONOTONIC` nanoseconds, shared by every process of the machine, so a
//! flow's start and finish, taken by different processes, are on one clock.
//!
//! Wire protocol per connection: per flow, a 24-byte header (flow id, data bytes, reply bytes;
//! big-endian u64), then the data; with reply bytes (request/response) the acceptor answers with that
//! many bytes, the first 8 of them the flow id (big-endian; a shorter reply has the id's last bytes),
//! which the client checks: a reply read for the wrong call fails its flow. A flow with `conn` set shares a persistent connection with the other flows of the same
//! `conn`, as the simulator's `connection = "persistent"` does: the first of them opens it, later ones
//! are written after the earlier ones (waiting behind them is part of their FCT), the acceptor serves
//! them in order and replies arrive in order. A persistent flow has no `retrans` line, because
//! `tcpi_total_retrans` counts the whole connection; the namespace's counters still have them.
//!
//! With `reconnect` in the plan (`tcp_reconnect`, `dctcp_reconnect`) every flow's client is the
//! reconnecting RPC client of `reconnect.rs`: a persistent connection's flows share one, a flow of its
//! own has one for its single call.

use crate::reconnect::ReconnectPlan;
use crate::runtime_agent::{self, RuntimePlan, TlsMaterial};
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tailcut_net::kernel_tls::{TlsContext, TlsStream};
use tailcut_sys::clock::monotonic_ns;

/// What an agent is told to do.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Port every agent listens on (all addresses).
    pub port: u16,
    /// Open MPTCP sockets (IPPROTO_MPTCP) instead of TCP.
    pub mptcp: bool,
    /// Congestion control set on every socket (`TCP_CONGESTION`), or the namespace's default.
    pub congestion_control: Option<String>,
    /// Flows this host initiates, in start order.
    pub flows: Vec<PlannedFlow>,
    /// Run the flows on tailcut's engines over UDP (`runtime_agent.rs`) instead of the kernel's TCP.
    #[serde(default)]
    pub runtime: Option<RuntimePlan>,
    /// Carry every kernel connection's flows over TLS 1.3 with these certificates (the `tcp_tls13`
    /// and `dctcp_tls13` schemes: DCQUIC's baseline). Connections of their own only.
    #[serde(default)]
    pub tls: Option<TlsMaterial>,
    /// Reconnect a stalled client from the host's next NIC (the `tcp_reconnect` and
    /// `dctcp_reconnect` schemes: `reconnect.rs`).
    #[serde(default)]
    pub reconnect: Option<ReconnectPlan>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedFlow {
    pub id: u64,
    pub to: SocketAddr,
    /// Bytes this side sends after the header.
    pub data: u64,
    /// Bytes the peer answers with (0: none; the peer's receipt finishes the flow).
    pub reply: u64,
    /// When to start: ns after the time zero the emulator sends once every agent listens.
    pub start_ns: u64,
    /// The persistent connection this flow shares (unique within the plan), or its own connection.
    #[serde(default)]
    pub conn: Option<u32>,
    /// On the runtime from a host with several NICs: per path, the local address to send from and
    /// the peer's address on the same plane (empty: the routes choose, one NIC).
    #[serde(default)]
    pub paths: Vec<(IpAddr, SocketAddr)>,
}

/// One line of the agent's output.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    /// The agent listens: flows may start.
    Ready,
    Start {
        id: u64,
        t: u64,
    },
    Finish {
        id: u64,
        t: u64,
    },
    /// The local port of the connection carrying flow `id`, on the side that connected: with the
    /// agents' listening port and the two hosts' addresses it names the flow's packets in a capture.
    Port {
        id: u64,
        port: u16,
    },
    Retrans {
        id: u64,
        segments: u32,
    },
    Error {
        id: u64,
        msg: String,
    },
    /// A reconnecting client (`reconnect.rs`) gave up its connection at `t` because call `id`, its
    /// oldest unanswered one, made no progress for `reconnect_after`, and opens a new one from its
    /// NIC `nic` (index into the host's addresses), re-sending the calls `resent` (in order) there.
    Reconnect {
        id: u64,
        nic: u32,
        resent: Vec<u64>,
        t: u64,
    },
    /// On the runtime, a flow's sender counters (`MessageStats`): its request's from the client once
    /// its call returned, and with `response` a request/response flow's response's from the server
    /// once the response was acknowledged.
    Counters {
        id: u64,
        #[serde(default)]
        response: bool,
        timeouts: u32,
        fast_retransmits: u32,
        retransmitted_bytes: u64,
        redundant_bytes: u64,
        sent_bytes: u64,
    },
    /// On the runtime with DCQUIC, after each call: the proactive migrations the client of connection
    /// `conn` (the plan's persistent connection, or `1 << 40 | id` for a flow's own) made so far.
    Migrations {
        conn: u64,
        total: u64,
    },
}

pub(crate) const HEADER: usize = 24;
/// `SCHED_FIFO` priority of a flow's thread from just before its start until it has connected: above
/// every normal thread, below the fabric's (2).
const START_PRIORITY: i32 = 1;
/// How long before its start a flow's thread and socket are made.
const SPAWN_AHEAD_NS: u64 = 20_000_000;
const CHUNK: usize = 64 * 1024;

pub(crate) type Out = Arc<Mutex<io::Stdout>>;

pub(crate) fn emit(out: &Out, e: &Event) {
    if let Ok(line) = serde_json::to_string(e) {
        let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

/// A connection's byte stream: the kernel's TCP socket, or TLS 1.3 over it (`TlsStream::on`).
type Stream = TlsStream;

/// The plan's TLS settings, if its flows go over TLS.
fn tls_context(plan: &Plan) -> Result<Option<TlsContext>, String> {
    plan.tls
        .as_ref()
        .map(|m| TlsContext::new(&m.config()).map_err(|e| format!("agent: TLS: {e}")))
        .transpose()
}

pub(crate) fn socket(plan: &Plan) -> io::Result<Socket> {
    let proto = if plan.mptcp { Some(Protocol::MPTCP) } else { None };
    let s = Socket::new(Domain::IPV4, Type::STREAM, proto)?;
    if let Some(cc) = &plan.congestion_control {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| io::Error::new(e.kind(), format!("congestion control '{cc}': {e}")))?;
    }
    Ok(s)
}

pub fn main() -> Result<(), String> {
    // Belt and braces: the emulator also sets this when it spawns us.
    tailcut_sys::spawn::die_with_parent().map_err(|e| e.to_string())?;
    // Flows start at their planned time to the microsecond rather than up to the default 50 us of
    // slack later; threads started from here inherit it.
    let _ = tailcut_sys::clock::set_timer_slack_ns(1);
    // Two lines on stdin: the plan (JSON), then, once every agent has said it listens, the time zero
    // (`CLOCK_MONOTONIC` ns) that the flows' start times count from.
    let mut stdin = io::stdin().lock();
    let mut input = String::new();
    stdin
        .read_line(&mut input)
        .map_err(|e| format!("agent: stdin: {e}"))?;
    let plan: Plan = serde_json::from_str(&input).map_err(|e| format!("agent: plan: {e}"))?;
    let plan = Arc::new(plan);
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    // One for the agent: its listener's connections and its own share it.
    let tls = tls_context(&plan)?;
    // The runtime's server lives as long as the agent (its thread stops when it is dropped).
    let _server = match &plan.runtime {
        Some(rt) => Some(runtime_agent::serve(rt, plan.port, &out)?),
        None => {
            listen(&plan, tls.clone(), &out)?;
            None
        }
    };
    // Tell the emulator we listen, and wait for its time zero: it comes once every agent listens, so
    // no flow starts before every agent does, however long starting them took.
    emit(&out, &Event::Ready);
    let mut go = String::new();
    stdin
        .read_line(&mut go)
        .map_err(|e| format!("agent: stdin: {e}"))?;
    let zero: u64 = go
        .trim()
        .parse()
        .map_err(|e| format!("agent: time zero {go:?}: {e}"))?;
    let mut persistent: HashMap<u32, Sender<PlannedFlow>> = HashMap::new();
    let shared = runtime_agent::Shared::default();
    for f in plan.flows.iter().cloned() {
        let at = zero + f.start_ns;
        let (plan, out) = (plan.clone(), out.clone());
        if plan.runtime.is_some() {
            // As below: the thread is made ahead of the start, and at the start only opens (or
            // takes its persistent connection's client) and calls.
            tailcut_sys::clock::sleep_until_ns(at.saturating_sub(SPAWN_AHEAD_NS));
            let shared = shared.clone();
            std::thread::spawn(move || {
                let rt = plan.runtime.as_ref().expect("checked");
                tailcut_sys::clock::sleep_until_ns(at);
                runtime_agent::run_flow(rt, &f, &shared, &out);
            });
            continue;
        }
        if let Some(rp) = &plan.reconnect {
            let rp = rp.clone();
            match f.conn {
                Some(c) => {
                    tailcut_sys::clock::sleep_until_ns(at);
                    let tx = persistent.entry(c).or_insert_with(|| {
                        let (tx, rx) = mpsc::channel();
                        std::thread::spawn(move || crate::reconnect::client(&plan, &rp, rx, &out));
                        tx
                    });
                    let _ = tx.send(f);
                }
                None => {
                    // Made ahead of its start as the plain per-flow connections are; the client's
                    // single call is handed over at the start.
                    tailcut_sys::clock::sleep_until_ns(at.saturating_sub(SPAWN_AHEAD_NS));
                    let (tx, rx) = mpsc::channel();
                    std::thread::spawn(move || crate::reconnect::client(&plan, &rp, rx, &out));
                    std::thread::spawn(move || {
                        tailcut_sys::clock::sleep_until_ns(at);
                        let _ = tx.send(f);
                    });
                }
            }
            continue;
        }
        match f.conn {
            // The orchestrator refuses this pair; the agent keeps the rule too.
            Some(_) if tls.is_some() => {
                let e = io::Error::other("a persistent connection over TLS is not run on the testbed");
                error(&out, f.id, &e);
            }
            Some(c) => {
                tailcut_sys::clock::sleep_until_ns(at);
                let tx = persistent.entry(c).or_insert_with(|| {
                    let (tx, rx) = mpsc::channel();
                    std::thread::spawn(move || persistent_connection(&plan, rx, &out));
                    tx
                });
                // The connection's thread lives as long as the agent, so the send cannot fail.
                let _ = tx.send(f);
            }
            None => {
                // The flow's thread and socket are made ahead of its start: starting a thread takes
                // tens of microseconds and, when every sender of an incast round starts at once on
                // two CPUs, they queue behind each other. At its start the thread only connects.
                tailcut_sys::clock::sleep_until_ns(at.saturating_sub(SPAWN_AHEAD_NS));
                let tls = tls.clone();
                std::thread::spawn(move || {
                    let s = socket(&plan);
                    // Real-time until the SYN is out, so that the start is not queued behind other
                    // programs' time slices (below the fabric's priority: `fabric::LoopConfig`);
                    // best effort. The transfer itself runs in the normal class.
                    let rt = tailcut_sys::sched::set_current_thread_fifo(START_PRIORITY).is_ok();
                    tailcut_sys::clock::sleep_until_ns(at);
                    if let Err(e) = connect_one(s, &f, tls.as_ref(), &out, rt) {
                        error(&out, f.id, &e);
                    }
                });
            }
        }
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The kernel's listening socket on the plan's port, every connection served on a thread of its own
/// (over TLS with `tls`).
fn listen(plan: &Plan, tls: Option<TlsContext>, out: &Out) -> Result<(), String> {
    let listener = socket(plan).map_err(|e| e.to_string())?;
    listener.set_reuse_address(true).map_err(|e| e.to_string())?;
    let any = SocketAddr::from(([0, 0, 0, 0], plan.port));
    listener
        .bind(&SockAddr::from(any))
        .map_err(|e| format!("agent: bind {any}: {e}"))?;
    listener.listen(1024).map_err(|e| e.to_string())?;
    let out = out.clone();
    std::thread::spawn(move || loop {
        if let Ok((s, _)) = listener.accept() {
            let (out, tls) = (out.clone(), tls.clone());
            std::thread::spawn(move || accept_one(s.into(), tls.as_ref(), &out));
        }
    });
    Ok(())
}

fn write_zeros(s: &mut impl Write, mut n: u64) -> io::Result<()> {
    let buf = [0u8; CHUNK];
    while n > 0 {
        let k = n.min(CHUNK as u64) as usize;
        s.write_all(&buf[..k])?;
        n -= k as u64;
    }
    Ok(())
}

fn read_exact_discard(s: &mut impl Read, mut n: u64) -> io::Result<()> {
    let mut buf = [0u8; CHUNK];
    while n > 0 {
        let k = n.min(CHUNK as u64) as usize;
        let got = s.read(&mut buf[..k])?;
        if got == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "peer closed early"));
        }
        n -= got as u64;
    }
    Ok(())
}

/// Reads until the peer closes: after it, every byte we sent was acknowledged, so `TCP_INFO`'s
/// retransmission count is final.
fn drain_to_eof(s: &mut impl Read) {
    let mut buf = [0u8; 512];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

fn retrans(s: &TcpStream, id: u64, out: &Out) {
    if let Ok(ti) = tailcut_sys::tcpinfo::tcp_info(s.as_fd()) {
        emit(
            out,
            &Event::Retrans {
                id,
                segments: ti.total_retrans,
            },
        );
    }
}

pub(crate) fn error(out: &Out, id: u64, e: &io::Error) {
    emit(
        out,
        &Event::Error {
            id,
            msg: e.to_string(),
        },
    );
}

pub(crate) fn started(out: &Out, id: u64) {
    emit(
        out,
        &Event::Start {
            id,
            t: monotonic_ns(),
        },
    );
}

pub(crate) fn finished(out: &Out, id: u64) {
    emit(
        out,
        &Event::Finish {
            id,
            t: monotonic_ns(),
        },
    );
}

pub(crate) fn port(out: &Out, id: u64, s: &TcpStream) {
    if let Ok(a) = s.local_addr() {
        emit(out, &Event::Port { id, port: a.port() });
    }
}

fn open(plan: &Plan, to: SocketAddr) -> io::Result<TcpStream> {
    connect(socket(plan)?, to)
}

fn connect(s: Socket, to: SocketAddr) -> io::Result<TcpStream> {
    s.set_tcp_nodelay(true)?;
    s.connect(&SockAddr::from(to))?;
    Ok(s.into())
}

/// A flow's header and data. The header goes out in the same write as the data's first bytes: written
/// alone (the socket has `TCP_NODELAY`) it left as a 24-byte segment ahead of the flow's first full
/// one, and in an incast that small segment slipped into the byte-counted drop-tail queue where the
/// full segments behind it were dropped (in 593 of 800 flows at N = 16), so Linux got an early ACK
/// the simulator's flows, whose segments are all full-sized, never get (docs/testbed.md, "Why Linux
/// timed out less than the simulator at N = 16").
pub(crate) fn send_flow(s: &mut impl Write, f: &PlannedFlow) -> io::Result<()> {
    let mut first = [0u8; CHUNK];
    first[..8].copy_from_slice(&f.id.to_be_bytes());
    first[8..16].copy_from_slice(&f.data.to_be_bytes());
    first[16..HEADER].copy_from_slice(&f.reply.to_be_bytes());
    let with_header = f.data.min((CHUNK - HEADER) as u64);
    s.write_all(&first[..HEADER + with_header as usize])?;
    write_zeros(s, f.data - with_header)?;
    // Out of TLS's buffer (a no-op on a bare socket).
    s.flush()
}

/// One flow on a connection of its own, on `s`, the socket made for it ahead of its start.
/// With `rt`, the thread leaves the real-time class once connected.
fn connect_one(
    s: io::Result<Socket>,
    f: &PlannedFlow,
    tls: Option<&TlsContext>,
    out: &Out,
    rt: bool,
) -> io::Result<()> {
    // The start is taken before the connect, and reported after it so that the SYN leaves first.
    let t = monotonic_ns();
    let opened = s.and_then(|s| connect(s, f.to));
    if rt {
        let _ = tailcut_sys::sched::set_current_thread_normal();
    }
    emit(out, &Event::Start { id: f.id, t });
    let s = opened?;
    port(out, f.id, &s);
    // Over TLS the handshake comes first, as an application's would: part of the flow's time.
    let mut s = Stream::on(s, tls, true)?;
    send_flow(&mut s, f)?;
    if f.reply > 0 {
        read_reply(&mut s, f, |_| true)?;
        finished(out, f.id);
        // The flow is over: ending the connection cannot fail it (the peer may have closed first,
        // and a shutdown of a closed socket errs), so nothing here is reported.
        let _ = s.close_write();
    } else {
        s.close_write()?;
        drain_to_eof(&mut s);
        retrans(s.tcp(), f.id, out);
    }
    Ok(())
}

/// One persistent connection: opened for its first flow, then each flow written as the planner hands
/// it over. Replies are read by a second thread, in the order their requests were written. After an
/// error every later flow of the connection reports it too.
fn persistent_connection(plan: &Plan, flows: Receiver<PlannedFlow>, out: &Out) {
    let Ok(first) = flows.recv() else {
        return;
    };
    started(out, first.id);
    let opened = open(plan, first.to).and_then(|s| Ok((s.try_clone()?, s)));
    let (mut writer, reader) = match opened {
        Ok(pair) => pair,
        Err(e) => {
            error(out, first.id, &e);
            for f in flows {
                started(out, f.id);
                error(out, f.id, &e);
            }
            return;
        }
    };
    let (expect, replies) = mpsc::channel::<PlannedFlow>();
    {
        let out = out.clone();
        std::thread::spawn(move || read_replies(reader, replies, &out));
    }
    let mut failed: Option<io::Error> = None;
    for (i, f) in std::iter::once(first).chain(flows).enumerate() {
        if i > 0 {
            started(out, f.id);
        }
        port(out, f.id, &writer);
        if failed.is_none() {
            if let Err(e) = send_flow(&mut writer, &f) {
                failed = Some(e);
            } else if f.reply > 0 {
                let _ = expect.send(f.clone());
            }
        }
        if let Some(e) = &failed {
            error(out, f.id, e);
        }
    }
}

fn read_replies(mut s: TcpStream, expected: Receiver<PlannedFlow>, out: &Out) {
    for f in expected.iter() {
        let id = f.id;
        match read_reply(&mut s, &f, |_| true) {
            Ok(_) => finished(out, id),
            Err(e) => {
                error(out, id, &e);
                for f in expected.iter() {
                    error(out, f.id, &e);
                }
                return;
            }
        }
    }
}

/// The first bytes of flow `id`'s reply: the id, or its last `reply` bytes when the reply is shorter.
fn reply_prefix(id: u64, reply: u64) -> Vec<u8> {
    let b = id.to_be_bytes();
    b[8 - reply.min(8) as usize..].to_vec()
}

/// A reply written by the server: [`reply_prefix`], then zeros.
fn write_reply(s: &mut impl Write, id: u64, reply: u64) -> io::Result<()> {
    let prefix = reply_prefix(id, reply);
    s.write_all(&prefix)?;
    write_zeros(s, reply - prefix.len() as u64)
}

/// Reads flow `f`'s reply, `f.reply` bytes, and checks that it is `f`'s (its first bytes name the
/// flow). After each read `progress` is told how many bytes came; when it answers `false` the reply
/// is given up and `Ok(false)` returned (a reconnecting client abandoned the connection).
pub(crate) fn read_reply(
    s: &mut impl Read,
    f: &PlannedFlow,
    mut progress: impl FnMut(usize) -> bool,
) -> io::Result<bool> {
    let want = reply_prefix(f.id, f.reply);
    let mut head = Vec::with_capacity(want.len());
    let mut buf = [0u8; CHUNK];
    let mut n = f.reply;
    while n > 0 {
        let k = n.min(CHUNK as u64) as usize;
        let got = s.read(&mut buf[..k])?;
        if got == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "peer closed early"));
        }
        if head.len() < want.len() {
            let take = (want.len() - head.len()).min(got);
            head.extend_from_slice(&buf[..take]);
            if head.len() == want.len() && head != want {
                return Err(io::Error::other(format!(
                    "the reply read for flow {} is another call's ({head:02x?})",
                    f.id
                )));
            }
        }
        n -= got as u64;
        if !progress(got) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Reads a flow header, or `None` at a clean end of the connection.
fn read_header(s: &mut impl Read) -> io::Result<Option<(u64, u64, u64)>> {
    let mut header = [0u8; HEADER];
    let mut got = 0;
    while got < HEADER {
        match s.read(&mut header[got..])? {
            0 if got == 0 => return Ok(None),
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed mid-header",
                ))
            }
            n => got += n,
        }
    }
    let word = |i: usize| u64::from_be_bytes(header[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    Ok(Some((word(0), word(1), word(2))))
}

/// Serves a connection's flows in order until the peer closes it. A connection that carried one
/// request/response flow is a per-flow one: its reply's retransmissions are final once the peer closed.
fn accept_one(s: TcpStream, tls: Option<&TlsContext>, out: &Out) {
    let _ = s.set_nodelay(true);
    let Ok(mut s) = Stream::on(s, tls, false) else {
        return;
    };
    let mut served = 0u32;
    let mut last_reply = None;
    // Only after a clean end are the reply's retransmissions final (a reconnecting client resets the
    // connections it abandons).
    let mut clean_end = false;
    loop {
        let (id, data, reply) = match read_header(&mut s) {
            Ok(Some(h)) => h,
            Ok(None) => {
                clean_end = true;
                break;
            }
            Err(_) => break,
        };
        let r = read_exact_discard(&mut s, data).and_then(|()| {
            if reply == 0 {
                finished(out, id);
                Ok(())
            } else {
                write_reply(&mut s, id, reply).and_then(|()| s.flush())
            }
        });
        if let Err(e) = r {
            error(out, id, &e);
            return;
        }
        served += 1;
        last_reply = (reply > 0).then_some(id);
    }
    if let (true, 1, Some(id)) = (clean_end, served, last_reply) {
        retrans(s.tcp(), id, out);
    }
}
