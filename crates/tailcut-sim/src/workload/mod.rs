//! Workload generators: flow-size distributions, traffic patterns and arrival processes, turned into a
//! deterministic, sorted list of [`FlowSpec`]s before the simulation starts.
//!
//! Each component draws from its own RNG stream, `rng::stream(seed, Stream::Workload, component_index)`,
//! so editing, adding or removing one component never changes the flows of the components at other
//! indices (moving a component to another index does change its own draws). The output is sorted by
//! (start, component, the component's generation order) and numbered densely.
//!
//! A component ([`WorkloadComponent`]) is a pattern (who talks to whom), a size distribution (a
//! piecewise-linear CDF, a fixed size or a uniform choice) and an arrival process:
//! - Poisson (`load` or `rate_per_host`): one process per driving host, superposed. With `load`, a driving
//!   host starts `load * nic_rate_bps / (8 * mean_size_bytes)` flows per second, so the bytes it sends (or,
//!   for `one_to_all`, receives) per second average `load` times its NIC rate. Bounded by `flows` / `until`.
//! - all at `start` (`pairs`, `permutation` without a rate), or in rounds (`incast`).
//!
//! Or a component lists its flows in a file: an htsim connection matrix (`connection_matrix`) or a CSV
//! flow list (`flow_csv`), see [`flow_file`].
//!
//! `connection` / `connections_per_pair` are not used here: the simulator maps flows onto connections.

mod cdf;
mod config;
mod draw;
mod flow_csv;
mod flow_file;
mod generate;
mod htsim_matrix;
mod incast;
mod spec;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_flow_file;
mod units;

pub use cdf::{CdfError, EmpiricalCdf, FlowSizeCdf, BUILTIN_FLOW_SIZE_CDFS, FUSO_LOSS_CDF};
pub use config::{Connection, Jitter, Pattern, WorkloadComponent, WorkloadFile};
pub use flow_file::{FileFlow, FlowFileError};
pub use generate::MAX_FLOWS_PER_COMPONENT;
pub use spec::FlowSpec;

/// What the generators need to know about the topology's hosts (indexed 0..n).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostInfo {
    /// Host i's rack (ToR) index.
    pub rack: Vec<u32>,
    /// Host i's NIC rate in bits per second.
    pub nic_rate_bps: Vec<u64>,
}

/// A workload configuration error: the configuration's one error type, its path starting at
/// `workload[i]` (e.g. `workload[1].load`).
pub type WorkloadError = tailcut_proto::ConfigError;

/// Generates every component's flows and merges them in start order with dense ids.
pub fn generate(
    components: &[WorkloadComponent],
    hosts: &HostInfo,
    seed: u64,
) -> Result<Vec<FlowSpec>, WorkloadError> {
    generate_within(components, hosts, seed, u64::MAX).map_err(|e| match e {
        GenerateError::Config(e) => e,
        // Cannot happen with a budget of u64::MAX; still an error, not a panic.
        GenerateError::OverBudget { component, at_least } => WorkloadError::new(
            format!("workload[{component}]"),
            format!("more than {at_least} flows"),
        ),
    })
}

/// Why [`generate_within`] stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenerateError {
    Config(WorkloadError),
    /// Component `component` took the flow count past the budget: `at_least` flows in all.
    OverBudget {
        component: usize,
        at_least: u64,
    },
}

impl From<WorkloadError> for GenerateError {
    fn from(e: WorkloadError) -> GenerateError {
        GenerateError::Config(e)
    }
}

/// [`generate`], stopping as soon as the flows of all components exceed `max_flows` (the memory
/// estimate's budget), before they are all allocated. Within the budget the flows are [`generate`]'s.
pub fn generate_within(
    components: &[WorkloadComponent],
    hosts: &HostInfo,
    seed: u64,
    max_flows: u64,
) -> Result<Vec<FlowSpec>, GenerateError> {
    if hosts.rack.len() != hosts.nic_rate_bps.len() {
        return Err(GenerateError::Config(WorkloadError::new(
            "hosts",
            format!(
                "rack has {} entries but nic_rate_bps has {}",
                hosts.rack.len(),
                hosts.nic_rate_bps.len()
            ),
        )));
    }
    if hosts.rack.is_empty() {
        return Err(GenerateError::Config(WorkloadError::new(
            "hosts",
            "the topology has no hosts",
        )));
    }
    let mut all: Vec<(u32, u64, FlowSpec)> = Vec::new();
    for (i, c) in components.iter().enumerate() {
        let left = max_flows.saturating_sub(all.len() as u64);
        let flows = generate::component_flows(i, c, hosts, seed, left)?;
        if flows.len() as u64 > left {
            return Err(GenerateError::OverBudget {
                component: i,
                at_least: (all.len() + flows.len()) as u64,
            });
        }
        for (seq, f) in flows.into_iter().enumerate() {
            all.push((
                i as u32,
                seq as u64,
                FlowSpec {
                    id: 0,
                    component: i as u32,
                    src: f.src,
                    dst: f.dst,
                    size_bytes: f.size_bytes,
                    start: f.start,
                    request_bytes: c.request_bytes.0,
                },
            ));
        }
    }
    all.sort_by_key(|(comp, seq, f)| (f.start, *comp, *seq));
    Ok(all
        .into_iter()
        .enumerate()
        .map(|(id, (_, _, mut f))| {
            f.id = id as u64;
            f
        })
        .collect())
}
