//! The experiment description: topology, switch queues, faults, workload and the schemes to compare.
//! Every section rejects unknown keys; errors carry the path of the offending field.

use crate::fault::FaultConfig;
use crate::topo::{SwitchQueues, TopologyConfig};
use crate::workload::WorkloadComponent;
use serde::{Deserialize, Serialize};
use tailcut_proto::tracks::TracksConfig;
use tailcut_proto::Dur;

/// One scheme to run: a transport with parameters, optionally with its own switch queue settings
/// (e.g. DCTCP with ECN marking, pFabric with priority queues).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SchemeConfig {
    /// Label in the results (`scheme` column).
    pub name: String,
    /// Transport from the registry (`tailcut schemes` lists them).
    pub transport: String,
    /// Transport parameters; unknown keys are errors.
    #[serde(default)]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Switch queues for this scheme's run, replacing the experiment's `network` section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SwitchQueues>,
    /// Workload components this scheme carries (default: all). The others use `other_traffic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applies_to: Option<Vec<String>>,
    /// A host shim installed on every host for this scheme's run (hypervisor-level schemes that leave
    /// the tenants' TCP unchanged), e.g. `shim = { kind = "tracks", alpha = 10 }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shim: Option<ShimConfig>,
}

/// A host shim and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShimConfig {
    /// T-RACKs (docs/tracks.md); parameters of [`tailcut_proto::tracks::TracksConfig`].
    Tracks(TracksConfig),
}

/// The transport carrying workload components a scheme does not apply to (e.g. background TCP
/// under FUSO's latency-sensitive queries).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OtherTraffic {
    /// Transport from the registry (`tailcut schemes`) carrying the other components.
    pub transport: String,
    /// Its parameters, as a scheme's `params`.
    #[serde(default)]
    pub params: serde_json::Map<String, serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Experiment name (used for the default output folder).
    pub name: String,
    /// Master seed; every random stream of the run derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time at which the run stops; flows not finished by then are reported unfinished.
    #[serde(default = "default_max_time")]
    pub max_time: Dur,
    /// A run in which no packet reaches any host for this long of simulated time, with no flow
    /// arrival or fault left to come, has stalled (e.g. every path black-holed): it ends there with its
    /// flows unfinished and `stop_reason = "stalled"` instead of running to `max_time`. `0s` turns the
    /// watchdog off. Default 300 s: longer than TCP's largest back-off (Linux caps the RTO at 120 s,
    /// tailcut's `max_rto` defaults to 60 s), so a flow that could still get through has retransmitted
    /// at least twice inside the window (docs/simulator.md, "Stalled runs").
    // Left out of the resolved config at its default, so results and sweep hashes of configs that
    // never set it stay as they were; the schema still states the default.
    #[serde(
        default = "default_stall_timeout",
        skip_serializing_if = "is_default_stall_timeout"
    )]
    #[cfg_attr(feature = "schema", schemars(!skip_serializing_if))]
    pub stall_timeout: Dur,
    /// Carry real bytes in every message and check them where they arrive: each message holds a
    /// pattern seeded by its id, engines that can carry bytes do (TCP and the schemes built on it,
    /// MPTCP/FUSO, CloudBurst), and the run info counts messages received intact, corrupt, or
    /// without bytes (`app_bytes_*`). Flow tables are the same as without; slower (docs/net.md).
    #[serde(default, skip_serializing_if = "is_false")]
    // The resolved config leaves it out at its default; the schema still states that default.
    #[cfg_attr(feature = "schema", schemars(!skip_serializing_if))]
    pub check_bytes: bool,
    /// The network's shape: `kind` and that kind's keys.
    pub topology: TopologyConfig,
    /// Queues of switch ports and host NICs; every key has a default.
    #[serde(default)]
    pub network: SwitchQueues,
    /// Link faults at scheduled times. Default: none.
    #[serde(default)]
    pub faults: Vec<FaultConfig>,
    /// The flows, one table per component; every scheme runs the same flows.
    pub workload: Vec<WorkloadComponent>,
    /// The schemes to compare, each run on its own copy of the network.
    pub schemes: Vec<SchemeConfig>,
    /// Transport of the workload components a scheme's `applies_to` leaves out (required then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_traffic: Option<OtherTraffic>,
    /// What only a run on real hosts needs (`tailcut testbed run`: kernel stacks, sysctls, rate scale,
    /// checked there, `docs/testbed.md`). A simulator run carries it unread, so one file serves both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Any value deserialises here, but the testbed reads a table.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")
    )]
    pub testbed: Option<serde_json::Value>,
}

fn default_seed() -> u64 {
    1
}

fn default_max_time() -> Dur {
    Dur::from_millis(10_000)
}

/// See [`Experiment::stall_timeout`].
pub const DEFAULT_STALL_TIMEOUT: Dur = Dur(300 * 1_000_000_000);

fn default_stall_timeout() -> Dur {
    DEFAULT_STALL_TIMEOUT
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default_stall_timeout(d: &Dur) -> bool {
    *d == DEFAULT_STALL_TIMEOUT
}
