//! The agent's event loop: packets from the tap go through the shim (Algorithm 1) and get their
//! verdict at once; the shim's timer (Algorithm 2) runs at its deadline; spoofed ACKs go out through
//! the raw socket; counters are printed as JSON lines. One thread, no locks: the shim is the same
//! `Tracks` value the simulator runs.

use crate::addr6::V6Addrs;
use crate::inject::Injector;
use crate::tap::{PacketTap, TapDir, Tapped};
use crate::wire::{self, Reject};
use serde::Serialize;
use std::io::{self, Write};
use std::os::fd::AsFd;
use tailcut_proto::tracks::Tracks;
use tailcut_proto::{Direction, Dur, Shim, TcpFlags, Time, Verdict};
use tailcut_sys::poll::Poller;
use tailcut_sys::signal::TermSignals;

/// What the agent itself did (the shim's counters are reported beside these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgentCounters {
    pub egress_packets: u64,
    pub ingress_packets: u64,
    /// Of those, IPv6 packets handed to the shim.
    pub ipv6_packets: u64,
    /// Packets passed without the shim seeing them, by reason.
    pub malformed: u64,
    pub not_tcp: u64,
    pub fragments: u64,
    /// Packets the shim dropped (real duplicate ACKs during a recovery). With a backend that decides
    /// in the kernel, these are the shim's verdicts; the kernel's drops are in the backend's counters.
    pub dropped: u64,
    /// Packets whose kernel verdict (a backend that decides in the kernel) differed from the
    /// shim's: duplicates that arrived between the episode's start and the agent's map update, or
    /// after its end and before the removal.
    pub verdict_mismatches: u64,
    pub injected: u64,
    pub inject_errors: u64,
}

const TAP: u64 = 0;
const SIGNALS: u64 = 1;

pub struct Agent<T: PacketTap> {
    tap: T,
    shim: Tracks,
    injector: Injector,
    counters: AgentCounters,
    /// Ids of the IPv6 addresses the shim has seen.
    addrs: V6Addrs,
    /// Monotonic nanoseconds at start: the shim's time zero.
    epoch_ns: u64,
    /// The latest time given to the shim (records from several CPUs may be a little out of order).
    last: Time,
    report_every: Dur,
}

impl<T: PacketTap> Agent<T> {
    pub fn new(tap: T, shim: Tracks, injector: Injector, report_every: Dur) -> Agent<T> {
        // Two addresses per flow the shim may hold, and room for the local ones.
        let addrs = V6Addrs::new(2 * shim.config().max_flows + 64);
        Agent {
            tap,
            shim,
            injector,
            counters: AgentCounters::default(),
            addrs,
            epoch_ns: tailcut_sys::clock::monotonic_ns(),
            last: Time(0),
            report_every,
        }
    }

    fn now(&self) -> Time {
        Time(tailcut_sys::clock::monotonic_ns().saturating_sub(self.epoch_ns))
    }

