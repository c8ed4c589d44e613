//! Configuration of one workload component (`[[workload]]` table in an experiment file).
//!
//! ```toml
//! [[workload]]
//! name = "query"
//! pattern = { kind = "one_to_all", clients = [3, 4, 5] }
//! server_hosts = [0, 1, 2]
//! cdf = "websearch"
//! max_size = "100KB"        # small flows only (FUSO Sec. 4.2)
//! load = 0.01               # 10 Mbps on a 1 Gbps link
//! request_bytes = "100B"
//! until = "10s"
//! ```

use serde::{Deserialize, Serialize};
use tailcut_proto::units::Bytes;
use tailcut_proto::Dur;

/// One source of flows: who talks to whom, how big, and when.
///
/// Sizes: exactly one of `cdf`, `fixed`, `choices`. Arrivals: `load` or `rate_per_host` make them Poisson
/// (then `flows` and/or `until` must bound the count); with neither, every flow starts at `start` (one per
/// pair for `pairs` / `permutation`; `incast` has its own round schedule and takes neither).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkloadComponent {
    /// Label used in results, e.g. "query" or "background". Required.
    pub name: String,
    /// Who sends to whom. Required.
    pub pattern: Pattern,

    /// Flow-size distribution: "websearch" (DCTCP, SIGCOMM 2010), "datamining" (VL2, SIGCOMM 2009) or a
    /// path to a two-column CDF file (relative to the experiment file's folder). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdf: Option<String>,
    /// With `cdf`: condition sizes on >= this many bytes. Default: no lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<Bytes>,
    /// With `cdf`: condition sizes on <= this many bytes (e.g. "100KB" for the papers' small flows).
    /// Default: no upper bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Bytes>,
    /// Every flow has this size, e.g. "64KB" (FUSO / CP incast). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<Bytes>,
    /// Each flow's size is uniform over this list, e.g. ["5KB", "10KB", "20KB", "50KB", "93KB"]
    /// (CloudBurst Sec. V). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<Bytes>>,

    /// Poisson arrivals at this fraction of the driving host's NIC rate, in (0, 1]: each driving host
    /// starts flows at `load * nic_rate_bps / (8 * mean_size_bytes)` flows/s, where `mean_size_bytes` is the
    /// exact mean of the (possibly truncated) size distribution. The driving host is the data sender for
    /// `all_to_all` and `rack_to_rack`, the client (data receiver) for `one_to_all`, the pair's sender for
    /// `pairs` and `permutation`. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// Poisson arrivals at this many flows per second per driving host (per pair for `pairs` /
    /// `permutation`), e.g. CloudBurst's 100..2000 requests/s. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_host: Option<f64>,

    /// Time of the first possible arrival (Poisson) or of every flow (no arrival process) or of the first
    /// incast round. Default 0.
    #[serde(default, skip_serializing_if = "is_zero_dur")]
    // The resolved config leaves it out at its default; the schema still states that default.
    #[cfg_attr(feature = "schema", schemars(!skip_serializing_if))]
    pub start: Dur,
    /// No flow of this component starts at or after this absolute time. Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Dur>,
    /// At most this many flows from this component (the first ones in time). Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u64>,

    /// Bytes of the request the data receiver sends before the data (request/response). 0 = plain flow.
    /// E.g. CloudBurst's 1.5 KB requests (Sec. V). Default 0.
    #[serde(default, skip_serializing_if = "is_zero_bytes")]
    // The resolved config leaves it out at its default; the schema still states that default.
    #[cfg_attr(feature = "schema", schemars(!skip_serializing_if))]
    pub request_bytes: Bytes,
    /// Restricts the hosts that receive data / issue requests when the pattern picks them at random.
    /// Default: all hosts the pattern allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_hosts: Option<Vec<u32>>,
    /// Restricts the hosts that send data / serve requests when the pattern picks them at random.
    /// Default: all hosts the pattern allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_hosts: Option<Vec<u32>>,

    /// How the simulator maps this component's flows onto transport connections. Not used by the
    /// generator; carried for the simulator. Default "per_flow".
    #[serde(default)]
    pub connection: Connection,
    /// With `connection = "persistent"`: connections kept open per (src, dst) pair, flows spread over them
    /// (T-RACKs Sec. V-B uses persistent connections). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_pair: Option<u32>,
}

fn is_zero_dur(d: &Dur) -> bool {
    *d == Dur::ZERO
}

fn is_zero_bytes(b: &Bytes) -> bool {
    b.0 == 0
}

