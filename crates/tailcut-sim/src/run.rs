//! The Rust entry point: run one experiment description and return its tables.

use crate::config::{Experiment, ShimConfig};
use crate::estimate::{self, Limits};
use crate::fault;
use crate::limits;
use crate::metrics::{FlowRecord, PortRecord, RunInfo};
use crate::net::Network;
use crate::scheme;
use crate::sim::{ComponentRun, ConnMode, EventCount, NoCount, Sim};
use crate::topo;
use crate::trace::Trace;
use crate::transport::Transport;
use crate::workload::{self, FlowSpec, HostInfo};
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::tracks::Tracks;
use tailcut_proto::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The description is invalid; the error names the field.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The simulation itself failed (e.g. the conservation check).
    #[error("simulation failed: {0}")]
    Simulation(String),
    #[error("cancelled")]
    Cancelled,
}

/// The tables of one experiment (all schemes).
pub struct Tables {
    pub flows: Vec<FlowRecord>,
    pub ports: Vec<PortRecord>,
    pub runs: Vec<RunInfo>,
}

/// One scheme's run plan: its name, per-component transports, network and faults.
pub struct SchemeRun {
    pub name: String,
    pub components: Vec<ComponentRun>,
    pub topology: topo::TopoSpec,
    pub faults: Vec<(tailcut_proto::Dur, fault::FaultAction)>,
    /// Host shim installed on every host, already resolved against the scheme's transport.
    pub shim: Option<ShimConfig>,
}

/// An experiment checked and expanded: the flows are generated once and shared by every scheme, so
/// all schemes see the same arrivals, sizes and endpoints.
pub struct Prepared {
    /// The experiment as it runs: as given, with every scheme's `params` filled in
    /// ([`scheme::resolve_filled`]); what a run reports back as its resolved config.
    pub exp: Experiment,
    pub flows: Vec<FlowSpec>,
    pub schemes: Vec<SchemeRun>,
    pub component_names: Vec<String>,
}

fn conn_mode(c: &workload::WorkloadComponent) -> ConnMode {
    match c.persistent_connections_per_pair() {
        None => ConnMode::PerFlow,
        Some(n) => ConnMode::Persistent(n),
    }
}

/// Validates everything that can be checked before running: topology, faults, workload, transports,
/// and the resource estimate against this machine's memory and the default event limit.
pub fn prepare(exp: &Experiment) -> Result<Prepared, RunError> {
    prepare_with(exp, &Limits::default())
}

