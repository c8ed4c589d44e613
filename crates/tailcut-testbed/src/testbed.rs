//! A running testbed: the hosts' namespaces and the fabric thread that connects them.

use crate::addr::AddrTable;
use crate::error::TestbedError;
use crate::fabric::{Fabric, LoopConfig};
use crate::host::{HostNs, HostSetup};
use crate::pcap::{Capture, CaptureSpec};
use crate::report::FabricReport;
use crate::shim::NicShim;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use tailcut_proto::tracks::TracksConfig;
use tailcut_proto::Dur;
use tailcut_sim::fault::{self, FaultAction, FaultConfig};
use tailcut_sim::net::Network;
use tailcut_sim::topo::TopoSpec;

/// Everything a testbed is built from.
pub struct TestbedSpec {
    pub topo: TopoSpec,
    /// Faults on the simulator's schedule, from the moment the fabric starts (to time them from another
    /// moment, leave this empty and give them to [`Testbed::faults_from`]).
    pub faults: Vec<FaultConfig>,
    /// Master seed: ECMP salts, the ports' loss and AQM draws, random fault placement.
    pub seed: u64,
    pub host: HostSetup,
    pub loop_cfg: LoopConfig,
    /// Packet captures of what the hosts send and receive; `None` captures nothing.
    pub capture: Option<CaptureSpec>,
    /// A T-RACKs shim at every host NIC, as the simulator puts one at every host.
    pub shim: Option<TracksConfig>,
}

pub struct Testbed {
    hosts: Vec<HostNs>,
    /// A copy of the fabric's network for resolving link names in [`Testbed::fault_now`].
    names: Network,
    seed: u64,
    stop: Arc<AtomicBool>,
    control: Sender<(u64, FaultAction)>,
    fabric: Option<JoinHandle<io::Result<FabricReport>>>,
}

impl Testbed {
    /// Creates a namespace per host and starts the fabric. A topology or fault the testbed cannot
    /// take is a [`TestbedError::Config`] naming the field (before anything is set up); otherwise the
    /// error says what could not be set up.
    pub fn start(spec: TestbedSpec) -> Result<Testbed, TestbedError> {
        let net = Network::build(&spec.topo, spec.seed);
        let names = Network::unrouted(&spec.topo, spec.seed);
        let addrs = AddrTable::new(&net)?;
        let faults = fault::plan(&spec.faults, &net, spec.seed)?;
        let capture = spec.capture.as_ref().map(Capture::create).transpose()?;
        let mut hosts = Vec::with_capacity(net.hosts.len());
        let mut tuns: Vec<Option<File>> = (0..net.addrs.len()).map(|_| None).collect();
        let mut shims: Vec<Option<NicShim>> = (0..net.addrs.len()).map(|_| None).collect();
        for (h, &node) in net.hosts.iter().enumerate() {
            if let Some(c) = &spec.shim {
                for a in &net.host_addrs[h] {
                    shims[a.0 as usize] = Some(NicShim::new(c, spec.seed, h as u32));
                }
            }
            let name = net.nodes[node as usize].name.clone();
            let ips: Vec<_> = net.host_addrs[h].iter().map(|&a| addrs.ip(a)).collect();
            let (host, files) =
                HostNs::create(&name, &ips, &spec.host).map_err(|e| format!("host {name}: {e}"))?;
            for (a, f) in net.host_addrs[h].iter().zip(files) {
                tuns[a.0 as usize] = Some(f);
            }
            hosts.push(host);
        }
        let tuns = tuns
            .into_iter()
            .map(|t| t.expect("every address has a NIC"))
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let (control, rx) = mpsc::channel();
        let mut fabric = Fabric::new(net, addrs, tuns, faults, spec.loop_cfg);
        if spec.shim.is_some() {
            fabric = fabric.with_shims(shims);
        }
        if let Some(c) = capture {
            fabric = fabric.with_capture(c);
        }
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("tailcut-fabric".into())
            .spawn(move || fabric.run(&stop2, &rx))
            .map_err(|e| format!("cannot start the fabric thread: {e}"))?;
        Ok(Testbed {
            hosts,
            names,
            seed: spec.seed,
            stop,
            control,
            fabric: Some(handle),
        })
    }

    pub fn hosts(&self) -> &[HostNs] {
        &self.hosts
    }

    /// The host named `name` (the topology's names: `h0`, `h1`, ...).
    pub fn host(&self, name: &str) -> Option<&HostNs> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// Applies a fault from now on: its `at` and `until` count from this call. A fault that names no
    /// link of this testbed is a [`TestbedError::Config`] at `faults[0]`.
    pub fn fault_now(&self, f: &FaultConfig) -> Result<(), TestbedError> {
        let actions = fault::plan(std::slice::from_ref(f), &self.names, self.seed)?;
        let start = actions.iter().map(|(t, _)| t.0).min().unwrap_or(0);
        let now = tailcut_sys::clock::monotonic_ns();
        self.send(actions.into_iter().map(|(t, a)| (Dur(t.0 - start), a)), now)
    }

    /// Applies `faults` on the simulator's schedule counted from `zero` (`CLOCK_MONOTONIC` ns): an
    /// experiment's time zero, which its flows' start times count from too. A fault that names no link
    /// of this testbed is a [`TestbedError::Config`] at `faults[i]`.
    pub fn faults_from(&self, faults: &[FaultConfig], zero: u64) -> Result<(), TestbedError> {
        let actions = fault::plan(faults, &self.names, self.seed)?;
        self.send(actions.into_iter(), zero)
    }

    fn send(&self, actions: impl Iterator<Item = (Dur, FaultAction)>, zero: u64) -> Result<(), TestbedError> {
        for (t, a) in actions {
            self.control
                .send((zero + t.0, a))
                .map_err(|_| TestbedError::Run("the fabric has stopped".into()))?;
        }
        Ok(())
    }

    /// Stops the fabric and returns its report. The namespaces go when the testbed is dropped.
    pub fn stop(mut self) -> io::Result<FabricReport> {
        self.stop_fabric()
    }

    fn stop_fabric(&mut self) -> io::Result<FabricReport> {
        self.stop.store(true, Ordering::Relaxed);
        match self.fabric.take() {
            Some(h) => h
                .join()
                .map_err(|_| io::Error::other("the fabric thread panicked"))?,
            None => Err(io::Error::other("the fabric was already stopped")),
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if self.fabric.is_some() {
            let _ = self.stop_fabric();
        }
    }
}
