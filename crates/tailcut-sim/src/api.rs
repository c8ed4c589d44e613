//! String-in, string-out entry points for bindings (Python) and tools: experiment descriptions as
//! JSON (or TOML), results as JSON with columnar tables.

use crate::config::{Experiment, ShimConfig};
use crate::estimate::Limits;
use crate::run::{self, RunError, Tables};
use crate::scheme;
use serde_json::{json, Map, Value};
use tailcut_proto::ConfigError;

/// An error for the caller: a `Config` error names the offending field path.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Config(ConfigError),
    #[error("{0}")]
    Simulation(String),
    #[error("cancelled")]
    Cancelled,
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Config(m) => ApiError::Config(m),
            RunError::Simulation(m) => ApiError::Simulation(m),
            RunError::Cancelled => ApiError::Cancelled,
        }
    }
}

/// Parses an experiment from JSON, naming the field of any error (e.g. `topology.k: invalid type`).
pub fn parse_json(text: &str) -> Result<Experiment, ApiError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let raw = serde_json::from_str::<Value>(text).ok();
        config_error(e.path(), &e.inner().to_string(), raw.as_ref())
    })
}

/// Parses an experiment from TOML.
pub fn parse_toml(text: &str) -> Result<Experiment, ApiError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let raw = toml::from_str::<toml::Value>(text)
            .ok()
            .and_then(|v| serde_json::to_value(v).ok());
        config_error(e.path(), e.inner().message(), raw.as_ref())
    })
}

/// Reads and parses an experiment file (TOML); the error names the file, then the field. File paths in
/// it resolve against the file's folder ([`crate::paths`]).
pub fn load_toml(path: &str) -> Result<Experiment, String> {
    let text =
        crate::limits::read_regular_file(std::path::Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
    // Editors on Windows may save a UTF-8 byte order mark, which TOML does not allow.
    let mut exp =
        parse_toml(text.strip_prefix('\u{feff}').unwrap_or(&text)).map_err(|e| format!("{path}: {e}"))?;
    let folder = std::path::absolute(path).map_err(|e| format!("{path}: {e}"))?;
    crate::paths::anchor_paths(&mut exp, folder.parent().unwrap_or(std::path::Path::new("/")));
    Ok(exp)
}

fn config_error(path: &serde_path_to_error::Path, msg: &str, raw: Option<&Value>) -> ApiError {
    let mut path_text = path.to_string();
    if let Some(key) = raw.and_then(|r| offending_key(r, path, msg)) {
        path_text = if path_text.is_empty() || path_text == "." {
            key
        } else {
            format!("{path_text}.{key}")
        };
    }
    ApiError::Config(path_error(&path_text, msg))
}

/// The field path a message starts with, if any ("leaves: invalid type ..." -> ("leaves", "invalid ...")).
fn inner_path(msg: &str) -> Option<(&str, &str)> {
    let (inner, rest) = msg.split_once(": ")?;
    let is_path = !inner.is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.[]".contains(c));
    is_path.then_some((inner, rest))
}

/// Serde cannot track the path inside internally tagged (`kind = ...`) tables, so an error there names
/// only the table. When the message quotes the offending value and exactly one key of that table (or of
/// a table nested in it) holds that value, that key is the field.
fn offending_key(raw: &Value, path: &serde_path_to_error::Path, msg: &str) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut v = raw;
    for seg in path.iter() {
        v = match seg {
            Segment::Seq { index } => v.get(*index)?,
            Segment::Map { key } => v.get(key)?,
            _ => return None,
        };
    }
    let table = v.as_object()?;
    if msg.contains("unknown field")
        || msg.contains("missing field")
        || !table.contains_key("kind")
        || inner_path(msg).is_some()
    {
        return None;
    }
    let quoted = |x: &Value| match x {
        Value::String(s) => msg.contains(&format!("\"{s}\"")) || msg.contains(&format!("'{s}'")),
        Value::Number(n) => {
            msg.contains(&format!("integer `{n}`")) || msg.contains(&format!("floating point `{n}`"))
        }
        Value::Bool(b) => msg.contains(&format!("boolean `{b}`")),
        _ => false,
    };
    let mut hits = Vec::new();
    for (k, x) in table {
        if k == "kind" {
            continue;
        }
        if quoted(x) {
            hits.push(k.clone());
        }
        if let Some(inner) = x.as_object() {
            hits.extend(
                inner
                    .iter()
                    .filter(|(ik, ix)| *ik != "kind" && quoted(ix))
                    .map(|(ik, _)| format!("{k}.{ik}")),
            );
        }
    }
    (hits.len() == 1).then(|| hits.remove(0))
}

