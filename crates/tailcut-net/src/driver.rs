//! What the client and server loops share: the poller, the clock, the sockets and send lanes, the
//! wake-up channel from application threads, the send-loss test hook, and the engine drain.

use crate::client_echo::ClientEcho;
use crate::clock::Clock;
use crate::codec::Codec;
use crate::config::{NetConfig, SendLoss};
use crate::frame::{Control, Preamble, Token, PREAMBLE_BYTES, TOKEN_BYTES};
use crate::io::{PathSocket, RxBufs, TxLanes, RX_SLOTS};
use rand::Rng as _;
use rand::SeedableRng;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use tailcut_proto::rng::Rng;
use tailcut_proto::wire::tcp_udp;
use tailcut_proto::{Dur, Ecn, Time};
use tailcut_sys::poll::{Poller, TIMER_TOKEN};

/// Poller token of the wake-up socket; socket `k` has token `k`.
pub const WAKE_TOKEN: u64 = TIMER_TOKEN - 1;
/// The wake-up byte that stops a runtime thread (any other byte only wakes it).
pub const STOP_BYTE: u8 = 0;
/// `recvmmsg` calls per socket per wake-up, so timers are not starved by a flood.
pub const RX_BUDGET: usize = 64;
/// How far away an armed timer must be to be left in place for a later deadline ([`Driver::arm`]).
const KEEP_ARMED: Dur = Dur(1_000_000);

/// A thread's way to sleep on a driver's fds while another thread may hold the driver (the
/// poller is shared; `epoll_wait` from several threads is safe).
pub struct Sleeper {
    poller: Arc<Poller>,
    spin: Dur,
    clock: Clock,
}

impl Sleeper {
    /// Waits until an fd is ready or the armed timer fires, polling first for `spin` (or until
    /// `deadline`); the ready tokens go to `ready`.
    pub fn sleep(&self, deadline: Option<Time>, ready: &mut Vec<u64>) -> io::Result<()> {
        sleep_on(&self.poller, self.spin, self.clock, deadline, ready)
    }
}

/// [`Sleeper::sleep`] on `poller`; a driver's own wait calls it without making a `Sleeper`.
fn sleep_on(
    poller: &Poller,
    spin: Dur,
    clock: Clock,
    deadline: Option<Time>,
    ready: &mut Vec<u64>,
) -> io::Result<()> {
    if spin > Dur::ZERO {
        let until = clock.now() + spin;
        loop {
            poller.wait(ready, 0)?;
            let now = clock.now();
            if !ready.is_empty() || deadline.is_some_and(|d| d <= now) {
                return Ok(());
            }
            if now >= until {
                break;
            }
            std::hint::spin_loop();
        }
    }
    poller.wait(ready, -1)
}

/// A datagram built but not sent: (socket, destination, ECN, bytes).
pub type HeldDatagram = (usize, SocketAddr, Ecn, Vec<u8>);

/// Room before an in-place payload: the longest preamble (an echo's, with its token) and the
/// longest TCP-in-UDP header.
const HEAD_ROOM_MAX: usize = PREAMBLE_BYTES + TOKEN_BYTES + tcp_udp::MAX_HEADER_BYTES;

/// What the send hook does with one datagram.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Send,
    Drop,
    Twice,
    Hold,
}

