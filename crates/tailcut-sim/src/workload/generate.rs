//! From validated components to the sorted flow list.

use super::cdf::FlowSizeCdf;
use super::config::{Pattern, WorkloadComponent};
use super::draw;
use super::incast::incast;
use super::units::{units, Unit};
use super::{flow_csv, flow_file, htsim_matrix};
use super::{HostInfo, WorkloadError};
use tailcut_proto::rng::{self, Rng, Stream};
use tailcut_proto::Time;

/// A component may not produce more flows than this (a guard against a mistyped `until`).
pub const MAX_FLOWS_PER_COMPONENT: u64 = 50_000_000;

/// Flow sizes of one component.
#[derive(Clone, Debug)]
pub(super) enum Sizes {
    Cdf(FlowSizeCdf),
    Fixed(u64),
    Choices(Vec<u64>),
}

impl Sizes {
    pub(super) fn mean_bytes(&self) -> f64 {
        match self {
            Sizes::Cdf(c) => c.mean_bytes(),
            Sizes::Fixed(b) => *b as f64,
            Sizes::Choices(v) => v.iter().map(|&b| b as f64).sum::<f64>() / v.len() as f64,
        }
    }

    pub(super) fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            Sizes::Cdf(c) => c.sample_bytes(rng),
            Sizes::Fixed(b) => *b,
            Sizes::Choices(v) => v[draw::index(rng, v.len())],
        }
    }
}

/// A flow before ids are assigned.
pub(super) struct RawFlow {
    pub start: Time,
    pub src: u32,
    pub dst: u32,
    pub size_bytes: u64,
}

pub(super) struct Ctx<'a> {
    pub(super) index: usize,
    pub(super) hosts: &'a HostInfo,
    /// Generators stop past this many flows (the memory budget left), so that a component of 49
    /// million flows is refused by the estimate without first being allocated.
    pub(super) budget: u64,
}

impl Ctx<'_> {
    pub(super) fn err(&self, field: &str, msg: impl Into<String>) -> WorkloadError {
        let path = if field.is_empty() {
            format!("workload[{}]", self.index)
        } else {
            format!("workload[{}].{field}", self.index)
        };
        WorkloadError::new(path, msg)
    }

    pub(super) fn n_hosts(&self) -> usize {
        self.hosts.rack.len()
    }

    /// Checks a host list: in range, no duplicates, non-empty.
    pub(super) fn host_list(&self, field: &str, list: &[u32]) -> Result<Vec<u32>, WorkloadError> {
        if list.is_empty() {
            return Err(self.err(field, "must not be empty"));
        }
        let mut seen = vec![false; self.n_hosts()];
        for (k, &h) in list.iter().enumerate() {
            self.host(&format!("{field}[{k}]"), h)?;
            if std::mem::replace(&mut seen[h as usize], true) {
                return Err(self.err(&format!("{field}[{k}]"), format!("host {h} is listed twice")));
            }
        }
        Ok(list.to_vec())
    }

    pub(super) fn host(&self, field: &str, h: u32) -> Result<u32, WorkloadError> {
        if (h as usize) < self.n_hosts() {
            Ok(h)
        } else {
            Err(self.err(
                field,
                format!(
                    "host {h} is out of range (the topology has {} hosts, 0..{})",
                    self.n_hosts(),
                    self.n_hosts()
                ),
            ))
        }
    }

    pub(super) fn all_hosts(&self) -> Vec<u32> {
        (0..self.n_hosts() as u32).collect()
    }
}

pub(super) fn intersect(a: &[u32], b: Option<&Vec<u32>>) -> Vec<u32> {
    match b {
        Some(b) => a.iter().copied().filter(|h| b.contains(h)).collect(),
        None => a.to_vec(),
    }
}

pub(super) fn without(a: &[u32], h: u32) -> Vec<u32> {
    a.iter().copied().filter(|&x| x != h).collect()
}

