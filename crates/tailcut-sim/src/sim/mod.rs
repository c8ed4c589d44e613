//! The simulation of one scheme: the event loop. What each event does lives with its subject: the
//! ports and links a packet crosses (`ports.rs`), the hosts with their engines, shim and NIC queue
//! (`host.rs`), the application's flows, RPCs, connections and replicas (`app.rs`), and the records
//! of a run (`records.rs`).
//!
//! Every packet costs O(1) work per hop (one enqueue, one transmission, one arrival), independent of
//! the number of flows: no per-packet scans over flows, and forwarding is a table lookup.

mod app;
mod demux;
mod host;
mod partition;
mod ports;
mod records;
mod trace;

use crate::arena::PacketArena;
use crate::event::{EngineId, Event, EventQueue};
use crate::fault::{self, FaultAction};
use crate::hash::FxMap;
use crate::metrics::{Conservation, PathInfo};
use crate::net::Network;
use crate::transport::Transport;
use crate::workload::FlowSpec;
use app::FlowState;
use demux::Demux;
pub use partition::EventCount;
pub(crate) use partition::NoCount;
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::{AppEvent, Dur, Engine, Shim, Time};

/// How a workload component maps flows onto connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnMode {
    /// A fresh connection per flow.
    PerFlow,
    /// `n` long-lived connections per (client, server) pair, used round robin.
    Persistent(u32),
}

/// Per-component settings of one run.
pub struct ComponentRun {
    pub transport: Transport,
    pub conn_mode: ConnMode,
}

struct EngineSlot {
    engine: Box<dyn Engine>,
    host: u32,
    /// The connection this engine is one end of.
    conn: u32,
    /// Time of the pending timer event for this engine, `Time::MAX` if none.
    scheduled: Time,
    /// Bytes of this engine's packets waiting in its host's NIC queue (counted only with a host-queue
    /// budget, `host_tsq`).
    nic_bytes: u64,
    /// The engine was not polled because `nic_bytes` exceeded the budget; it is woken when they drain.
    held: bool,
    /// The engine reported `Connected` (its handshake, if any, is done).
    connected: bool,
    /// Its budget of bytes in the NIC queue (`u64::MAX` = none; see `topo::HostTsq::budget`).
    tsq_limit: u64,
}

/// Why a run ended (`stop_reason` in `runs.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every flow finished.
    AllFinished,
    /// The next event lay after `max_time`.
    MaxTime,
    /// The stall watchdog fired: no packet reached a host for `stall_timeout`, with no flow arrival or
    /// fault left to come.
    Stalled,
    /// No event was left (every engine idle with flows unfinished, e.g. after giving up).
    NoEvents,
    /// The caller cancelled the run.
    Cancelled,
}

/// The stall watchdog's state. It is consulted only when an event's time passes `at` (which replaces
/// the loop's `max_time` comparison, so it costs nothing per event) and compares a counter the hosts
/// keep anyway (packets delivered), so the hot path is untouched.
struct Watchdog {
    /// `Dur(0)` = off.
    timeout: Dur,
    /// The next check: `min(max_time, from + timeout)`.
    at: Time,
    /// The start of the current window (the previous check).
    from: Time,
    /// Packets delivered to hosts at `from`.
    delivered: u64,
    /// The last flow arrival or fault: before it the network may still change, so no stall.
    last_scheduled: Time,
}

/// One connection: engine of the data sender (`a`, at the flow's `src`) and of the receiver (`b`).
struct Conn {
    a: EngineId,
    b: EngineId,
}

/// `TRACED` compiles a traced run's hooks in (`run::run_traced`); an untraced `Sim` has none, so
/// tracing costs the simulation nothing (an `Option` test per hop cost ~3% of its instructions).
pub struct Sim<'a, const TRACED: bool = false> {
    now: Time,
    max_time: Time,
    seed: u64,
    events: EventQueue,
    arena: PacketArena,
    pub net: Network,
    engines: Vec<EngineSlot>,
    demux: Demux,
    shims: Vec<Option<Box<dyn Shim>>>,
    /// Some host has a shim: without any, a packet's way in or out of a host skips the look-up.
    any_shim: bool,
    shim_scheduled: Vec<Time>,
    flows: &'a [FlowSpec],
    flow_state: Vec<FlowState>,
    components: &'a [ComponentRun],
    conns: Vec<Conn>,
    pool: FxMap<(u32, u32, u32, u32), u32>,
    round_robin: FxMap<(u32, u32, u32), u32>,
    next_port: Vec<u16>,
    conn_rng: rng::Rng,
    faults: Vec<(Dur, FaultAction)>,
    drain_stack: Vec<EngineId>,
    app_events: Vec<(EngineId, AppEvent)>,
    payload_buf: Vec<u8>,
    rx_payload: Vec<u8>,
    flows_started: usize,
    flows_finished: usize,
    paths: FxMap<(u32, u32), PathInfo>,
    cons: Conservation,
    /// TCP small queues: whether engines have a budget of bytes in their NIC queue (each slot's
    /// `tsq_limit`). docs/simulator.md, "TCP small queues".
    tsq_on: bool,
    /// The `check_bytes` mode, when on.
    byte_check: Option<Box<app::ByteCheck>>,
    /// The applications' wake-ups (`host_delay`) per component, and the work waiting for them.
    app_delay: app::AppDelay,
    /// Times an engine was held back by `host_tsq`.
    tsq_holds: u64,
    watchdog: Watchdog,
    stop: StopReason,
    /// The record of a traced run (`tailcut trace`); always `None` when `TRACED` is false.
    trace: Option<Box<crate::trace::Tracer>>,
}