/// The error `msg` at `path`, where a message that starts with an inner path (from a `kind`-tagged
/// table, see `tagged.rs`) continues the outer one: "topology" + "leaves: ..." -> "topology.leaves".
pub fn path_error(path: &str, msg: &str) -> ConfigError {
    // serde_json appends " at line L column C"; keep the message about the field.
    let msg = msg.split(" at line ").next().unwrap_or(msg);
    let path = if path == "." { "" } else { path };
    match inner_path(msg) {
        Some((inner, rest)) => ConfigError::new(inner, rest).at(path),
        None => ConfigError::new(path, msg),
    }
}

/// Validates an experiment and returns it fully resolved (every default filled in, scheme parameters
/// included) as JSON; the
/// resource estimate is checked against the default limits (this machine's available memory).
pub fn validate_json(config_json: &str) -> Result<String, ApiError> {
    validate_json_with(config_json, &Limits::default())
}

/// [`validate_json`] under explicit resource limits.
pub fn validate_json_with(config_json: &str, limits: &Limits) -> Result<String, ApiError> {
    let exp = parse_json(config_json)?;
    let prep = run::prepare_with(&exp, limits)?;
    Ok(serde_json::to_string(&prep.exp).expect("experiments serialise"))
}

/// One scheme as the compare suite declares it, apart from any topology or workload.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemeEntry {
    transport: String,
    #[serde(default)]
    params: Map<String, Value>,
    #[serde(default)]
    shim: Option<ShimConfig>,
}

/// Checks one scheme's `{transport, params, shim}` on its own, as an experiment's `schemes[i]` would be
/// checked; error paths are relative to the entry (`params.min_rto`).
pub fn check_scheme_json(entry_json: &str) -> Result<(), ApiError> {
    let de = &mut serde_json::Deserializer::from_str(entry_json);
    let entry: SchemeEntry = serde_path_to_error::deserialize(de).map_err(|e| {
        let raw = serde_json::from_str::<Value>(entry_json).ok();
        config_error(e.path(), &e.inner().to_string(), raw.as_ref())
    })?;
    let t = scheme::resolve(&entry.transport, &entry.params).map_err(ApiError::Config)?;
    if let Some(ShimConfig::Tracks(c)) = &entry.shim {
        scheme::tracks::resolve(c, &t.engine).map_err(|e| ApiError::Config(e.at("shim")))?;
    }
    Ok(())
}