/// [`prepare`] with explicit resource limits (`--max-memory`, `--max-events`, `--force`).
pub fn prepare_with(exp: &Experiment, limits: &Limits) -> Result<Prepared, RunError> {
    let err = |path: &str, reason: &str| RunError::Config(ConfigError::new(path, reason));
    // The topology, network and fault modules report paths relative to their section.
    let at = |outer: &str| {
        let outer = outer.to_string();
        move |e: ConfigError| RunError::Config(e.at(&outer))
    };
    if exp.schemes.is_empty() {
        return Err(err("schemes", "list at least one scheme"));
    }
    if exp.workload.is_empty() {
        return Err(err("workload", "list at least one workload component"));
    }
    limits::check(exp)?;
    let component_names: Vec<String> = exp.workload.iter().map(|c| c.name.clone()).collect();
    // A set, not a scan of the earlier names: 100,000 schemes would take 5e9 comparisons.
    let mut names = std::collections::HashSet::new();
    for (i, s) in exp.schemes.iter().enumerate() {
        if !names.insert(s.name.as_str()) {
            return Err(err(
                &format!("schemes[{i}].name"),
                &format!("duplicate scheme name '{}'", s.name),
            ));
        }
    }
    // Sized before it is built: a million-host star must be refused, not allocated.
    let sized = estimate::topology_size(&exp.topology);
    if let topo::TopologyConfig::File(f) = &exp.topology {
        // A file is sized from its text before it is parsed (its parse alone can exhaust memory); an
        // unreadable file is left to the build below, which reports it.
        if let Ok(text) = limits::read_regular_file(std::path::Path::new(&f.path)) {
            estimate::check_topology_text(&text, exp.schemes.len(), limits)?;
        }
    }
    if let Some(size) = &sized {
        estimate::check_topology(size, exp.schemes.len(), limits)?;
    }
    let base_spec = topo::build(&exp.topology, &exp.network).map_err(at("topology"))?;
    let size = match sized {
        Some(s) => s,
        None => {
            let s = estimate::size_of_spec(&base_spec);
            estimate::check_topology(&s, exp.schemes.len(), limits).map_err(|e| e.at(""))?;
            s
        }
    };
    for (i, c) in exp.network.classes.iter().enumerate() {
        if let Some(a) = &c.aqm {
            a.validate().map_err(at(&format!("network.classes[{i}].aqm")))?;
        }
    }
    exp.network.aqm.validate().map_err(at("network.aqm"))?;
    exp.network.host_aqm.validate().map_err(at("network.host_aqm"))?;
    let net = Network::unrouted(&base_spec, exp.seed);
    let (rack, nic_rate_bps) = net.host_info();
    // The schemes' engines set what a flow costs (a DCQUIC flow held 326 KB, a TCP one 2.6 KB). A
    // scheme whose parameters do not resolve counts as TCP here and is reported below.
    let engines: Vec<Option<scheme::EngineSpec>> = exp
        .schemes
        .iter()
        .map(|s| scheme::resolve(&s.transport, &s.params).ok().map(|r| r.engine))
        .collect();
    let cost = estimate::FlowCost::of(
        exp.schemes
            .iter()
            .zip(&engines)
            .map(|(s, e)| (s.name.as_str(), e.as_ref())),
    );
    let budget = estimate::flow_budget(&size, exp.schemes.len(), &cost, limits);
    let hosts = HostInfo { rack, nic_rate_bps };
    let flows = workload::generate_within(&exp.workload, &hosts, exp.seed, budget).map_err(|e| match e {
        workload::GenerateError::Config(e) => RunError::Config(e),
        workload::GenerateError::OverBudget { component, at_least } => RunError::Config(
            estimate::over_flow_budget(component, at_least, &size, exp.schemes.len(), &cost, limits),
        ),
    })?;
    file_flows_start_in_time(exp, &flows)?;
    let hops = estimate::mean_hops(&exp.topology);
    estimate::check_work(
        &flows,
        exp.workload.len(),
        &size,
        exp.schemes.len(),
        hops,
        &cost,
        limits,
    )?;
    // The experiment as it runs: every scheme's `params` with each parameter's effective value.
    let mut resolved_exp = exp.clone();
    let other = match &exp.other_traffic {
        Some(o) => {
            let (spec, filled) =
                scheme::resolve_filled(&o.transport, &o.params).map_err(|e| e.at("other_traffic"))?;
            if let Some(r) = &mut resolved_exp.other_traffic {
                r.params = filled;
            }
            Some(Transport::from(spec))
        }
        None => None,
    };
    let mut schemes = Vec::new();
    for (i, s) in exp.schemes.iter().enumerate() {
        let here = format!("schemes[{i}]");
        let (resolved, filled) = scheme::resolve_filled(&s.transport, &s.params).map_err(|e| e.at(&here))?;
        resolved_exp.schemes[i].params = filled;
        let engine = resolved.engine.clone();
        let t = Transport::from(resolved);
        if let Some(names) = &s.applies_to {
            for n in names {
                if !component_names.contains(n) {
                    return Err(err(
                        &format!("{here}.applies_to"),
                        &format!("no workload component named '{n}'"),
                    ));
                }
            }
        }
        let mut comps = Vec::new();
        for (ci, c) in exp.workload.iter().enumerate() {
            let applies = s.applies_to.as_ref().is_none_or(|v| v.contains(&c.name));
            let transport: Transport = if applies {
                t.clone()
            } else {
                other.clone().ok_or_else(|| {
                    err(
                        "other_traffic",
                        &format!(
                            "schemes[{i}] does not apply to workload component '{}' (workload[{ci}]); give other_traffic to carry it",
                            c.name
                        ),
                    )
                })?
            };
            comps.push(ComponentRun {
                transport,
                conn_mode: conn_mode(c),
            });
        }
        // A scheme's own `network` wins; otherwise the transport adapts the experiment's (PIAS adds
        // strict-priority classes, pFabric uses priority-dropping queues).
        let spec = match &s.network {
            Some(q) => {
                q.aqm.validate().map_err(at(&format!("{here}.network.aqm")))?;
                topo::build(&exp.topology, q).map_err(at("topology"))?
            }
            None => topo::build(&exp.topology, &t.switch_queues(&exp.network)).map_err(at("topology"))?,
        };
        let faults = fault::plan(&exp.faults, &net, exp.seed)?;
        let shim = match &s.shim {
            None => None,
            Some(ShimConfig::Tracks(c)) => Some(ShimConfig::Tracks(
                scheme::tracks::resolve(c, &engine).map_err(|e| e.at(&format!("{here}.shim")))?,
            )),
        };
        schemes.push(SchemeRun {
            name: s.name.clone(),
            components: comps,
            topology: spec,
            faults,
            shim,
        });
    }
    Ok(Prepared {
        exp: resolved_exp,
        flows,
        schemes,
        component_names,
    })
}

