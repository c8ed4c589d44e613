//! The kernel agent's reconnecting RPC client: the `tcp_reconnect` and `dctcp_reconnect` schemes on
//! Linux's TCP, as the simulator runs them (`tailcut_proto::reconnect`, DCQUIC Sec. 4.3's baseline).
//!
//! A client's calls go out in order on one connection and are answered in order. When the oldest
//! unanswered call has made no progress for `reconnect_after` (no response byte arrived since the
//! clock last started: when a call found none outstanding, at the last progress, or at the last
//! reconnection), the client abandons the connection (reset, its unsent data dropped), opens a new
//! one bound to its host's next NIC address and re-sends every unanswered call there, in order. The
//! server answers them as any call: it serves each connection's requests in order. As in the
//! simulator, a host with one NIC never reconnects (its client is then its base scheme's).
//!
//! Progress is what a kernel socket shows the application: response bytes. The simulator's model
//! also counts a whole request being acknowledged, which a socket does not show; with responses
//! streamed back as each request is served the two differ only while a request is still being sent.

use crate::agent::{
    error, finished, port, read_reply, send_flow, socket, started, Event, Out, Plan, PlannedFlow,
};
use serde::{Deserialize, Serialize};
use socket2::{SockAddr, SockRef, Socket};
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tailcut_sys::clock::monotonic_ns;

/// How a host's kernel clients reconnect (the plan of a `*_reconnect` scheme).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReconnectPlan {
    /// The scheme's `reconnect_after` (ns).
    pub after_ns: u64,
    /// This host's NIC addresses, first NIC first: a client connects from the first and moves to the
    /// next at each reconnection.
    pub nics: Vec<IpAddr>,
}

/// The client's state, shared by the thread feeding it calls, its writer, its connections' readers
/// and its monitor (which connects and reconnects).
struct State {
    /// Unanswered calls, in the order they were issued (and are answered: one connection, in order).
    outstanding: VecDeque<PlannedFlow>,
    /// How many of `outstanding` went onto the current connection.
    written: usize,
    /// Connection attempts so far; a reader or writer of an older one is stale.
    gen: u64,
    conn: Option<TcpStream>,
    /// The NIC of the current connection (index into `ReconnectPlan::nics`).
    nic: usize,
    /// Start of the no-progress clock.
    last_progress: u64,
    /// No more calls will come (a per-flow connection's single call was handed over).
    closed: bool,
    /// The client failed for good (one NIC: nowhere to reconnect to); later calls report this.
    failed: Option<String>,
    /// The client is over: every thread leaves.
    stop: bool,
    /// The host has several NICs, so a stalled call makes the client reconnect.
    several: bool,
}

struct Shared {
    st: Mutex<State>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.cv.wait(g).unwrap_or_else(|e| e.into_inner())
    }
}

/// Drops a connection for good: shutting it down wakes the threads blocked on it, and a zero linger
/// makes the close reset it instead of leaving its unsent requests to be retransmitted.
fn abandon(s: &TcpStream) {
    let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
    let _ = s.shutdown(Shutdown::Both);
}

/// Fails every outstanding call with `e` (and, through `failed`, every later one): on one NIC a broken
/// connection has no replacement.
fn fail(sh: &Shared, g: &mut State, e: &io::Error, out: &Out) {
    if g.failed.is_none() {
        g.failed = Some(e.to_string());
    }
    for f in g.outstanding.drain(..) {
        error(out, f.id, e);
    }
    g.written = 0;
    if let Some(c) = g.conn.take() {
        abandon(&c);
    }
    sh.cv.notify_all();
}

/// Runs one reconnecting client over the calls `flows` hands over (a persistent connection's, or a
/// per-flow connection's single call, after which the channel closes and the client ends once it is
/// answered).
pub(crate) fn client(plan: &Plan, rp: &ReconnectPlan, flows: Receiver<PlannedFlow>, out: &Out) {
    let sh = Arc::new(Shared {
        st: Mutex::new(State {
            outstanding: VecDeque::new(),
            written: 0,
            gen: 0,
            conn: None,
            nic: 0,
            last_progress: monotonic_ns(),
            closed: false,
            failed: None,
            stop: false,
            several: rp.nics.len() > 1,
        }),
        cv: Condvar::new(),
    });
    let monitor = {
        let (sh, plan, rp, out) = (sh.clone(), plan.clone(), rp.clone(), out.clone());
        std::thread::spawn(move || monitor(&sh, &plan, &rp, &out))
    };
    {
        let (sh, out) = (sh.clone(), out.clone());
        std::thread::spawn(move || writer(&sh, &out));
    }
    for f in flows {
        started(out, f.id);
        let mut g = sh.lock();
        if let Some(e) = &g.failed {
            error(out, f.id, &io::Error::other(e.clone()));
            continue;
        }
        // As the simulator's model: the no-progress clock starts when a call finds none pending.
        if g.outstanding.is_empty() {
            g.last_progress = monotonic_ns();
        }
        g.outstanding.push_back(f);
        sh.cv.notify_all();
    }
    sh.lock().closed = true;
    sh.cv.notify_all();
    let _ = monitor.join();
}

/// Connects from `from` to `to`; with `timeout`, gives up after it.
fn connect_from(
    plan: &Plan,
    from: IpAddr,
    to: SocketAddr,
    timeout: Option<Duration>,
) -> io::Result<TcpStream> {
    let s: Socket = socket(plan)?;
    s.bind(&SockAddr::from(SocketAddr::new(from, 0)))?;
    s.set_tcp_nodelay(true)?;
    match timeout {
        Some(t) => s.connect_timeout(&SockAddr::from(to), t.max(Duration::from_millis(1)))?,
        None => s.connect(&SockAddr::from(to))?,
    }
    Ok(s.into())
}

