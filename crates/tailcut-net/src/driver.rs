//! What the client and server loops share: the poller, the clock, the sockets and send lanes, the
//! wake-up channel from application threads, the send-loss test hook, and the engine drain.

use crate::clock::Clock;
use crate::config::NetConfig;
use crate::frame::{Preamble, SCHEME_CLOUDBURST};
use crate::io::{PathSocket, RxBufs, TxLanes, RX_SLOTS};
use rand::Rng as _;
use rand::SeedableRng;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixDatagram;
use tailcut_proto::cloudburst::CloudBurstEndpoint;
use tailcut_proto::rng::Rng;
use tailcut_proto::{Ecn, Engine, Route, Time};
use tailcut_sys::poll::{Poller, TIMER_TOKEN};

/// Poller token of the wake-up socket; socket `k` has token `k`.
pub const WAKE_TOKEN: u64 = TIMER_TOKEN - 1;
/// The wake-up byte that stops a runtime thread (any other byte only wakes it).
pub const STOP_BYTE: u8 = 0;
/// `recvmmsg` calls per socket per wake-up, so timers are not starved by a flood.
pub const RX_BUDGET: usize = 64;

pub struct Driver {
    pub clock: Clock,
    poller: Poller,
    pub socks: Vec<PathSocket>,
    pub lanes: TxLanes,
    pub rx: RxBufs,
    wake: UnixDatagram,
    armed_ns: u64,
    pub ready: Vec<u64>,
    loss: Option<(f64, Option<u32>, Rng)>,
    /// The engine's payload of the datagram being built, then the datagram itself.
    payload: Vec<u8>,
    datagram: Vec<u8>,
    pub dropped_by_hook: u64,
    /// Where the datagrams of one receive call are in the slab, for loops that must handle them
    /// after the call (reused).
    pub batch: Vec<(SocketAddr, Ecn, usize, usize)>,
}

impl Driver {
    pub fn new(socks: Vec<PathSocket>, wake: UnixDatagram, cfg: &NetConfig) -> io::Result<Driver> {
        let poller = Poller::new()?;
        wake.set_nonblocking(true)?;
        poller.add(wake.as_fd(), WAKE_TOKEN)?;
        for (k, s) in socks.iter().enumerate() {
            poller.add(s.socket.as_fd(), k as u64)?;
        }
        let max = cfg.cloudburst.symbol_bytes as usize + 64;
        Ok(Driver {
            clock: Clock::start(),
            poller,
            lanes: TxLanes::new(cfg.cloudburst.paths as usize),
            socks,
            rx: RxBufs::default(),
            wake,
            armed_ns: 0,
            ready: Vec::with_capacity(64),
            loss: cfg
                .send_loss
                .map(|l| (l.rate, l.path, Rng::seed_from_u64(l.seed))),
            payload: Vec::with_capacity(max),
            datagram: Vec::with_capacity(max),
            dropped_by_hook: 0,
            batch: Vec::with_capacity(RX_SLOTS * 64),
        })
    }

    /// Sleeps until an fd is ready or `deadline` passes (nanosecond resolution through the timerfd).
    pub fn wait(&mut self, deadline: Option<Time>) -> io::Result<()> {
        let at = deadline.map_or(0, |t| self.clock.deadline_ns(t));
        if at != self.armed_ns {
            self.poller.set_deadline(at)?;
            self.armed_ns = at;
        }
        self.poller.wait(&mut self.ready, -1)?;
        if self.ready.contains(&TIMER_TOKEN) {
            // The timerfd fired and is disarmed now; re-arm on the next wait even if equal.
            self.armed_ns = 0;
        }
        Ok(())
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

    /// Drains `engine`'s transmits into the send lanes. `dest` maps a path to (socket, destination);
    /// a path with no destination yet drops the datagram (as a dead path would).
    pub fn drain_transmits(
        &mut self,
        now: Time,
        engine: &mut CloudBurstEndpoint,
        association: u64,
        dest: impl Fn(usize) -> Option<(usize, SocketAddr)>,
    ) {
        let lanes = self.lanes_len();
        loop {
            self.payload.clear();
            let Some(pkt) = engine.poll_transmit(now, &mut self.payload) else {
                break;
            };
            let path = match pkt.route {
                Route::Path(p) => p as usize % lanes,
                Route::Ecmp => 0,
            };
            let Some((sock, to)) = dest(path) else {
                continue;
            };
            if let Some((rate, only, rng)) = &mut self.loss {
                let here = only.is_none_or(|p| p as usize == path);
                if here && rng.random::<f64>() < *rate {
                    self.dropped_by_hook += 1;
                    continue;
                }
            }
            self.datagram.clear();
            Preamble {
                scheme: SCHEME_CLOUDBURST,
                path: path as u8,
                association,
            }
            .write(&mut self.datagram);
            self.datagram.extend_from_slice(&self.payload);
            self.lanes.push(&self.socks, path, sock, to, &self.datagram);
        }
    }

    fn lanes_len(&self) -> usize {
        self.lanes.len().max(1)
    }

    pub fn flush(&mut self) {
        self.lanes.flush(&self.socks);
    }
}