/// A flow file whose every flow starts at or after `max_time` would run no flow of its component
/// (generated components are held to `start < max_time` by `limits::check`).
fn file_flows_start_in_time(exp: &Experiment, flows: &[FlowSpec]) -> Result<(), RunError> {
    let mut first = vec![u64::MAX; exp.workload.len()];
    for f in flows {
        let c = f.component as usize;
        first[c] = first[c].min(f.start.0);
    }
    for (i, c) in exp.workload.iter().enumerate() {
        if let workload::Pattern::ConnectionMatrix { path } | workload::Pattern::FlowCsv { path } = &c.pattern
        {
            if first[i] >= exp.max_time.0 {
                return Err(RunError::Config(ConfigError::new(
                    format!("workload[{i}].pattern.path"),
                    format!(
                        "{path}: every flow starts at or after max_time ({}), the first at {}: none would run",
                        exp.max_time,
                        tailcut_proto::Dur(first[i])
                    ),
                )));
            }
        }
    }
    Ok(())
}

/// Runs every scheme of the experiment on the same flows. `progress(fraction)` returns false to cancel.
pub fn run(exp: &Experiment, progress: &mut dyn FnMut(f64) -> bool) -> Result<Tables, RunError> {
    run_with(exp, &Limits::default(), progress)
}

