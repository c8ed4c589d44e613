//! The scheme layer, below every driver: one file per scheme declares its parameters (defaults and
//! docs), validates them with the path of the offending field and resolves them into a
//! [`SchemeSpec`] (an engine family with its checked configuration, plus what the scheme needs from
//! the network). `SCHEMES` lists them all; `tailcut schemes` prints that list (and the host shims),
//! and experiments name a scheme by its `transport` key. The simulator, the UDP runtime, the testbed
//! and the Python front all resolve a `[[schemes]]` entry here and nowhere else; a driver that cannot
//! run a spec refuses it ([`driver`]). `docs/adding-a-scheme.md` walks through adding one.

pub mod driver;
mod spec;

pub use driver::{resolve_for, Driver, Entry, Network};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
pub use spec::{
    EngineSpec, ReplicaPolicy, SchemeSpec, SwitchDefault, TRIM_HEADER_BYTES, TRIM_HEADER_HEADROOM,
};
use tailcut_proto::ConfigError;

mod cloudburst;
mod cp;
mod cp_dctcp;
mod dcquic;
mod dctcp;
mod fuso;
mod mptcp;
mod over_tcp;
mod pfabric;
mod pias;
mod proactive;
mod reconnect;
mod repflow;
mod replicated_dctcp;
mod tcp;
mod tcp_ir;
mod tlp;
mod tls13;
pub mod tracks;

pub use over_tcp::{OverTcp, TcpParts, TcpScheme, TCP_DOCS};

/// Largest number of copies of a replicated flow.
pub const MAX_COPIES: u32 = 4;

impl SchemeSpec {
    /// A spec of `engine` with no replication and the experiment's queues unchanged; [`resolve`]
    /// fills in the registry name.
    pub fn of(engine: EngineSpec) -> SchemeSpec {
        SchemeSpec {
            transport: "",
            engine,
            replicas: ReplicaPolicy::default(),
            switch: SwitchDefault::Unchanged,
        }
    }
}

/// A parameter's name and its documentation line.
pub type Doc = (&'static str, &'static str);

/// A scheme an experiment can name as its `transport`.
pub trait Scheme: Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// Every parameter, in the order `tailcut schemes` shows them.
    fn params(&self) -> Vec<Param>;
    /// Checks `params` (the user's keys, overlaid on the defaults) and builds the transport. Error
    /// paths are relative to the scheme's table: `params.min_rto`, `transport`.
    fn resolve(&self, params: &Map<String, Value>) -> Result<SchemeSpec, ConfigError> {
        self.resolve_filled(params).map(|(spec, _)| spec)
    }
    /// [`Scheme::resolve`], and the `params` table with every parameter at its effective value: the
    /// user's keys, the defaults, and defaults that follow other keys as they came out (TCP's
    /// `initial_rto` without a handshake, CloudBurst's sizes without `multi_block`). Resolving that
    /// table gives the same spec; optional parameters that are off stay absent.
    fn resolve_filled(
        &self,
        params: &Map<String, Value>,
    ) -> Result<(SchemeSpec, Map<String, Value>), ConfigError>;
}

/// Every registered scheme, in the order `tailcut schemes` lists them.
pub static SCHEMES: &[&dyn Scheme] = &[
    &OverTcp(tcp::TCP),
    &OverTcp(dctcp::DCTCP),
    &OverTcp(tlp::Tlp),
    &OverTcp(tcp_ir::TcpIr),
    &OverTcp(proactive::PROACTIVE),
    &OverTcp(repflow::RepFlow),
    &OverTcp(replicated_dctcp::ReplicatedDctcp),
    &OverTcp(pias::Pias),
    &OverTcp(pfabric::Pfabric),
    &OverTcp(cp::Cp),
    &OverTcp(cp_dctcp::CpDctcp),
    &cloudburst::CloudBurst,
    &mptcp::Mptcp,
    &fuso::Fuso,
    &dcquic::Dcquic,
    &OverTcp(reconnect::TCP_RECONNECT),
    &OverTcp(reconnect::DCTCP_RECONNECT),
    &OverTcp(tls13::TCP_TLS13),
    &OverTcp(tls13::DCTCP_TLS13),
];

