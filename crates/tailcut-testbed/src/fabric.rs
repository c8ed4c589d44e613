//! The fabric loop: one thread that reads the hosts' packets from their TUN devices, passes each
//! through the simulator's ports (queue discipline, serialisation at the link rate, link loss,
//! propagation delay) and switches (per-switch salted ECMP on the 5-tuple), applies the fault schedule
//! in real time, and writes packets reaching a host to that host's TUN, with CE set in the IP header
//! when a queue marked them. With a [`Capture`], what it reads and what it writes also go to two pcap
//! files. With shims ([`Fabric::with_shims`]), each NIC's packets pass a host shim (T-RACKs) on their
//! way out of and into the host, and the shim's packets are written like the fabric's own.
//!
//! Time is the simulator's `Time`: nanoseconds since the fabric started, on `CLOCK_MONOTONIC`. A
//! packet read from a TUN enters its NIC port at the moment it was read; inside the fabric every
//! event is handled at its scheduled time (not the moment the loop got to it), so the loop's lateness
//! delays packets but never accumulates into the model's timeline. Lateness is recorded per port.

use crate::addr::AddrTable;
use crate::lateness::Lateness;
use crate::pcap::Capture;
use crate::report::{FabricReport, PortReport, Rejects};
use crate::shim::{Injection, NicShim, ShimReport};
use crate::wire::{self, Reject};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::mpsc::Receiver;
use tailcut_proto::{Dur, Ecn, Time};
use tailcut_sim::arena::{PacketArena, PktId};
use tailcut_sim::fault::{self, FaultAction};
use tailcut_sim::net::port::Service;
use tailcut_sim::net::Network;
use tailcut_sim::topo::NodeKind;
use tailcut_sys::poll::{Poller, TIMER_TOKEN};

/// Largest packet a TUN read can return (an IPv4 total length is 16 bits).
const MAX_PACKET: usize = 65_535;
/// Packets read from one TUN before looking at the others and at due events.
const READ_BATCH: usize = 32;
/// Longest sleep with nothing scheduled, so that a stop request is seen promptly.
const IDLE_WAKE_NS: u64 = 10_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The port's line is free for its next queued packet.
    Wake(u32),
    /// The packet left the port and reaches the port's peer.
    Arrive(u32, PktId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Event {
    at: u64,
    seq: u64,
    kind: Kind,
}

impl Ord for Event {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Tunables of the loop.
#[derive(Clone, Copy, Debug)]
pub struct LoopConfig {
    /// Busy-poll instead of sleeping when the next event is closer than this: the VM's timer wake-ups
    /// come ~35 us late, which would be added to every hop (`docs/testbed.md`).
    pub spin: Dur,
    /// Nice value of the fabric thread (`None`: inherited). The hosts' programs and the kernels' TCP
    /// run on the same CPUs; at the default nice 0 a woken agent thread preempts the fabric in the
    /// middle of a burst, and every packet behind it is late.
    pub nice: Option<i32>,
    /// CPU the fabric thread is pinned to (`None`: any).
    pub cpu: Option<usize>,
    /// `SCHED_FIFO` priority of the fabric thread (`None`: the normal class with `nice`). Measured on
    /// this machine, nice -20 alone still left the fabric runnable but waiting 2-5 ms behind a
    /// compiler's time slice (EEVDF lets the running task finish its slice); a real-time thread
    /// preempts it at once. Falls back to `nice` when the kernel refuses.
    pub fifo: Option<i32>,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            spin: Dur::from_micros(60),
            nice: Some(-20),
            cpu: None,
            fifo: Some(2),
        }
    }
}

pub struct Fabric {
    net: Network,
    arena: PacketArena,
    addrs: AddrTable,
    /// One TUN per address (host NIC), in address order.
    tuns: Vec<File>,
    /// Address -> the host NIC's egress port.
    nic_port: Vec<u32>,
    /// Port -> the address whose TUN receives what the port carries (ports toward a host), or
    /// `u32::MAX`.
    tun_of_port: Vec<u32>,
    events: BinaryHeap<Reverse<Event>>,
    seq: u64,
    faults: Vec<(Dur, FaultAction)>,
    next_fault: usize,
    cfg: LoopConfig,
    epoch_ns: u64,
    /// `CLOCK_REALTIME` at `epoch_ns`: captures carry wall-clock time so that they line up with
    /// other captures and logs of the machine.
    wall_epoch_ns: u64,
    capture: Option<Capture>,
    /// Per address (host NIC), the host shim at that NIC, if the scheme runs one.
    shims: Vec<Option<NicShim>>,
    // Statistics.
    lateness: Vec<Lateness>,
    tun_write_drops: Vec<u64>,
    rejects: Rejects,
    rx: Vec<u8>,
    tx: Vec<u8>,
}