fn sizes(c: &WorkloadComponent, cx: &Ctx) -> Result<Sizes, WorkloadError> {
    let given = [c.cdf.is_some(), c.fixed.is_some(), c.choices.is_some()]
        .iter()
        .filter(|&&b| b)
        .count();
    if given != 1 {
        return Err(cx.err(
            "",
            format!("exactly one of cdf, fixed, choices must be given, got {given}"),
        ));
    }
    if c.cdf.is_none() {
        if c.min_size.is_some() {
            return Err(cx.err("min_size", "only applies with cdf"));
        }
        if c.max_size.is_some() {
            return Err(cx.err("max_size", "only applies with cdf"));
        }
    }
    if let Some(name) = &c.cdf {
        let cdf = FlowSizeCdf::load(name).map_err(|e| cx.err("cdf", e.to_string()))?;
        if c.min_size.is_none() && c.max_size.is_none() {
            return Ok(Sizes::Cdf(cdf));
        }
        let field = if c.max_size.is_some() {
            "max_size"
        } else {
            "min_size"
        };
        let t = cdf
            .truncated(c.min_size.map(|b| b.0), c.max_size.map(|b| b.0))
            .map_err(|e| cx.err(field, e))?;
        return Ok(Sizes::Cdf(t));
    }
    if let Some(b) = c.fixed {
        crate::limits::flow_size("fixed", b.0).map_err(|e| cx.err(&e.path, e.reason))?;
        return Ok(Sizes::Fixed(b.0));
    }
    let choices = c.choices.as_deref().unwrap_or(&[]);
    if choices.is_empty() {
        return Err(cx.err("choices", "must not be empty"));
    }
    for (k, b) in choices.iter().enumerate() {
        crate::limits::flow_size(&format!("choices[{k}]"), b.0).map_err(|e| cx.err(&e.path, e.reason))?;
    }
    Ok(Sizes::Choices(choices.iter().map(|b| b.0).collect()))
}

/// Arrival rate (flows/s) of each unit, or `None` if flows all start at `start`.
fn rates(
    c: &WorkloadComponent,
    cx: &Ctx,
    units: &[Unit],
    sizes: &Sizes,
) -> Result<Option<Vec<f64>>, WorkloadError> {
    match (c.load, c.rate_per_host) {
        (Some(_), Some(_)) => Err(cx.err("", "give load or rate_per_host, not both")),
        (Some(load), None) => {
            if !(load > 0.0 && load <= 1.0) {
                return Err(cx.err("load", format!("must be in (0, 1], got {load}")));
            }
            let mean = sizes.mean_bytes();
            if mean.is_nan() || mean <= 0.0 {
                return Err(cx.err(
                    "load",
                    format!("needs a positive mean flow size, got {mean} bytes"),
                ));
            }
            let mut r = Vec::with_capacity(units.len());
            for u in units {
                let bps = cx.hosts.nic_rate_bps[u.driver as usize];
                if bps == 0 {
                    return Err(cx.err("load", format!("host {} has a NIC rate of 0", u.driver)));
                }
                r.push(load * bps as f64 / (8.0 * mean));
            }
            Ok(Some(r))
        }
        (None, Some(rate)) => {
            if !(rate > 0.0 && rate.is_finite()) {
                return Err(cx.err(
                    "rate_per_host",
                    format!("must be a positive number of flows/s, got {rate}"),
                ));
            }
            Ok(Some(vec![rate; units.len()]))
        }
        (None, None) => Ok(None),
    }
}