pub struct Driver {
    pub clock: Clock,
    poller: Arc<Poller>,
    /// A second poller on the sockets and the same timer, for a client's caller that waits for its
    /// own response ([`Driver::hand_sockets`]); the runtime thread's `poller` stops listening to
    /// them meanwhile.
    caller: Arc<Poller>,
    /// The sockets and timer are the caller poller's ([`Driver::caller_has_sockets`]).
    handed: bool,
    pub socks: Vec<PathSocket>,
    pub lanes: TxLanes,
    pub rx: RxBufs,
    wake: UnixDatagram,
    armed_ns: u64,
    /// The deadline last armed, which a wake-up's lateness is counted against.
    deadline: Option<Time>,
    /// How long [`Driver::wait`] polls before it sleeps (`NetConfig::spin`).
    spin: Dur,
    pub ready: Vec<u64>,
    faults: Option<(SendLoss, Rng)>,
    /// A datagram the reorder hook holds back: (path, socket, destination, ECN, bytes).
    held: Option<(usize, usize, SocketAddr, Ecn, Vec<u8>)>,
    /// The engine's payload of the datagram being built, then the datagram itself (for a codec with
    /// head room, the payload is written into `datagram` behind the room, and `head` holds the
    /// preamble and header until they are put in front of it).
    payload: Vec<u8>,
    datagram: Vec<u8>,
    head: Vec<u8>,
    pub dropped_by_hook: u64,
    /// How late the thread woke past the deadlines it waited for, summed: the host's own delay (the
    /// thread descheduled, or busy past a deadline), not the network's.
    pub late: Dur,
    /// Until when [`Driver::late`] has counted: waits on one past deadline count each stretch of
    /// lateness once.
    late_until: Time,
    /// A client whose server checks its address: what it echoes (empty on a server).
    echo: ClientEcho,
    /// Where the datagrams of one receive call are in the slab, for loops that must handle them
    /// after the call (reused).
    pub batch: Vec<(SocketAddr, Ecn, usize, usize)>,
}

impl Driver {
    pub fn new(socks: Vec<PathSocket>, wake: UnixDatagram, cfg: &NetConfig) -> io::Result<Driver> {
        let poller = Poller::new()?;
        wake.set_nonblocking(true)?;
        poller.add(wake.as_fd(), WAKE_TOKEN)?;
        let caller = poller.sibling()?;
        for (k, s) in socks.iter().enumerate() {
            poller.add(s.socket.as_fd(), k as u64)?;
            caller.add(s.socket.as_fd(), k as u64)?;
        }
        let max = cfg.max_datagram_bytes();
        Ok(Driver {
            clock: Clock::start(),
            poller: Arc::new(poller),
            caller: Arc::new(caller),
            handed: false,
            lanes: TxLanes::new(cfg.paths()),
            socks,
            rx: RxBufs::new()?,
            wake,
            armed_ns: 0,
            deadline: None,
            spin: cfg.spin,
            ready: Vec::with_capacity(64),
            faults: cfg.send_loss.map(|l| (l, Rng::seed_from_u64(l.seed))),
            held: None,
            payload: Vec::with_capacity(max),
            datagram: Vec::with_capacity(max + HEAD_ROOM_MAX),
            head: Vec::with_capacity(HEAD_ROOM_MAX),
            dropped_by_hook: 0,
            late: Dur::ZERO,
            late_until: Time::ZERO,
            echo: ClientEcho::new(cfg.paths()),
            batch: Vec::with_capacity(RX_SLOTS * 64),
        })
    }

    /// Sleeps until an fd is ready or `deadline` passes (nanosecond resolution through the timerfd).
    /// With `spin`, first polls without sleeping for up to that long (or until `deadline`): a
    /// datagram arriving meanwhile is taken without the wake-up's latency, at the price of a busy
    /// core.
    pub fn wait(&mut self, deadline: Option<Time>) -> io::Result<()> {
        self.arm(deadline)?;
        let mut ready = std::mem::take(&mut self.ready);
        sleep_on(&self.poller, self.spin, self.clock, deadline, &mut ready)?;
        self.woke(ready, true);
        Ok(())
    }

    /// Arms the timer for `deadline` and records it as the deadline the next wake-up is measured
    /// against ([`Driver::woke`]). Any thread that holds the driver may call it: a client's caller
    /// that starts a call arms the timer the sleeping runtime thread waits on.
    pub fn arm(&mut self, deadline: Option<Time>) -> io::Result<()> {
        self.deadline = deadline;
        // A later deadline (an RTO pushed on by every ACK) or none leaves an armed timer that is at
        // least `KEEP_ARMED` away: it then wakes the thread early once, to no effect (the loops act
        // on their deadlines, not on the wake-up), at most once per `KEEP_ARMED`. That saved about
        // four `timerfd_settime` calls per 100 KB TCP call. A nearer armed timer is moved, as an
        // early wake-up costs more than the call (pacing and ACK timers move by microseconds).
        let at = deadline.map_or(0, |t| self.clock.deadline_ns(t));
        let keep = self.armed_ns != 0
            && (at == 0 || at > self.armed_ns)
            && self.armed_ns >= self.clock.deadline_ns(self.clock.now()) + KEEP_ARMED.0;
        if at != 0 && at != self.armed_ns && !keep {
            self.poller.set_deadline(at)?;
            self.armed_ns = at;
        }
        Ok(())
    }