/// Runs an experiment; see [`tables_json`] for the result document. The experiment is prepared
/// (validated, resolved, its flows generated) once, before anything runs: a config error is returned
/// before the first event.
pub fn run_json(
    config_json: &str,
    seed_override: Option<u64>,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<String, ApiError> {
    run_json_with(config_json, seed_override, &Limits::default(), progress)
}

/// [`run_json`] under explicit resource limits.
pub fn run_json_with(
    config_json: &str,
    seed_override: Option<u64>,
    limits: &Limits,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<String, ApiError> {
    let mut exp = parse_json(config_json)?;
    if let Some(s) = seed_override {
        exp.seed = s;
    }
    let prep = run::prepare_with(&exp, limits)?;
    let tables = run::run_prepared(&prep, progress)?;
    Ok(tables_json(&tables, &prep.exp).to_string())
}

/// Re-runs scheme `scheme` (by name; may be omitted when the experiment has one) recording every event
/// of the flows `flows` (flow ids) up to `max_events` events: the document of [`tables_json`] for that
/// scheme alone, plus `"events": {col: [..]}` (see [`crate::trace::columns`]) and `"trace": {max_events,
/// truncated_at_ns}`.
pub fn trace_json(
    config_json: &str,
    seed_override: Option<u64>,
    scheme: Option<&str>,
    flows: &[u64],
    max_events: usize,
    limits: &Limits,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<String, ApiError> {
    let bad = |path: &str, reason: String| ApiError::Config(ConfigError::new(path, reason));
    let mut exp = parse_json(config_json)?;
    if let Some(s) = seed_override {
        exp.seed = s;
    }
    let prep = run::prepare_with(&exp, limits)?;
    let names: Vec<&str> = prep.schemes.iter().map(|s| s.name.as_str()).collect();
    let k = match scheme {
        Some(name) => names.iter().position(|n| *n == name).ok_or_else(|| {
            bad(
                "scheme",
                format!(
                    "no scheme named '{name}'; the experiment has {}",
                    names.join(", ")
                ),
            )
        })?,
        None if names.len() == 1 => 0,
        None => {
            return Err(bad(
                "scheme",
                format!(
                    "the experiment has several schemes; choose one of {}",
                    names.join(", ")
                ),
            ))
        }
    };
    if flows.is_empty() {
        return Err(bad("flow", "choose at least one flow to trace".into()));
    }
    if let Some(f) = flows.iter().find(|&&f| f >= prep.flows.len() as u64) {
        return Err(bad(
            "flow",
            format!(
                "no flow {f}: the experiment's flow ids are 0 to {}",
                prep.flows.len().saturating_sub(1)
            ),
        ));
    }
    if max_events == 0 {
        return Err(bad("max_events", "must be at least 1".into()));
    }
    let (tables, trace) = run::run_traced(&prep, k, (flows, max_events), progress)?;
    let mut doc = tables_json(&tables, &prep.exp);
    doc["events"] = Value::Object(crate::trace::columns(&trace, &tables.ports));
    doc["trace"] = json!({
        "max_events": trace.max_events,
        "truncated_at_ns": trace.truncated_at.map(|t| t.0),
    });
    Ok(doc.to_string())
}

/// Every scheme and host shim with its parameters, defaults and documentation (`tailcut schemes`).
pub fn schemes_json() -> String {
    serde_json::to_string(&crate::scheme::registry()).expect("serialisable")
}

/// The JSON schema of an experiment file (the `Experiment` type: keys, types, defaults, docs), from
/// which `python -m tailcut.reference` generates docs/experiment-file.md.
#[cfg(feature = "schema")]
pub fn experiment_schema_json() -> String {
    serde_json::to_string(&schemars::schema_for!(Experiment)).expect("serialisable")
}

fn column<T: Into<Value>>(v: impl Iterator<Item = T>) -> Value {
    Value::Array(v.map(Into::into).collect())
}

/// `{"flows": {col: [..]}, "ports": {col: [..]}, "runs": [..], "resolved_config": {..}}`.
pub fn tables_json(t: &Tables, exp: &Experiment) -> Value {
    let f = &t.flows;
    let mut flows = Map::new();
    flows.insert("flow_id".into(), column(f.iter().map(|r| r.flow_id)));
    flows.insert("scheme".into(), column(f.iter().map(|r| r.scheme.clone())));
    flows.insert("component".into(), column(f.iter().map(|r| r.component.clone())));
    flows.insert("src".into(), column(f.iter().map(|r| r.src)));
    flows.insert("dst".into(), column(f.iter().map(|r| r.dst)));
    flows.insert("size_bytes".into(), column(f.iter().map(|r| r.size_bytes)));
    flows.insert("request_bytes".into(), column(f.iter().map(|r| r.request_bytes)));
    flows.insert("start_ns".into(), column(f.iter().map(|r| r.start_ns)));
    flows.insert("finish_ns".into(), column(f.iter().map(|r| r.finish_ns)));
    flows.insert("fct_ns".into(), column(f.iter().map(|r| r.fct_ns())));
    flows.insert("ideal_fct_ns".into(), column(f.iter().map(|r| r.ideal_fct_ns)));
    flows.insert(
        "slowdown".into(),
        column(
            f.iter()
                .map(|r| r.fct_ns().map(|x| x as f64 / r.ideal_fct_ns.max(1) as f64)),
        ),
    );
    flows.insert("timeouts".into(), column(f.iter().map(|r| r.stats.timeouts)));
    flows.insert(
        "fast_retransmits".into(),
        column(f.iter().map(|r| r.stats.fast_retransmits)),
    );
    flows.insert(
        "retransmitted_bytes".into(),
        column(f.iter().map(|r| r.stats.retransmitted_bytes)),
    );
    flows.insert(
        "redundant_bytes".into(),
        column(f.iter().map(|r| r.stats.redundant_bytes)),
    );
    flows.insert("sent_bytes".into(), column(f.iter().map(|r| r.stats.sent_bytes)));
    flows.insert(
        "completed".into(),
        column(f.iter().map(|r| r.finish_ns.is_some())),
    );

    let p = &t.ports;
    let mut ports = Map::new();
    ports.insert("scheme".into(), column(p.iter().map(|r| r.scheme.clone())));
    ports.insert("node".into(), column(p.iter().map(|r| r.node.clone())));
    ports.insert("port".into(), column(p.iter().map(|r| r.port)));
    ports.insert("peer".into(), column(p.iter().map(|r| r.peer.clone())));
    macro_rules! counter {
        ($($name:ident),*) => { $( ports.insert(stringify!($name).into(), column(p.iter().map(|r| r.counters.$name))); )* };
    }
    counter!(
        enqueued_packets,
        enqueued_bytes,
        dropped_overflow,
        dropped_aqm,
        dropped_link_loss,
        dropped_link_down,
        ecn_marked,
        trimmed,
        max_occupancy_bytes,
        tx_packets,
        tx_bytes
    );
    json!({
        "flows": flows,
        "ports": ports,
        "runs": serde_json::to_value(&t.runs).expect("serialisable"),
        "resolved_config": serde_json::to_value(exp).expect("serialisable"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "x"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
[[workload]]
name = "w"
pattern = { kind = "all_to_all" }
fixed = "10KB"
load = 0.1
flows = 10
[[schemes]]
name = "tcp"
transport = "tcp"
"#;

    fn error_of(text: &str) -> String {
        match parse_toml(text) {
            Ok(exp) => match crate::run::prepare(&exp) {
                Ok(_) => panic!("expected an error"),
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            ("leaves = 2", "leaves = \"many\"", "topology.leaves: invalid type"),
            ("leaves = 2", "leaves = 0", "topology.leaves: must be >= 1"),
            (
                "hosts_per_leaf = 2",
                "hosts_per_leaf = 2\nhost_rate = \"10Gbs\"",
                "topology.host_rate: invalid rate unit",
            ),
            (
                "hosts_per_leaf = 2",
                "hosts_per_leaf = 2\nleafs = 3",
                "topology.leafs: unknown field `leafs`",
            ),
            (
                "kind = \"leaf_spine\"",
                "kind = \"ring\"",
                "topology.kind: unknown kind 'ring'",
            ),
            ("load = 0.1", "load = 1.5", "workload[0].load: must be in (0, 1]"),
            (
                "transport = \"tcp\"",
                "transport = \"tcp\"\nparams = { min_rto = \"5xs\" }",
                "schemes[0].params.min_rto",
            ),
            (
                "transport = \"tcp\"",
                "transport = \"tcpp\"",
                "schemes[0].transport: unknown transport 'tcpp'",
            ),
            (
                "name = \"x\"",
                "name = \"x\"\nmax_tme = \"1s\"",
                "unknown field `max_tme`",
            ),
            (
                "pattern = { kind = \"all_to_all\" }",
                "pattern = { kind = \"incast\", receiver = \"h0\" }",
                "workload[0].pattern.receiver: invalid type",
            ),
            ("fixed = \"10KB\"", "fixed = \"ten\"", "workload[0].fixed"),
            (
                "name = \"x\"",
                "name = \"x\"\n[[faults]]\nkind = \"loss\"\nlink = { between = [\"leaf0\", \"spine0\"] }\nmodel = { kind = \"bernoulli\", p = \"high\" }",
                "faults[0].model.p: invalid type",
            ),
            (
                "name = \"x\"",
                "name = \"x\"\n[[faults]]\nkind = \"degrade\"\nlink = { between = [\"leaf0\", \"spine0\"] }\nrate = \"1Gbs\"",
                "faults[0].rate: invalid rate unit",
            ),
        ];
        for (from, to, want) in cases {
            let text = BASE.replacen(from, to, 1);
            let got = error_of(&text);
            assert!(got.contains(want), "for `{to}` wanted `{want}`, got `{got}`");
        }
    }
}