impl<'a> Sim<'a> {
    pub fn new(
        net: Network,
        flows: &'a [FlowSpec],
        components: &'a [ComponentRun],
        faults: Vec<(Dur, FaultAction)>,
        seed: u64,
        max_time: Dur,
    ) -> Sim<'a> {
        Sim::build(net, flows, components, faults, seed, max_time)
    }
}

impl<'a, const TRACED: bool> Sim<'a, TRACED> {
    pub(crate) fn build(
        net: Network,
        flows: &'a [FlowSpec],
        components: &'a [ComponentRun],
        faults: Vec<(Dur, FaultAction)>,
        seed: u64,
        max_time: Dur,
    ) -> Sim<'a, TRACED> {
        let hosts = net.host_count();
        let tsq_on = net.host_tsq.is_on();
        let mut sim = Sim {
            now: Time::ZERO,
            max_time: Time::ZERO + max_time,
            seed,
            events: EventQueue::default(),
            arena: PacketArena::default(),
            net,
            engines: Vec::new(),
            demux: Demux::default(),
            shims: (0..hosts).map(|_| None).collect(),
            any_shim: false,
            shim_scheduled: vec![Time::MAX; hosts],
            flows,
            flow_state: Vec::with_capacity(flows.len()),
            components,
            conns: Vec::new(),
            pool: FxMap::default(),
            round_robin: FxMap::default(),
            next_port: vec![1024; hosts],
            conn_rng: rng::stream(seed, Stream::Engine, u64::MAX),
            faults,
            drain_stack: Vec::new(),
            app_events: Vec::new(),
            payload_buf: Vec::new(),
            rx_payload: Vec::new(),
            flows_started: 0,
            flows_finished: 0,
            paths: FxMap::default(),
            cons: Conservation::default(),
            tsq_on,
            byte_check: None,
            app_delay: app::AppDelay::new(components),
            tsq_holds: 0,
            watchdog: Watchdog {
                timeout: Dur(0),
                at: Time::ZERO + max_time,
                from: Time::ZERO,
                delivered: 0,
                last_scheduled: Time::ZERO,
            },
            stop: StopReason::NoEvents,
            trace: None,
        };
        for (i, f) in flows.iter().enumerate() {
            sim.events.push(f.start, Event::FlowStart(i as u32));
        }
        for (i, (at, _)) in sim.faults.iter().enumerate() {
            sim.events.push(Time::ZERO + *at, Event::Fault(i as u32));
        }
        sim
    }

    /// Carry real bytes in every message and check them where they arrive (`check_bytes`); call
    /// before the run starts.
    pub fn set_check_bytes(&mut self, on: bool) {
        self.byte_check = on.then(Box::default);
    }

    /// Ends the run early when it stalls: no packet reaches any host for `timeout` of simulated time
    /// while no flow arrival or fault is left to come (`Dur(0)` = never, the default of [`Sim::new`]).
    /// A stalled run ends between `timeout` and twice `timeout` after its last delivery.
    pub fn set_stall_timeout(&mut self, timeout: Dur) {
        let last_flow = self.flows.iter().map(|f| f.start).max().unwrap_or(Time::ZERO);
        let last_fault = self
            .faults
            .iter()
            .map(|(at, _)| Time::ZERO + *at)
            .max()
            .unwrap_or(Time::ZERO);
        let w = &mut self.watchdog;
        w.timeout = timeout;
        w.last_scheduled = last_flow.max(last_fault);
        w.at = self.max_time;
        if timeout.0 > 0 {
            w.at = w.at.min(w.from + timeout);
        }
    }

    /// Nothing is due by `watchdog.at`: whether the run ends, and why (`None`: go on).
    #[cold]
    #[inline(never)]
    fn look(&mut self) -> Option<StopReason> {
        match self.events.peek_time() {
            None => Some(StopReason::NoEvents),
            Some(t) => self.watch(t),
        }
    }

    /// Called when an event lies after `watchdog.at`: whether the run ends there, and why.
    #[cold]
    fn watch(&mut self, t: Time) -> Option<StopReason> {
        if t > self.max_time {
            return Some(StopReason::MaxTime);
        }
        let w = &mut self.watchdog;
        // A window with no delivery, starting after the last flow arrival and fault: nothing that could
        // still change the network is scheduled, and nothing got through for a whole window.
        if self.cons.delivered == w.delivered && w.last_scheduled <= w.from {
            if self.arena.live() == 0 {
                return Some(StopReason::Stalled);
            }
            // A packet still queued or on a wire may yet arrive (on a link so slow that one packet
            // takes longer than the window): the same window is looked at again soon.
            w.at = self.max_time.min(t + Dur((w.timeout.0 / 16).max(1)));
            return None;
        }
        w.delivered = self.cons.delivered;
        w.from = t;
        w.at = self.max_time.min(t + w.timeout);
        None
    }

    /// Why the run ended (valid after [`Sim::run`]).
    pub fn stop_reason(&self) -> StopReason {
        self.stop
    }

    /// The stall watchdog's timeout (`Dur(0)` = off).
    pub fn stall_timeout(&self) -> Dur {
        self.watchdog.timeout
    }

    /// Installs a shim on a host (T-RACKs and other hypervisor-level schemes).
    pub fn set_shim(&mut self, host: u32, shim: Box<dyn Shim>) {
        self.shims[host as usize] = Some(shim);
        self.any_shim = true;
        self.rearm_shim(host);
    }

    /// Runs until every flow has finished or `max_time`. `progress(fraction)` is offered the chance to
    /// report every few thousand events; it returns false to cancel.
    pub fn run(&mut self, progress: &mut dyn FnMut(&Self) -> bool) -> Result<(), String> {
        self.run_loop::<false, NoCount>(&mut NoCount, progress)
    }

    /// [`Sim::run`], telling `counter` of every event before it is processed: which node owns it
    /// (`tailcut-partition`, issue #41). The run is the uncounted one.
    pub fn run_counted<C: EventCount>(
        &mut self,
        counter: &mut C,
        progress: &mut dyn FnMut(&Self) -> bool,
    ) -> Result<(), String> {
        self.run_loop::<true, C>(counter, progress)
    }

    /// The event loop. `COUNTED` compiles the count in: [`Sim::run`]'s loop has no trace of it, the
    /// `Sim` no field for it, and a binary that never counts no code for it.
    #[inline(always)]
    fn run_loop<const COUNTED: bool, C: EventCount>(
        &mut self,
        counter: &mut C,
        progress: &mut dyn FnMut(&Self) -> bool,
    ) -> Result<(), String> {
        self.stop = StopReason::NoEvents;
        loop {
            // Events up to the watchdog's next look come off the list without a peek; past it, `look`
            // (out of line, so the loop stays small enough for its hot callees to be inlined).
            let Some((t, ev)) = self.events.pop_until(self.watchdog.at) else {
                match self.look() {
                    Some(reason) => {
                        self.stop = reason;
                        break;
                    }
                    None => continue,
                }
            };
            self.now = t;
            if COUNTED {
                self.count_event(counter, t, ev);
            }
            // Only an event that reaches a host or an engine can finish a flow: the others (most of
            // them, a port's transmission and a packet's arrival at a switch) skip the test (7
            // instructions per packet-hop on benchmark (a)).
            let reached_host = match ev {
                Event::TxDone(p) => {
                    self.tx_done(p);
                    false
                }
                Event::Arrive(pkt) => self.arrive(pkt),
                Event::EngineTimer(e) => {
                    self.engine_timer(e, t);
                    true
                }
                Event::HostQueueWake(e) => {
                    self.host_queue_wake(e);
                    true
                }
                Event::ShimTimer(h) => {
                    self.shim_timer(h, t);
                    true
                }
                Event::FlowStart(f) => {
                    self.start_flow(f);
                    true
                }
                Event::AppWake(i) => {
                    self.app_wake(i);
                    true
                }
                Event::Fault(i) => {
                    let action = self.faults[i as usize].1.clone();
                    if fault::apply(&mut self.net, &action) {
                        self.net.recompute_routes();
                    }
                    false
                }
            };
            if reached_host && self.flows_finished == self.flows.len() {
                self.stop = StopReason::AllFinished;
                break;
            }
            // The event list counts what it served: no counter of the loop's own.
            if self.events.processed().is_multiple_of(4096) && !progress(self) {
                self.stop = StopReason::Cancelled;
                return Err("run cancelled".into());
            }
        }
        Ok(())
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Fraction of the run done: the larger of finished flows and elapsed time.
    pub fn progress_fraction(&self) -> f64 {
        let by_flows = if self.flows.is_empty() {
            1.0
        } else {
            self.flows_finished as f64 / self.flows.len() as f64
        };
        let by_time = self.now.0 as f64 / self.max_time.0.max(1) as f64;
        by_flows.max(by_time).min(1.0)
    }
}