/// One parameter as `tailcut schemes` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    pub name: String,
    /// `null` when the parameter is absent by default (e.g. no delayed ACKs).
    pub default: Value,
    pub doc: &'static str,
}

/// What `tailcut schemes` lists for one scheme or host shim.
#[derive(Clone, Debug, Serialize)]
pub struct SchemeInfo {
    pub name: &'static str,
    /// `transport` (named by a scheme's `transport` key) or `shim` (its `shim = { kind = ... }`).
    pub kind: &'static str,
    pub description: &'static str,
    pub params: Vec<Param>,
}

/// Every scheme, then every host shim, with their parameters.
pub fn registry() -> Vec<SchemeInfo> {
    SCHEMES
        .iter()
        .map(|s| SchemeInfo {
            name: s.name(),
            kind: "transport",
            description: s.description(),
            params: s.params(),
        })
        .chain(std::iter::once(tracks::info()))
        .collect()
}

/// Resolves an experiment's `transport` name and `params`; error paths are relative to the scheme's
/// table (`params.copies`, `transport`).
pub fn resolve(name: &str, params: &Map<String, Value>) -> Result<SchemeSpec, ConfigError> {
    resolve_filled(name, params).map(|(spec, _)| spec)
}

/// [`resolve`], and the scheme's `params` with every parameter at its effective value (defaults filled
/// in; see [`Scheme::resolve_filled`]): what a run reports back, so that re-running it resolves to the
/// same spec even if a default changes.
pub fn resolve_filled(
    name: &str,
    params: &Map<String, Value>,
) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
    let Some(scheme) = SCHEMES.iter().find(|s| s.name() == name) else {
        let known: Vec<&str> = SCHEMES.iter().map(|s| s.name()).collect();
        return Err(ConfigError::new(
            "transport",
            format!("unknown transport '{name}' (known: {})", known.join(", ")),
        ));
    };
    let (mut spec, filled) = scheme.resolve_filled(params)?;
    spec.transport = scheme.name();
    Ok((spec, filled))
}

/// The parameters `docs` names, each with its default from `defaults` (dotted names look into tables),
/// then any key of `defaults` that `docs` misses, undocumented (a test rejects those).
pub fn params_of(defaults: &Map<String, Value>, docs: &[Doc]) -> Vec<Param> {
    let documented = docs.iter().map(|&(name, doc)| {
        let mut parts = name.split('.');
        let first = parts.next().and_then(|k| defaults.get(k));
        let default = parts.fold(first, |v, k| v.and_then(|v| v.get(k)));
        Param {
            name: name.to_string(),
            default: default.cloned().unwrap_or(Value::Null),
            doc,
        }
    });
    let undocumented = defaults
        .iter()
        .filter(|(k, _)| !docs.iter().any(|(n, _)| n == k))
        .map(|(k, v)| Param {
            name: k.clone(),
            default: v.clone(),
            doc: "",
        });
    documented.chain(undocumented).collect()
}

/// A parameter struct as the table of its serialised fields.
pub fn to_map<T: Serialize>(v: &T) -> Map<String, Value> {
    match serde_json::to_value(v).expect("parameter structs serialise") {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Reads a parameter struct from a table of the user's `params`; the error path starts with `params`.
pub fn parse<T: DeserializeOwned>(m: Map<String, Value>) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(Value::Object(m)).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        ConfigError::new(path, e.inner().to_string()).at("params")
    })
}

/// `params` split in two: the keys `own` claims, and the rest.
pub fn split(
    params: &Map<String, Value>,
    own: impl Fn(&str) -> bool,
) -> (Map<String, Value>, Map<String, Value>) {
    params
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| own(k))
}

/// `defaults` with the user's `params` laid over it (keys replace keys).
pub fn overlay(mut defaults: Map<String, Value>, params: Map<String, Value>) -> Map<String, Value> {
    defaults.extend(params);
    defaults
}

/// `Err` at `params.<field>`.
pub fn bad<T>(field: &str, reason: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(field, reason).at("params"))
}

#[cfg(test)]
mod tests;