    /// The shim's time for a packet: when it crossed the hook if the backend says, else now; never
    /// earlier than a time already given.
    fn packet_time(&mut self, p: &Tapped) -> Time {
        let t = match p.at_ns {
            Some(ns) => Time(ns.saturating_sub(self.epoch_ns)),
            None => self.now(),
        };
        self.last = self.last.max(t);
        self.last
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP, writing counter lines to `out`. `signals` must have been
    /// blocked before any thread started.
    pub fn run(&mut self, mut signals: TermSignals, out: &mut dyn Write) -> io::Result<()> {
        let poller = Poller::new()?;
        poller.add(self.tap.as_fd(), TAP)?;
        poller.add(signals.as_fd(), SIGNALS)?;
        let mut ready = Vec::new();
        let mut batch = Vec::new();
        let mut next_report = Time(self.report_every.0);
        // The tap is open and its rules are in place: say so (scripts and tests wait for this line).
        self.report(out, "ready")?;
        loop {
            let wake = self
                .shim
                .poll_timeout()
                .map_or(next_report, |t| t.min(next_report));
            poller.set_deadline(self.epoch_ns + wake.0.max(1))?;
            poller.wait(&mut ready, -1)?;
            if ready.contains(&SIGNALS) && signals.take().is_some() {
                self.report(out, "exit")?;
                return Ok(());
            }
            if ready.contains(&TAP) {
                batch.clear();
                self.tap.recv(&mut batch)?;
                for p in batch.drain(..) {
                    self.on_packet(p)?;
                }
            }
            let now = self.now().max(self.last);
            self.last = now;
            if self.shim.poll_timeout().is_some_and(|t| t <= now) {
                self.shim.handle_timeout(now);
            }
            self.tap.mirror_recovering(&self.shim, &self.addrs);
            self.send_injections(now);
            if now >= next_report {
                self.report(out, "periodic")?;
                next_report = now + self.report_every;
            }
        }
    }

    /// Algorithm 1 on one packet, then its verdict.
    fn on_packet(&mut self, p: Tapped) -> io::Result<()> {
        let now = self.packet_time(&p);
        let pass = shim_packet(
            &mut self.shim,
            &mut self.counters,
            &mut self.addrs,
            now,
            p.dir,
            p.bytes(),
        );
        match p.kernel_dropped {
            Some(dropped) => {
                if dropped == pass {
                    self.counters.verdict_mismatches += 1;
                }
            }
            None => self.tap.verdict(p.id, pass)?,
        }
        // A dropped dupACK may have been replaced at once by the shim's own.
        self.send_injections(now);
        Ok(())
    }

    fn send_injections(&mut self, now: Time) {
        while let Some((dir, pkt)) = self.shim.poll_inject(now) {
            // The shim only injects toward the local host; anything else is not ours to send.
            if dir != Direction::ToHost {
                continue;
            }
            match self.injector.send(&pkt, &self.addrs) {
                Ok(()) => self.counters.injected += 1,
                Err(_) => self.counters.inject_errors += 1,
            }
        }
    }

    /// One JSON line: `{"event":..,"t_ms":..,"agent":{..},"shim":{..},"flows":..,"tap_missed":..,
    /// "tap":{..} or null}`.
    fn report(&self, out: &mut dyn Write, event: &str) -> io::Result<()> {
        let shim: serde_json::Map<String, serde_json::Value> = self
            .shim
            .counters()
            .pairs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into()))
            .collect();
        let line = serde_json::json!({
            "event": event,
            "t_ms": self.now().0 / 1_000_000,
            "agent": self.counters,
            "shim": shim,
            "flows": self.shim.tracked_flows(),
            "tap_missed": self.tap.missed(),
            "tap": self.tap.extra_counters(),
        });
        writeln!(out, "{line}")?;
        out.flush()
    }

    pub fn counters(&self) -> AgentCounters {
        self.counters
    }
}

/// One tapped packet through the shim, counted; whether it may pass. A packet the parser rejects
/// passes untouched. Everything a packet from the network reaches in the agent happens here, apart
/// from the tap's own framing, so the fuzz target (`fuzz/fuzz_targets/packet_path.rs`) calls this.
pub fn shim_packet(
    shim: &mut Tracks,
    counters: &mut AgentCounters,
    addrs: &mut V6Addrs,
    now: Time,
    dir: TapDir,
    bytes: &[u8],
) -> bool {
    match dir {
        TapDir::Egress => counters.egress_packets += 1,
        TapDir::Ingress => counters.ingress_packets += 1,
    }
    let verdict = match wire::parse(bytes) {
        Ok(seg) => {
            let mut pkt = seg.packet;
            if let Some((src, dst)) = seg.v6 {
                pkt.tuple.src = addrs.id(src);
                pkt.tuple.dst = addrs.id(dst);
                counters.ipv6_packets += 1;
            }
            let egress = dir == TapDir::Egress;
            let v = if egress {
                shim.on_egress(now, &mut pkt)
            } else {
                shim.on_ingress(now, &mut pkt)
            };
            // The SYNs say what the shim's packets cannot: MSS and SACK use (after the call above,
            // which creates the entry on the local SYN).
            if pkt.tcp().is_some_and(|h| h.flags.contains(TcpFlags::SYN)) {
                shim.note_syn_options(&pkt, egress, seg.mss, seg.sack_permitted);
            }
            v
        }
        Err(r) => {
            match r {
                Reject::Malformed(_) => counters.malformed += 1,
                Reject::NotTcp => counters.not_tcp += 1,
                Reject::Fragment => counters.fragments += 1,
            }
            Verdict::Pass
        }
    };
    let pass = verdict != Verdict::Drop;
    if !pass {
        counters.dropped += 1;
    }
    pass
}