/// [`run`] with explicit resource limits.
pub fn run_with(
    exp: &Experiment,
    limits: &Limits,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Tables, RunError> {
    let prep = prepare_with(exp, limits)?;
    run_prepared(&prep, progress)
}

pub fn run_prepared(prep: &Prepared, progress: &mut dyn FnMut(f64) -> bool) -> Result<Tables, RunError> {
    let n = prep.schemes.len() as f64;
    let mut tables = Tables {
        flows: Vec::new(),
        ports: Vec::new(),
        runs: Vec::new(),
    };
    for k in 0..prep.schemes.len() {
        let (mut sim, wall) = run_scheme::<false>(prep, k, None, &mut |f| progress((k as f64 + f) / n))?;
        add_tables(&mut tables, &mut sim, prep, k, wall);
    }
    progress(1.0);
    Ok(tables)
}

/// Runs scheme `k` alone, recording every event of the flows `trace.0` (`FlowSpec::id`s) up to
/// `trace.1` events. The run is the untraced one: same flows, seeds and results.
pub fn run_traced(
    prep: &Prepared,
    k: usize,
    trace: (&[u64], usize),
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(Tables, Trace), RunError> {
    let (mut sim, wall) = run_scheme::<true>(prep, k, Some(trace), progress)?;
    let mut tables = Tables {
        flows: Vec::new(),
        ports: Vec::new(),
        runs: Vec::new(),
    };
    add_tables(&mut tables, &mut sim, prep, k, wall);
    let trace = sim.take_trace().expect("a traced run keeps its trace");
    progress(1.0);
    Ok((tables, trace))
}

/// Runs scheme `k` alone, telling `counter` which node owns every event (`tailcut-partition`, issue
/// #41). The run is the uncounted one: same flows, seeds and results.
pub fn run_counted<C: EventCount>(
    prep: &Prepared,
    k: usize,
    counter: &mut C,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<Tables, RunError> {
    let (mut sim, wall) = run_scheme_with::<false, true, C>(prep, k, None, counter, progress)?;
    let mut tables = Tables {
        flows: Vec::new(),
        ports: Vec::new(),
        runs: Vec::new(),
    };
    add_tables(&mut tables, &mut sim, prep, k, wall);
    progress(1.0);
    Ok(tables)
}

/// One scheme's simulation, run to its end and checked (`progress` gets this run's own fraction), and
/// its wall time.
fn run_scheme<'p, const TRACED: bool>(
    prep: &'p Prepared,
    k: usize,
    trace: Option<(&[u64], usize)>,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(Sim<'p, TRACED>, f64), RunError> {
    run_scheme_with::<TRACED, false, NoCount>(prep, k, trace, &mut NoCount, progress)
}

/// [`run_scheme`], with the counted event loop when `COUNTED` ([`Sim::run_counted`]).
fn run_scheme_with<'p, const TRACED: bool, const COUNTED: bool, C: EventCount>(
    prep: &'p Prepared,
    k: usize,
    trace: Option<(&[u64], usize)>,
    counter: &mut C,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(Sim<'p, TRACED>, f64), RunError> {
    let SchemeRun {
        name,
        components: comps,
        topology: spec,
        faults,
        shim,
    } = &prep.schemes[k];
    let net = Network::build(spec, prep.exp.seed);
    let mut sim = Sim::<TRACED>::build(
        net,
        &prep.flows,
        comps,
        faults.clone(),
        prep.exp.seed,
        prep.exp.max_time,
    );
    sim.set_stall_timeout(prep.exp.stall_timeout);
    sim.set_check_bytes(prep.exp.check_bytes);
    install_shims(&mut sim, shim.as_ref(), prep.exp.seed);
    if let Some((flows, max_events)) = trace {
        sim.start_trace(flows, max_events);
    }
    let wall = WallClock::start();
    let ran = if COUNTED {
        sim.run_counted(counter, &mut |s: &Sim<TRACED>| progress(s.progress_fraction()))
    } else {
        sim.run(&mut |s: &Sim<TRACED>| progress(s.progress_fraction()))
    };
    ran.map_err(|_| RunError::Cancelled)?;
    let c = sim.conservation();
    if !c.ok {
        return Err(RunError::Simulation(format!(
            "conservation violated in scheme '{name}' (seed {}): {c:?}",
            prep.exp.seed
        )));
    }
    Ok((sim, wall.seconds()))
}

fn add_tables<const TRACED: bool>(
    tables: &mut Tables,
    sim: &mut Sim<TRACED>,
    prep: &Prepared,
    k: usize,
    wall_seconds: f64,
) {
    let name = &prep.schemes[k].name;
    let info = sim.run_info(name, wall_seconds);
    tables.flows.extend(sim.flow_records(name, &prep.component_names));
    tables.ports.extend(sim.port_records(name));
    tables.runs.push(info);
}

/// Installs the scheme's shim (if any) on every host, each with its own RNG stream.
fn install_shims<const TRACED: bool>(sim: &mut Sim<TRACED>, shim: Option<&ShimConfig>, seed: u64) {
    let Some(ShimConfig::Tracks(c)) = shim else {
        return;
    };
    for h in 0..sim.host_count() {
        let rng = stream(seed, Stream::Shim, u64::from(h));
        sim.set_shim(h, Box::new(Tracks::new(c.clone(), rng)));
    }
}

/// Wall time for reporting speed only; it never influences a result.
pub struct WallClock(std::time::Instant);

impl WallClock {
    #[allow(clippy::disallowed_methods)]
    pub fn start() -> WallClock {
        WallClock(std::time::Instant::now())
    }
    pub fn seconds(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}