    /// Makes the timer fire at once, waking whichever thread listens to it (a closing client's
    /// caller asleep on the sockets); the next [`Driver::arm`] sets it again.
    pub fn fire_timer_now(&mut self) -> io::Result<()> {
        // 1 ns after the clock's start: long past, so the timerfd is readable at once.
        self.poller.set_deadline(1)?;
        self.armed_ns = 1;
        Ok(())
    }

    /// What a thread needs to sleep on this driver's fds without holding the driver.
    pub fn sleeper(&self) -> Sleeper {
        Sleeper {
            poller: self.poller.clone(),
            spin: self.spin,
            clock: self.clock,
        }
    }

    /// A caller has the sockets and the timer ([`Driver::hand_sockets`]): the runtime thread leaves
    /// datagrams and timers to it.
    pub fn caller_has_sockets(&self) -> bool {
        self.handed
    }

    /// The same for a caller that waits on the sockets and the timer ([`Driver::hand_sockets`]).
    pub fn caller_sleeper(&self) -> Sleeper {
        Sleeper {
            poller: self.caller.clone(),
            ..self.sleeper()
        }
    }

    /// Hands the sockets and the timer to the caller's poller (`to_caller`), or back to the runtime
    /// thread's: the poller that does not have them does not listen to them, so one datagram wakes
    /// one thread. Two `epoll_ctl` per socket and one for the timer, against a thread's wake-up.
    pub fn hand_sockets(&mut self, to_caller: bool) -> io::Result<()> {
        // `handed` changes only once every fd is switched: after a failure part-way the sockets
        // count as where they were, and the client closes (`ClientLoop::close_all`).
        if self.handed == to_caller {
            return Ok(());
        }
        for (k, s) in self.socks.iter().enumerate() {
            self.poller.listen(s.socket.as_fd(), k as u64, !to_caller)?;
        }
        self.poller.listen(self.poller.timer(), TIMER_TOKEN, !to_caller)?;
        self.handed = to_caller;
        Ok(())
    }

    /// Takes the readiness a [`Sleeper::sleep`] reported (`ready` gets the old list back, for its
    /// capacity) and counts how late the thread woke past the deadline last armed, if it was the
    /// thread listening to the timer (`timed`): a runtime thread woken by a command while a caller
    /// had the timer ([`Driver::hand_sockets`]) was not late for a deadline the caller kept.
    pub fn woke(&mut self, ready: Vec<u64>, timed: bool) -> Vec<u64> {
        let old = std::mem::replace(&mut self.ready, ready);
        // A fired timer is disarmed (and read) by the wait that saw it, spinning or not: keeping
        // `armed_ns` would leave the timer unarmed for a later deadline, and the thread asleep past it.
        if self.ready.contains(&TIMER_TOKEN) {
            self.armed_ns = 0;
        }
        let now = self.clock.now();
        if timed {
            if let Some(d) = self.deadline {
                let from = d.max(self.late_until);
                if now > from {
                    self.late = self.late + (now - from);
                }
            }
            // Every timed wake-up: a deadline already past at an earlier one counts only from
            // there. An untimed one (a runtime thread woken by a command) must not move it: the
            // thread with the timer may still be late past it.
            self.late_until = self.late_until.max(now);
        }
        old
    }

    /// Empties the wake-up socket (commands travel on a channel); true if a [`STOP_BYTE`] came.
    pub fn drain_wake(&self) -> bool {
        let mut b = [0u8; 64];
        let mut stop = false;
        while let Ok(n) = self.wake.recv(&mut b) {
            if n == 0 {
                break;
            }
            stop |= b[..n].contains(&STOP_BYTE);
        }
        stop
    }

    /// Drains `engine`'s transmits into the send lanes. `dest` maps the engine's path to (socket,
    /// destination); a path with no destination yet drops the datagram (as a dead path would). A
    /// path beyond the lanes shares one (a server has one socket but a path per peer address).
    pub fn drain_transmits<E: Codec>(
        &mut self,
        now: Time,
        engine: &mut E,
        association: u64,
        dest: impl Fn(usize) -> Option<(usize, SocketAddr)>,
    ) {
        self.drain_transmits_within(now, engine, association, None, &mut None, dest);
    }