/// Opens the first connection, applies the reconnection rule, and ends the client once it is closed
/// and answered.
fn monitor(sh: &Arc<Shared>, plan: &Plan, rp: &ReconnectPlan, out: &Out) {
    let after = rp.after_ns;
    let several = rp.nics.len() > 1;
    let mut g = sh.lock();
    loop {
        if g.stop {
            return;
        }
        let now = monotonic_ns();
        if g.outstanding.is_empty() && (g.closed || g.failed.is_some()) {
            // Over: a per-flow connection ends as the agent's others do, closed after its reply.
            g.stop = true;
            if let Some(c) = g.conn.take() {
                let _ = c.shutdown(Shutdown::Write);
            }
            sh.cv.notify_all();
            return;
        }
        let first = g.gen == 0 && !g.outstanding.is_empty();
        let due = g.last_progress + after;
        let stalled = several && g.gen > 0 && !g.outstanding.is_empty() && now >= due;
        if !(first || stalled) {
            g = if several && !g.outstanding.is_empty() && g.gen > 0 {
                let wait = Duration::from_nanos(due.saturating_sub(now));
                sh.cv.wait_timeout(g, wait).unwrap_or_else(|e| e.into_inner()).0
            } else {
                sh.wait(g)
            };
            continue;
        }
        if stalled {
            g.nic = (g.nic + 1) % rp.nics.len();
            if let Some(old) = g.conn.take() {
                abandon(&old);
            }
            emit_reconnect(out, &g, now);
        }
        g.gen += 1;
        g.written = 0;
        g.last_progress = now;
        let (gen, nic) = (g.gen, g.nic);
        let to = g.outstanding.front().expect("checked").to;
        sh.cv.notify_all();
        drop(g);
        // With somewhere to reconnect to, a connection that does not open within the rule's time is
        // given up as a stalled one would be; with one NIC, the kernel's own SYN retries decide.
        let timeout = several.then(|| Duration::from_nanos(after));
        let opened = connect_from(plan, rp.nics[nic], to, timeout).and_then(|s| Ok((s.try_clone()?, s)));
        g = sh.lock();
        if g.gen != gen || g.stop {
            continue;
        }
        match opened {
            Ok((reader, s)) => {
                g.conn = Some(s);
                let (sh, out) = (sh.clone(), out.clone());
                std::thread::spawn(move || read_replies(&sh, gen, reader, &out));
            }
            // Several NICs: the rule moves on from here when the clock runs out.
            Err(_) if several => {}
            Err(e) => fail(sh, &mut g, &e, out),
        }
        sh.cv.notify_all();
    }
}

fn emit_reconnect(out: &Out, g: &State, t: u64) {
    let resent: Vec<u64> = g.outstanding.iter().map(|f| f.id).collect();
    crate::agent::emit(
        out,
        &Event::Reconnect {
            id: resent[0],
            nic: g.nic as u32,
            resent,
            t,
        },
    );
}

/// Writes the calls in order onto the current connection; after a reconnection starts over from the
/// first unanswered call.
fn writer(sh: &Shared, out: &Out) {
    let mut conn: Option<(u64, TcpStream)> = None;
    loop {
        let (gen, f) = {
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
                        if g.nics_one() {
                            fail(sh, &mut g, &e, out);
                        }
                        continue;
                    }
                    None => continue,
                }
            }
            let f = g.outstanding[g.written].clone();
            g.written += 1;
            (g.gen, f)
        };
        let Some((_, s)) = conn.as_mut() else {
            continue;
        };
        port(out, f.id, s);
        if let Err(e) = send_flow(s, &f) {
            let mut g = sh.lock();
            if g.gen == gen && !g.stop && g.nics_one() {
                fail(sh, &mut g, &e, out);
            } else {
                // Abandoned by a reconnection, or broken with another NIC to go to: wait for the
                // next connection (the rule opens it when the clock runs out).
                while !g.stop && g.gen == gen {
                    g = sh.wait(g);
                }
            }
        }
    }
}

impl State {
    /// Whether this client has a single NIC: it never reconnects then, so a broken connection fails
    /// its calls.
    fn nics_one(&self) -> bool {
        !self.several
    }
}

/// Reads the responses of connection `gen`, each the answer of the oldest unanswered call; every byte
/// is progress.
fn read_replies(sh: &Shared, gen: u64, mut s: TcpStream, out: &Out) {
    loop {
        let f = {
            let mut g = sh.lock();
            loop {
                if g.stop || g.gen != gen {
                    return;
                }
                if let Some(f) = g.outstanding.front() {
                    break f.clone();
                }
                g = sh.wait(g);
            }
        };
        let progress = |n: usize| {
            let mut g = sh.lock();
            if g.gen != gen {
                return false;
            }
            if n > 0 {
                g.last_progress = monotonic_ns();
            }
            true
        };
        match read_reply(&mut s, &f, progress) {
            Ok(true) => {
                let mut g = sh.lock();
                if g.gen != gen {
                    return;
                }
                g.outstanding.pop_front();
                g.written = g.written.saturating_sub(1);
                finished(out, f.id);
                sh.cv.notify_all();
            }
            // Abandoned: a newer connection carries the call.
            Ok(false) => return,
            Err(e) => {
                let mut g = sh.lock();
                if g.gen == gen && !g.stop && g.nics_one() {
                    fail(sh, &mut g, &e, out);
                }
                return;
            }
        }
    }
}
