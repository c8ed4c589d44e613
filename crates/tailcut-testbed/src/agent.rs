//! The workload agent: one process per host, started inside the host's namespace. It reads its plan
//! (JSON on stdin: the flows it initiates, when, and to whom), serves incoming flows on one port,
//! opens a real socket per flow at its start time, and prints one JSON line per event on stdout:
//! `start` (connector, before `connect`), `finish` (the side that received a flow's data, when the
//! last byte arrived), `retrans` (the data sender's `tcpi_total_retrans` once the peer closed) and
//! `error`. Times are `CLOCK_MONOTONIC` nanoseconds, shared by every process of the machine, so a
//! flow's start and finish, taken by different processes, are on one clock.
//!
//! Wire protocol per connection: a 24-byte header (flow id, data bytes, reply bytes; big-endian u64),
//! then the data; with reply bytes (request/response) the acceptor answers with that many bytes.

use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;
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
    /// `CLOCK_MONOTONIC` time to start at.
    pub start_ns: u64,
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
    Retrans {
        id: u64,
        segments: u32,
    },
    Error {
        id: u64,
        msg: String,
    },
}

const HEADER: usize = 24;
const CHUNK: usize = 64 * 1024;

type Out = Arc<Mutex<io::Stdout>>;

fn emit(out: &Out, e: &Event) {
    if let Ok(line) = serde_json::to_string(e) {
        let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

fn socket(plan: &Plan) -> io::Result<Socket> {
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
    let mut input = String::new();
    io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("agent: stdin: {e}"))?;
    let plan: Plan = serde_json::from_str(&input).map_err(|e| format!("agent: plan: {e}"))?;
    let plan = Arc::new(plan);
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    let listener = socket(&plan).map_err(|e| e.to_string())?;
    listener.set_reuse_address(true).map_err(|e| e.to_string())?;
    let any = SocketAddr::from(([0, 0, 0, 0], plan.port));
    listener
        .bind(&SockAddr::from(any))
        .map_err(|e| format!("agent: bind {any}: {e}"))?;
    listener.listen(1024).map_err(|e| e.to_string())?;
    {
        let out = out.clone();
        std::thread::spawn(move || loop {
            if let Ok((s, _)) = listener.accept() {
                let out = out.clone();
                std::thread::spawn(move || accept_one(s.into(), &out));
            }
        });
    }
    // Tell the emulator we listen, so that no flow starts before every agent does.
    emit(&out, &Event::Ready);
    for f in plan.flows.iter().cloned() {
        let now = monotonic_ns();
        if f.start_ns > now {
            std::thread::sleep(Duration::from_nanos(f.start_ns - now));
        }
        let (plan, out) = (plan.clone(), out.clone());
        std::thread::spawn(move || {
            if let Err(e) = connect_one(&plan, &f, &out) {
                emit(
                    &out,
                    &Event::Error {
                        id: f.id,
                        msg: e.to_string(),
                    },
                );
            }
        });
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn write_zeros(s: &mut TcpStream, mut n: u64) -> io::Result<()> {
    let buf = [0u8; CHUNK];
    while n > 0 {
        let k = n.min(CHUNK as u64) as usize;
        s.write_all(&buf[..k])?;
        n -= k as u64;
    }
    Ok(())
}

fn read_exact_discard(s: &mut TcpStream, mut n: u64) -> io::Result<()> {
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
fn drain_to_eof(s: &mut TcpStream) {
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

fn connect_one(plan: &Plan, f: &PlannedFlow, out: &Out) -> io::Result<()> {
    let s = socket(plan)?;
    emit(
        out,
        &Event::Start {
            id: f.id,
            t: monotonic_ns(),
        },
    );
    s.connect(&SockAddr::from(f.to))?;
    let mut s: TcpStream = s.into();
    s.set_nodelay(true)?;
    let mut header = [0u8; HEADER];
    header[..8].copy_from_slice(&f.id.to_be_bytes());
    header[8..16].copy_from_slice(&f.data.to_be_bytes());
    header[16..].copy_from_slice(&f.reply.to_be_bytes());
    s.write_all(&header)?;
    write_zeros(&mut s, f.data)?;
    if f.reply > 0 {
        read_exact_discard(&mut s, f.reply)?;
        emit(
            out,
            &Event::Finish {
                id: f.id,
                t: monotonic_ns(),
            },
        );
        s.shutdown(Shutdown::Both)?;
    } else {
        s.shutdown(Shutdown::Write)?;
        drain_to_eof(&mut s);
        retrans(&s, f.id, out);
    }
    Ok(())
}

fn accept_one(mut s: TcpStream, out: &Out) {
    let mut header = [0u8; HEADER];
    if s.read_exact(&mut header).is_err() {
        return;
    }
    let word = |i: usize| u64::from_be_bytes(header[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let (id, data, reply) = (word(0), word(1), word(2));
    let r = (|| -> io::Result<()> {
        read_exact_discard(&mut s, data)?;
        if reply == 0 {
            emit(
                out,
                &Event::Finish {
                    id,
                    t: monotonic_ns(),
                },
            );
            s.shutdown(Shutdown::Both)?;
        } else {
            s.set_nodelay(true)?;
            write_zeros(&mut s, reply)?;
            s.shutdown(Shutdown::Write)?;
            drain_to_eof(&mut s);
            retrans(&s, id, out);
        }
        Ok(())
    })();
    if let Err(e) = r {
        emit(
            out,
            &Event::Error {
                id,
                msg: e.to_string(),
            },
        );
    }
}