impl Fabric {
    /// A fabric over `net` whose NICs are `tuns` (address order). `faults` are applied at their
    /// times from the start of [`Fabric::run`].
    pub fn new(
        net: Network,
        addrs: AddrTable,
        tuns: Vec<File>,
        mut faults: Vec<(Dur, FaultAction)>,
        cfg: LoopConfig,
    ) -> Fabric {
        let nic_port: Vec<u32> = net.addrs.iter().map(|&(_, p)| p).collect();
        let mut tun_of_port = vec![u32::MAX; net.ports.len()];
        for (a, &p) in nic_port.iter().enumerate() {
            tun_of_port[net.ports[p as usize].reverse as usize] = a as u32;
        }
        faults.sort_by_key(|(t, _)| *t);
        let n_ports = net.ports.len();
        Fabric {
            net,
            arena: PacketArena::default(),
            addrs,
            tuns,
            nic_port,
            tun_of_port,
            events: BinaryHeap::with_capacity(4096),
            seq: 0,
            faults,
            next_fault: 0,
            cfg,
            epoch_ns: 0,
            wall_epoch_ns: 0,
            capture: None,
            shims: Vec::new(),
            lateness: vec![Lateness::default(); n_ports],
            tun_write_drops: vec![0; n_ports],
            rejects: Rejects::default(),
            rx: vec![0; MAX_PACKET],
            tx: Vec::with_capacity(MAX_PACKET),
        }
    }

    /// Writes every packet read from a host's NIC to `capture.sent`, stamped with the moment it was
    /// read (its arrival time in the model), and every packet written to a host's NIC to
    /// `capture.delivered`, stamped with the moment of the write.
    pub fn with_capture(mut self, capture: Capture) -> Fabric {
        self.capture = Some(capture);
        self
    }

    /// Runs `shims[a]` at the NIC of address `a` (address order; `None`: no shim there).
    pub fn with_shims(mut self, shims: Vec<Option<NicShim>>) -> Fabric {
        self.shims = shims;
        self
    }

    fn now(&self) -> u64 {
        tailcut_sys::clock::monotonic_ns().saturating_sub(self.epoch_ns)
    }