/// Validates component `index` and generates its flows in time order.
pub(super) fn component_flows(
    index: usize,
    c: &WorkloadComponent,
    hosts: &HostInfo,
    seed: u64,
    budget: u64,
) -> Result<Vec<RawFlow>, WorkloadError> {
    let cx = Ctx { index, hosts, budget };
    let connections_per_pair = connections_per_pair(c, &cx);
    match &c.pattern {
        Pattern::ConnectionMatrix { path } => {
            connections_per_pair?;
            return flow_file::component_flows(c, &cx, path, htsim_matrix::parse);
        }
        Pattern::FlowCsv { path } => {
            connections_per_pair?;
            return flow_file::component_flows(c, &cx, path, flow_csv::parse);
        }
        _ => {}
    }
    let mut rng = rng::stream(seed, Stream::Workload, index as u64);
    let sizes = sizes(c, &cx)?;
    if let Some(until) = c.until {
        if until <= c.start {
            return Err(cx.err(
                "until",
                format!("must be after start ({}), got {}", c.start, until),
            ));
        }
    }
    connections_per_pair?;
    if c.flows == Some(0) {
        return Err(cx.err("flows", "must be at least 1 (omit it for no limit)"));
    }
    let cap = c.flows.unwrap_or(u64::MAX).min(MAX_FLOWS_PER_COMPONENT + 1);
    // Poisson arrivals are generated in time order, so stopping one past the budget yields the same
    // prefix as a full run would: a component within the budget is unchanged.
    let generate_cap = cap.min(budget.saturating_add(1));
    let until = c.until.map(|d| Time(d.0)).unwrap_or(Time::MAX);
    let start = Time(c.start.0);

    let mut flows = if let Pattern::Incast { .. } = c.pattern {
        incast(c, &cx, &mut rng, &sizes, start)?
    } else {
        let units = units(c, &cx, &mut rng)?;
        match rates(c, &cx, &units, &sizes)? {
            Some(rates) => {
                if c.flows.is_none() && c.until.is_none() {
                    return Err(cx.err("", "Poisson arrivals (load / rate_per_host) need flows or until"));
                }
                // Refuse before generating: a mistyped `until` must not exhaust memory.
                let total_per_s: f64 = rates.iter().sum();
                let span_s = c
                    .until
                    .map(|u| (u - c.start).as_secs_f64())
                    .unwrap_or(f64::INFINITY);
                let expected = (total_per_s * span_s).min(c.flows.unwrap_or(u64::MAX) as f64);
                if expected > MAX_FLOWS_PER_COMPONENT as f64 {
                    return Err(cx.err(
                        "",
                        format!(
                            "about {expected:.0} flows expected, more than {MAX_FLOWS_PER_COMPONENT}; \
                             lower until or flows"
                        ),
                    ));
                }
                poisson(&units, &rates, &sizes, &mut rng, start, until, generate_cap)
            }
            None => match c.pattern {
                Pattern::Pairs { .. } | Pattern::Permutation { .. } => units
                    .iter()
                    .map(|u| {
                        let (src, dst) = u.peer.draw(&mut rng);
                        RawFlow {
                            start,
                            src,
                            dst,
                            size_bytes: sizes.sample(&mut rng),
                        }
                    })
                    .collect(),
                _ => {
                    return Err(cx.err(
                        "",
                        "this pattern needs an arrival process: set load or rate_per_host",
                    ))
                }
            },
        }
    };
    // Stable: equal start times keep generation order.
    flows.sort_by_key(|f| f.start);
    flows.retain(|f| f.start < until);
    flows.truncate(cap.min(usize::MAX as u64) as usize);
    if flows.len() as u64 > MAX_FLOWS_PER_COMPONENT {
        return Err(cx.err(
            "",
            format!("more than {MAX_FLOWS_PER_COMPONENT} flows; lower until or set flows"),
        ));
    }
    Ok(flows)
}

/// Checks `connections_per_pair` against `connection`.
fn connections_per_pair(c: &WorkloadComponent, cx: &Ctx) -> Result<(), WorkloadError> {
    match (c.connection, c.connections_per_pair) {
        (super::config::Connection::PerFlow, Some(_)) => Err(cx.err(
            "connections_per_pair",
            "only applies with connection = \"persistent\"",
        )),
        (_, Some(0)) => Err(cx.err("connections_per_pair", "must be at least 1")),
        _ => Ok(()),
    }
}

/// Superposed Poisson processes: total rate = sum of the units' rates, each arrival assigned to a unit
/// with probability proportional to its rate (equivalent to independent per-unit processes).
fn poisson(
    units: &[Unit],
    rates: &[f64],
    sizes: &Sizes,
    rng: &mut Rng,
    start: Time,
    until: Time,
    cap: u64,
) -> Vec<RawFlow> {
    let mut cumulative = Vec::with_capacity(rates.len());
    let mut total = 0.0;
    for r in rates {
        total += r;
        cumulative.push(total);
    }
    let mean_gap_ns = 1e9 / total;
    let mut t_ns = start.0 as f64;
    let mut out = Vec::new();
    while (out.len() as u64) < cap {
        t_ns += draw::exponential(rng, mean_gap_ns);
        let at = Time(t_ns.round() as u64);
        if at >= until || t_ns >= u64::MAX as f64 {
            break;
        }
        let x = draw::unit_f64(rng) * total;
        let k = cumulative.partition_point(|&c| c <= x).min(units.len() - 1);
        let (src, dst) = units[k].peer.draw(rng);
        out.push(RawFlow {
            start: at,
            src,
            dst,
            size_bytes: sizes.sample(rng),
        });
    }
    out
}