    /// [`Driver::drain_transmits`] within `budget` bytes, if given: the first datagram that does not
    /// fit is put in `over` (socket, destination, ECN, bytes) instead of being sent, and the drain
    /// stops there (the engine keeps the rest). Returns the bytes sent, and whether the budget
    /// stopped the drain.
    pub fn drain_transmits_within<E: Codec>(
        &mut self,
        now: Time,
        engine: &mut E,
        association: u64,
        budget: Option<u64>,
        over: &mut Option<HeldDatagram>,
        dest: impl Fn(usize) -> Option<(usize, SocketAddr)>,
    ) -> (u64, bool) {
        let lanes = self.lanes_len();
        let mut sent = 0u64;
        loop {
            if budget.is_some_and(|b| sent >= b) || over.is_some() {
                return (sent, budget.is_some());
            }
            // With head room the engine appends its payload behind room for the longest preamble
            // (an echo's, with its token) and the codec's header, so the payload is written once,
            // where the datagram is built, and the header is then put in front of it.
            let room = if E::HEAD_ROOM > 0 {
                PREAMBLE_BYTES + TOKEN_BYTES + E::HEAD_ROOM
            } else {
                0
            };
            self.payload.clear();
            self.datagram.clear();
            self.datagram.resize(room, 0);
            let out = if room > 0 {
                &mut self.datagram
            } else {
                &mut self.payload
            };
            let Some(pkt) = engine.poll_transmit(now, out) else {
                break;
            };
            let path = E::path_of(&pkt);
            let lane = path % lanes;
            let Some((sock, to)) = dest(path) else {
                continue;
            };
            let mut fate = Fate::Send;
            if let Some((f, rng)) = &mut self.faults {
                let touched = f.path.is_none_or(|p| p as usize == path);
                let started = touched && f.after == 0;
                if touched && f.after > 0 {
                    f.after -= 1;
                }
                if started {
                    let r = rng.random::<f64>();
                    fate = if r < f.rate {
                        Fate::Drop
                    } else if r < f.rate + f.duplicate {
                        Fate::Twice
                    } else if r < f.rate + f.duplicate + f.reorder {
                        Fate::Hold
                    } else {
                        Fate::Send
                    };
                }
            }
            if fate == Fate::Drop {
                self.dropped_by_hook += 1;
                continue;
            }
            // The preamble and the engine's bytes go to `head`, or (with room) the preamble and the
            // header do, in front of the payload already in `datagram`.
            let head_out = if room > 0 {
                &mut self.head
            } else {
                &mut self.datagram
            };
            head_out.clear();
            if E::PREAMBLE {
                let p = Preamble {
                    scheme: E::SCHEME,
                    path: lane as u8,
                    association,
                };
                match self.echo.token(lane) {
                    Some(token) => p.write_control(Control::Echo { token, bytes: &[] }, head_out),
                    None => p.write(head_out),
                }
            }
            let preamble = head_out.len();
            let start = if room > 0 {
                if !E::encode_head(&pkt, self.datagram.len() - room, &mut self.head) || self.head.len() > room
                {
                    continue;
                }
                let start = room - self.head.len();
                self.datagram[start..room].copy_from_slice(&self.head);
                start
            } else {
                if !E::encode(&pkt, &self.payload, &mut self.datagram) {
                    continue;
                }
                0
            };
            let datagram = &self.datagram[start..];
            self.echo.sent(lane, sock, to, &datagram[preamble..]);
            // Data is sent with the engine's ECN codepoint (DCTCP's ECT(0)), one `IP_TOS` per batch.
            let ecn = pkt.ecn;
            if budget.is_some_and(|b| sent + datagram.len() as u64 > b) {
                *over = Some((sock, to, ecn, datagram.to_vec()));
                return (sent, true);
            }
            if fate == Fate::Hold && self.held.is_none() {
                self.held = Some((lane, sock, to, ecn, datagram.to_vec()));
                sent += datagram.len() as u64;
                continue;
            }
            self.lanes.push(&self.socks, lane, sock, to, ecn, datagram);
            sent += datagram.len() as u64;
            if fate == Fate::Twice {
                self.lanes.push(&self.socks, lane, sock, to, ecn, datagram);
            }
            self.release_held();
        }
        (sent, false)
    }