/// Who sends to whom. Written as an inline table with a `kind` key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Pattern {
    /// Each flow: the driving data sender (from `hosts` ∩ `server_hosts`) sends to a uniformly random other
    /// host (from `hosts` ∩ `client_hosts`). The usual web-search / data-mining background.
    AllToAll {
        /// Host indices taking part. Default: all hosts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosts: Option<Vec<u32>>,
    },
    /// The given clients each fetch from uniformly random servers (`server_hosts`, default every other
    /// host). FUSO Sec. 4.2: clients on H4-H6 fetch from H1-H3.
    OneToAll {
        /// Host indices of the clients (data receivers). Required, non-empty.
        clients: Vec<u32>,
    },
    /// Each flow: a sender in rack `src_rack` sends to a uniformly random host in rack `dst_rack`
    /// (CloudBurst Sec. V background between its two racks).
    RackToRack {
        /// Rack index of the data senders (as in `HostInfo::rack`).
        src_rack: u32,
        /// Rack index of the data receivers.
        dst_rack: u32,
    },
    /// An explicit list of `[src, dst]` host pairs (data sender first).
    Pairs {
        /// `[sender, receiver]` host indices.
        pairs: Vec<[u32; 2]>,
    },
    /// N senders to one receiver, all starting together: each round every sender starts one flow at the
    /// round's start plus `jitter`, in a random sender order per round; rounds repeat every
    /// `round_interval`. FUSO Sec. 4.2 / CP incast (N x 64 KB), T-RACKs Sec. V-A CASE 1 (rounds every 3 s,
    /// exponential gaps of one packet time).
    Incast {
        /// Host index of the receiver.
        receiver: u32,
        /// The senders. Exactly one of `senders` / `fanout`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        senders: Option<Vec<u32>>,
        /// Number of distinct senders picked at random (once, from `server_hosts`, default every other
        /// host).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fanout: Option<u32>,
        /// Flows each sender starts per round (CloudBurst Sec. V incast: 4 senders, N concurrent
        /// flows). Default 1.
        #[serde(default = "default_one")]
        flows_per_sender: u32,
        /// Number of rounds. Default 1.
        #[serde(default = "default_one")]
        rounds: u32,
        /// Time between round starts. Required when `rounds > 1`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round_interval: Option<Dur>,
        /// Start offsets within a round. Default: none (all at the round start).
        #[serde(default)]
        jitter: Jitter,
    },
    /// Every host in `hosts` sends one flow to a distinct other host: a uniformly random derangement.
    Permutation {
        /// Host indices taking part (at least 2). Default: all hosts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosts: Option<Vec<u32>>,
    },
    /// The flows of an htsim connection-matrix file (`SRC->DST id N start PICOSECONDS size BYTES`), so
    /// htsim workloads run unchanged. The file gives sizes and starts: no size or arrival fields.
    ConnectionMatrix {
        /// The file, relative to the experiment file's folder (as `cdf` files are). Required.
        path: String,
    },
    /// The flows of a CSV file with the header `src,dst,start,size` (start with its unit, e.g. "10us";
    /// size in bytes). The file gives sizes and starts: no size or arrival fields.
    FlowCsv {
        /// The file, relative to the experiment file's folder (as `cdf` files are). Required.
        path: String,
    },
}

fn default_one() -> u32 {
    1
}

/// Start offsets of an incast round's flows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Jitter {
    /// Every flow starts at the round start.
    #[default]
    None,
    /// Each flow independently at the round start plus a uniform offset in `[0, max]`.
    Uniform {
        /// Largest offset.
        max: Dur,
    },
    /// In the round's random sender order, the first flow starts at the round start and each next one an
    /// independent exponential gap (with this mean) after the previous one (T-RACKs Sec. V-A CASE 1: mean
    /// gap one packet transmission time, 12 us for 1500 B at 1 Gbps).
    ExponentialGaps {
        /// Mean gap between consecutive flows.
        mean: Dur,
    },
}

/// How flows map onto transport connections (interpreted by the simulator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// Every flow opens its own connection.
    #[default]
    PerFlow,
    /// Flows between the same (src, dst) reuse `connections_per_pair` long-lived connections.
    Persistent,
}

impl WorkloadComponent {
    /// The number of connections per pair with `connection = "persistent"` (default 1); `None` for
    /// `per_flow`.
    pub fn persistent_connections_per_pair(&self) -> Option<u32> {
        match self.connection {
            Connection::Persistent => Some(self.connections_per_pair.unwrap_or(1)),
            Connection::PerFlow => None,
        }
    }
}

/// The `[[workload]]` array of a TOML document, for callers that keep the workload in its own file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub workload: Vec<WorkloadComponent>,
}

impl WorkloadFile {
    /// Parses TOML; the error names the offending key path (e.g. `workload[0].lod: unknown field`).
    pub fn from_toml(text: &str) -> Result<WorkloadFile, String> {
        let de = toml::Deserializer::new(text);
        serde_path_to_error::deserialize(de).map_err(|e| format!("{}: {}", e.path(), e.inner().message()))
    }
}