    /// Runs until `stop` is set; `control` delivers fault actions to apply at a `CLOCK_MONOTONIC`
    /// time (ns; one already past applies at once).
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        control: &Receiver<(u64, FaultAction)>,
    ) -> io::Result<FabricReport> {
        let poller = Poller::new()?;
        for (i, t) in self.tuns.iter().enumerate() {
            poller.add(t.as_fd(), i as u64)?;
        }
        // Best effort: without it sleeps end up to 50 us late, which the spin mostly hides.
        let _ = tailcut_sys::clock::set_timer_slack_ns(1);
        // Best effort too (both need root, as the testbed does): a run without them is still a run,
        // and its lateness says how well it kept time.
        let fifo = self
            .cfg
            .fifo
            .is_some_and(|p| tailcut_sys::sched::set_current_thread_fifo(p).is_ok());
        if let (false, Some(n)) = (fifo, self.cfg.nice) {
            let _ = tailcut_sys::sched::set_current_thread_nice(n);
        }
        if let Some(c) = self.cfg.cpu {
            let _ = tailcut_sys::sched::pin_current_thread(&[c]);
        }
        self.epoch_ns = tailcut_sys::clock::monotonic_ns();
        let wall = tailcut_sys::clock::realtime_ns();
        self.wall_epoch_ns = wall.saturating_sub(tailcut_sys::clock::monotonic_ns() - self.epoch_ns);
        let mut ready = Vec::with_capacity(64);
        while !stop.load(AtomicOrdering::Relaxed) {
            let now = self.now();
            while let Ok((at, a)) = control.try_recv() {
                self.faults.push((Dur(at.saturating_sub(self.epoch_ns)), a));
                self.faults[self.next_fault..].sort_by_key(|(t, _)| *t);
            }
            self.apply_due_faults(now);
            self.run_due_events();
            self.run_due_shims(now);
            let now = self.now();
            let next = self.next_deadline();
            let timeout_ms = match next {
                Some(at) if at <= now + self.cfg.spin.0 => 0,
                next => {
                    let wake = next.map_or(now + IDLE_WAKE_NS, |at| at - self.cfg.spin.0);
                    let wake = match self.faults.get(self.next_fault) {
                        Some((t, _)) => wake.min(t.0),
                        None => wake,
                    };
                    poller.set_deadline(self.epoch_ns + wake.min(now + IDLE_WAKE_NS))?;
                    -1
                }
            };
            poller.wait(&mut ready, timeout_ms)?;
            for &token in &ready {
                if token != TIMER_TOKEN {
                    self.read_tun(token as usize);
                }
            }
        }
        let mut report = self.report();
        report.capture = self.capture.take().map(Capture::finish);
        Ok(report)
    }

    /// The earliest port event or shim timer.
    fn next_deadline(&self) -> Option<u64> {
        let event = self.events.peek().map(|Reverse(e)| e.at);
        let shim = self
            .shims
            .iter()
            .flatten()
            .filter_map(|s| s.poll_timeout())
            .map(|t| t.0)
            .min();
        match (event, shim) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn run_due_shims(&mut self, now: u64) {
        for a in 0..self.shims.len() {
            let Some(s) = &mut self.shims[a] else {
                continue;
            };
            if s.poll_timeout().is_some_and(|t| t.0 <= now) {
                s.handle_timeout(Time(now));
                self.inject(a, now);
            }
        }
    }

    /// Writes what the shim of address `a` has to send: spoofed ACKs into the host's TUN, anything
    /// for the network into the NIC's port.
    fn inject(&mut self, a: usize, now: u64) {
        while let Some(i) = self.shims[a].as_mut().and_then(|s| s.poll_inject(Time(now))) {
            match i {
                Injection::ToHost(bytes) => {
                    if !self.write_tun(a, u32::MAX, &bytes) {
                        if let Some(s) = self.shims[a].as_mut() {
                            s.write_failed();
                        }
                    }
                }
                Injection::ToNetwork(bytes) => self.enter(a, now, &bytes),
            }
        }
    }

    fn apply(&mut self, a: &FaultAction) {
        if fault::apply(&mut self.net, a) {
            self.net.recompute_routes();
        }
    }

    fn apply_due_faults(&mut self, now: u64) {
        while let Some((t, _)) = self.faults.get(self.next_fault) {
            if t.0 > now {
                break;
            }
            let a = self.faults[self.next_fault].1.clone();
            self.apply(&a);
            self.next_fault += 1;
        }
    }

    fn push(&mut self, at: Time, kind: Kind) {
        self.seq += 1;
        self.events.push(Reverse(Event {
            at: at.0,
            seq: self.seq,
            kind,
        }));
    }

    fn run_due_events(&mut self) {
        while let Some(Reverse(e)) = self.events.peek().copied() {
            // The clock is read again for every event: handling one (a TUN write runs the receiving
            // host's whole RX path in this thread) delays the next, and that delay is lateness too.
            let now = self.now();
            if e.at > now {
                break;
            }
            self.events.pop();
            match e.kind {
                Kind::Wake(p) => {
                    self.lateness[p as usize].record(now - e.at);
                    let s = self.net.ports[p as usize].wake(Time(e.at), &self.arena);
                    self.serve(p, s);
                }
                Kind::Arrive(p, id) => {
                    self.lateness[p as usize].record(now - e.at);
                    let node = self.net.ports[p as usize].peer;
                    if self.net.nodes[node as usize].kind == NodeKind::Host {
                        self.deliver(p, id);
                    } else {
                        self.forward(node, id, Time(e.at));
                    }
                }
            }
        }
    }

    /// Acts on what a port did with an offered or woken packet.
    #[inline]
    fn serve(&mut self, port: u32, s: Service) {
        for id in s.dropped.into_iter().flatten() {
            self.arena.remove(id);
        }
        if let Some(d) = s.sent {
            match d.arrives {
                Some(at) => self.push(at, Kind::Arrive(port, d.id)),
                None => {
                    self.arena.remove(d.id);
                }
            }
        }
        if let Some(at) = s.wake_at {
            self.push(at, Kind::Wake(port));
        }
    }

    fn offer(&mut self, port: u32, at: Time, id: PktId) {
        let s = self.net.ports[port as usize].offer(at, id, &mut self.arena);
        self.serve(port, s);
    }

    fn forward(&mut self, node: u32, id: PktId, at: Time) {
        let pkt = self.arena.get_mut(id);
        match self.net.routes.egress(node, &pkt.tuple, &mut pkt.route) {
            Some(q) => self.offer(q, at, id),
            None => {
                self.rejects.no_route += 1;
                self.arena.remove(id);
            }
        }
    }

    /// Writes a packet that reached its host to the host's TUN.
    fn deliver(&mut self, port: u32, id: PktId) {
        let pkt = *self.arena.get(id);
        let tun = self.tun_of_port[port as usize];
        if tun == u32::MAX {
            self.rejects.cut_delivered += u64::from(pkt.trimmed);
            self.arena.remove(id);
            return;
        }
        self.tx.clear();
        self.tx.extend_from_slice(self.arena.payload(id));
        // A cut packet reaches the host as its header alone when a receiver there understands it (a
        // tailcut-net TCP-in-UDP segment: CP's receiver lives in our engines); a kernel TCP segment
        // has none, so the cut is a loss there, counted apart from drops.
        if pkt.trimmed {
            if !wire::cut_encapsulated(&mut self.tx) {
                self.rejects.cut_delivered += 1;
                self.arena.remove(id);
                return;
            }
            self.rejects.cut_forwarded += 1;
        }
        if pkt.ecn == Ecn::Ce {
            wire::set_ce(&mut self.tx);
        }
        self.arena.remove(id);
        let tx = std::mem::take(&mut self.tx);
        let a = tun as usize;
        let now = self.now();
        let pass = match &mut self.shims.get_mut(a) {
            Some(Some(s)) => s.packet(Time(now), false, &tx),
            _ => true,
        };
        if pass {
            self.write_tun(a, port, &tx);
        }
        self.tx = tx;
        if matches!(self.shims.get(a), Some(Some(_))) {
            self.inject(a, now);
        }
    }

    /// Writes one packet into the TUN of address `a`; whether the TUN took it. A refused write counts
    /// against `port`, the port toward the host (`u32::MAX` for a shim's own packet: the caller
    /// counts that one with the shim).
    fn write_tun(&mut self, a: usize, port: u32, bytes: &[u8]) -> bool {
        if (&self.tuns[a]).write(bytes).is_err() {
            if let Some(d) = self.tun_write_drops.get_mut(port as usize) {
                *d += 1;
            }
            return false;
        }
        if self.capture.is_some() {
            let t = self.wall_epoch_ns + self.now();
            if let Some(c) = &mut self.capture {
                c.delivered.write(t, bytes);
            }
        }
        true
    }

    fn read_tun(&mut self, i: usize) {
        for _ in 0..READ_BATCH {
            let n = match (&self.tuns[i]).read(&mut self.rx) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.rejects.read_errors += 1;
                    return;
                }
            };
            self.rejects.packets_read += 1;
            let now = self.now();
            if let Some(c) = &mut self.capture {
                c.sent.write(self.wall_epoch_ns + now, &self.rx[..n]);
            }
            let rx = std::mem::take(&mut self.rx);
            if let Some(Some(s)) = self.shims.get_mut(i) {
                let pass = s.packet(Time(now), true, &rx[..n]);
                if pass {
                    self.enter(i, now, &rx[..n]);
                }
                self.inject(i, now);
            } else {
                self.enter(i, now, &rx[..n]);
            }
            self.rx = rx;
            // Between packets, not only between batches: each read costs a few microseconds, and an
            // event due meanwhile would wait for the rest of the batch (one clock read per packet).
            self.run_due_events();
        }
    }

    /// A packet leaving the NIC of address `a` enters the fabric at its port.
    fn enter(&mut self, a: usize, now: u64, bytes: &[u8]) {
        let addrs = &self.addrs;
        match wire::parse(bytes, |ip| addrs.lookup(ip)) {
            Ok(pkt) => {
                let id = self.arena.insert(pkt);
                self.arena.set_payload(id, bytes);
                self.offer(self.nic_port[a], Time(now), id);
            }
            Err(Reject::Malformed) => self.rejects.malformed += 1,
            Err(Reject::Protocol) => self.rejects.other_protocol += 1,
            Err(Reject::Fragment) => self.rejects.fragment += 1,
            Err(Reject::UnknownDst) => self.rejects.unknown_dst += 1,
        }
    }

    fn report(&self) -> FabricReport {
        let mut all = Lateness::default();
        let ports = self
            .net
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                all.merge(&self.lateness[i]);
                PortReport {
                    port: i as u32,
                    node: self.net.nodes[p.node as usize].name.clone(),
                    peer: self.net.nodes[p.peer as usize].name.clone(),
                    counters: *p.counters(),
                    lateness: self.lateness[i].summary(),
                    tun_write_drops: self.tun_write_drops[i],
                }
            })
            .collect();
        let shims = (!self.shims.is_empty()).then(|| {
            let mut r = ShimReport::default();
            self.shims.iter().flatten().for_each(|s| r.add(s));
            r
        });
        FabricReport {
            shims,
            elapsed_ns: self.now(),
            ports,
            rejects: self.rejects,
            in_flight: self.arena.live() as u64,
            lateness: all.summary(),
            capture: None,
        }
    }
}

#[cfg(test)]
mod tests;