    /// Sends a datagram [`Driver::drain_transmits_within`] held back.
    pub fn send_held(&mut self, (sock, to, ecn, bytes): &HeldDatagram) {
        self.lanes.push(&self.socks, 0, *sock, *to, *ecn, bytes);
    }

    /// Queues a datagram the runtime itself sends (a control datagram) on socket `sock`; it bypasses
    /// the send hook.
    pub fn send_raw(&mut self, sock: usize, to: SocketAddr, bytes: &[u8]) {
        self.lanes.push(&self.socks, 0, sock, to, Ecn::NotEct, bytes);
    }

    /// The server's `token` came to socket `k` (from `server`): every later datagram of that lane
    /// echoes it until [`Driver::heard`], and one echo goes at once: of the association's first
    /// datagram if it left there (the server opens nothing until then), else with no engine bytes
    /// (an open association whose server holds back what it sends until the address is shown).
    pub fn echo_first(&mut self, k: usize, server: SocketAddr, scheme: u8, association: u64, token: Token) {
        self.echo.set(k, token);
        let (lane, to, bytes) = self.echo.first_on(k).unwrap_or((k, server, &[]));
        self.datagram.clear();
        Preamble {
            scheme,
            path: lane as u8,
            association,
        }
        .write_control(Control::Echo { token, bytes }, &mut self.datagram);
        self.lanes
            .push(&self.socks, lane, k, to, Ecn::NotEct, &self.datagram);
    }

    /// The server answered: the association is open there, datagrams go plain, and a client keeps
    /// nothing more of them.
    pub fn heard(&mut self) {
        self.echo.heard();
    }

    /// A new association: keep its first datagram (schemes with the preamble, where the runtime's
    /// cookie applies), echo nothing yet.
    pub fn new_association(&mut self, keep_first: bool) {
        self.echo.new_association(keep_first);
    }

    /// The reorder hook's held datagram goes out now, behind what was sent since.
    fn release_held(&mut self) {
        if let Some((path, sock, to, ecn, d)) = self.held.take() {
            self.lanes.push(&self.socks, path, sock, to, ecn, &d);
        }
    }

    fn lanes_len(&self) -> usize {
        self.lanes.len().max(1)
    }

    pub fn flush(&mut self) {
        self.release_held();
        self.lanes.flush(&self.socks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread busy past its deadline counts the overrun as the host's delay; a wait that an fd ends
    /// before its deadline counts none.
    #[test]
    fn lateness_past_a_deadline_is_the_hosts_delay() {
        let (wake, other) = UnixDatagram::pair().unwrap();
        let mut d = Driver::new(Vec::new(), wake, &NetConfig::default()).unwrap();
        let deadline = d.clock.now() + Dur::from_millis(1);
        std::thread::sleep(std::time::Duration::from_millis(30));
        d.wait(Some(deadline)).unwrap();
        assert!(d.late >= Dur::from_millis(29), "{:?}", d.late);
        let before = d.late;
        other.send(&[1]).unwrap();
        let far = d.clock.now() + Dur::from_millis(10_000);
        d.wait(Some(far)).unwrap();
        assert!(d.ready.contains(&WAKE_TOKEN));
        assert_eq!(d.late, before);
    }

    /// Two waits on one deadline already past count the lateness once: the second adds only the
    /// time since the first.
    #[test]
    fn a_past_deadline_waited_on_twice_is_counted_once() {
        let (wake, other) = UnixDatagram::pair().unwrap();
        let mut d = Driver::new(Vec::new(), wake, &NetConfig::default()).unwrap();
        let deadline = d.clock.now() + Dur::from_millis(1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let t0 = d.clock.now();
        d.wait(Some(deadline)).unwrap();
        let first = d.late;
        std::thread::sleep(std::time::Duration::from_millis(5));
        other.send(&[1]).unwrap();
        d.wait(Some(deadline)).unwrap();
        let t2 = d.clock.now();
        assert!(first >= Dur::from_millis(19), "{first:?}");
        // What the second wait adds is at most the time since the first began; counted again from
        // the deadline, it would add the first's 19 ms more.
        assert!(d.late - first <= t2 - t0, "{:?} then {:?}", first, d.late);
    }
}
