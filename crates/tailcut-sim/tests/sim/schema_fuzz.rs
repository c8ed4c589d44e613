//! Schema-driven robustness: every numeric and string field of the experiment schema, and every
//! parameter of every scheme and shim in the registry, is replaced in turn by 0, -1, NaN, inf, the
//! largest TOML integer, 1e300, an empty string, a value with a wrong unit, a size below one packet and
//! a time past `max_time`. Each mutant must be refused with an error naming the field, or run to the
//! end within a step budget and finish at least one flow: never a panic or a hang, and never accepted
//! only to run nothing (a buffer below one packet, every flow starting after the run ends).
//!
//! The fields are enumerated from the resolved config (every default filled in, so every field is
//! present) and from the registry's parameter lists, so a field added later is covered without
//! editing this test.

use std::panic::{catch_unwind, AssertUnwindSafe};
use tailcut_sim::api;
use tailcut_sim::estimate::Limits;
use tailcut_sim::run;
use tailcut_sim::scheme;
use toml::Value;

const BASE: &str = r#"
name = "fuzz"
max_time = "200ms"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
fabric_rate = "10Gbps"
[network]
buffer = "100KB"
aqm = { kind = "ecn", k = "30KB" }
classes = [{ classes = [0], limit = "50KB" }, { classes = [1, 2] }]
[[faults]]
kind = "loss"
link = { between = ["leaf0", "spine0"] }
model = { kind = "gilbert_elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.5 }
at = "1ms"
until = "100ms"
[[faults]]
kind = "degrade"
link = { between = ["leaf1", "spine1"] }
rate = "1Gbps"
at = "2ms"
[[faults]]
kind = "delay"
link = { between = ["leaf1", "spine0"] }
extra = "10us"
[[faults]]
kind = "random_lossy_links"
fraction = 0.25
tiers = [1]
[[workload]]
name = "web"
pattern = { kind = "all_to_all" }
cdf = "websearch"
max_size = "50KB"
load = 0.2
flows = 12
request_bytes = "100B"
connection = "persistent"
connections_per_pair = 2
[[workload]]
name = "incast"
pattern = { kind = "incast", receiver = 0, fanout = 2, rounds = 2, round_interval = "20ms", jitter = { kind = "uniform", max = "10us" } }
fixed = "20KB"
start = "1ms"
[[schemes]]
name = "tcp"
transport = "tcp"
"#;

/// The mutant values: each field class's troublemakers.
fn mutants() -> Vec<(&'static str, Value)> {
    vec![
        ("0", Value::Integer(0)),
        ("-1", Value::Integer(-1)),
        ("NaN", Value::Float(f64::NAN)),
        ("inf", Value::Float(f64::INFINITY)),
        ("max", Value::Integer(i64::MAX)),
        ("1e300", Value::Float(1e300)),
        ("empty", Value::String(String::new())),
        ("wrong unit", Value::String("5 parsecs".into())),
        ("below one packet", Value::String("100B".into())),
        ("after max_time", Value::String("1000s".into())),
    ]
}

/// Every leaf (number or string, also inside arrays) of `v` with its path, `a.b[2].c`.
fn leaves(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Integer(_) | Value::Float(_) | Value::String(_) => out.push(path.to_string()),
        _ => {}
    }
}

/// The value at `path` (as [`leaves`] writes paths).
fn at<'a>(v: &'a mut Value, path: &str) -> &'a mut Value {
    let mut cur = v;
    for part in path.split('.') {
        let (key, idx) = match part.split_once('[') {
            Some((k, rest)) => (
                k,
                rest.split('[')
                    .map(|i| i.trim_end_matches(']').parse::<usize>().unwrap())
                    .collect(),
            ),
            None => (part, Vec::new()),
        };
        cur = cur.get_mut(key).unwrap();
        for i in idx {
            cur = cur.get_mut(i).unwrap();
        }
    }
    cur
}

fn limits() -> Limits {
    Limits {
        max_memory_bytes: Some(2_000_000_000),
        max_events: Some(100_000_000),
        force: false,
    }
}

/// Progress comes every 4096 events: ~1M events per mutant at most (a valid mutant of this tiny
/// experiment needs far fewer).
const PROGRESS_BUDGET: u32 = 250;

/// `Err` says what went wrong for this mutant.
fn check(doc: &Value, path: &str, label: &str) -> Result<(), String> {
    let text = toml::to_string(doc).map_err(|e| format!("{path}={label}: cannot write TOML: {e}"))?;
    let field = path.rsplit(['.', '[']).next().unwrap().trim_end_matches(']');
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<u64, String> {
        let exp = api::parse_toml(&text).map_err(|e| e.to_string())?;
        let prep = run::prepare_with(&exp, &limits()).map_err(|e| e.to_string())?;
        let mut calls = 0u32;
        let tables = run::run_prepared(&prep, &mut |_| {
            calls += 1;
            calls < PROGRESS_BUDGET
        })
        .map_err(|e| format!("run: {e}"))?;
        Ok(tables.runs.iter().map(|r| r.flows_finished).sum())
    }));
    match outcome {
        Err(_) => Err(format!("{path} = {label}: panicked")),
        Ok(Ok(0)) => Err(format!(
            "{path} = {label}: accepted, but no flow finished (a value that makes every run empty \
             must be refused, naming the field)"
        )),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if e.starts_with("run: cancelled") => {
            Err(format!("{path} = {label}: still running after the step budget"))
        }
        Ok(Err(e)) if e.starts_with("run: ") => Err(format!("{path} = {label}: {e}")),
        Ok(Err(e)) => {
            // The error names the field, or (for a value that conflicts with another) the table or a
            // sibling field of the same table.
            let table = path.rsplit_once('.').map_or("", |(t, _)| t);
            let table = table.split('[').next().unwrap();
            if e.contains(field) || (!table.is_empty() && e.contains(table)) {
                Ok(())
            } else {
                Err(format!("{path} = {label}: error does not name the field: {e}"))
            }
        }
    }
}

fn mutate_all(doc: &Value, only_under: &str) -> (usize, Vec<String>) {
    let mut paths = Vec::new();
    leaves(doc, "", &mut paths);
    let mut n = 0;
    let mut failures = Vec::new();
    for p in paths.iter().filter(|p| p.starts_with(only_under)) {
        for (label, v) in mutants() {
            // A mutant that hangs outside the event loop never reaches the budget: this names it.
            if std::env::var_os("SCHEMA_FUZZ_TRACE").is_some() {
                eprintln!("{p} = {label}");
            }
            let mut d = doc.clone();
            *at(&mut d, p) = v;
            n += 1;
            if let Err(e) = check(&d, p, label) {
                failures.push(e);
            }
        }
    }
    (n, failures)
}

fn resolved(text: &str) -> Value {
    let exp = api::parse_toml(text).unwrap();
    let json = serde_json::to_value(&exp).unwrap();
    let toml_text = toml::to_string(&json).unwrap();
    toml::from_str(&toml_text).unwrap()
}

fn report(n: usize, failures: &[String]) {
    assert!(n > 50, "only {n} mutants");
    assert!(
        failures.is_empty(),
        "{} of {n} mutants failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_experiment_field_is_checked() {
    std::panic::set_hook(Box::new(|_| {}));
    let doc = resolved(BASE);
    let (n, failures) = mutate_all(&doc, "");
    let _ = std::panic::take_hook();
    report(n, &failures);
}

#[test]
fn every_scheme_parameter_is_checked() {
    std::panic::set_hook(Box::new(|_| {}));
    let mut n = 0;
    let mut failures = Vec::new();
    for info in scheme::registry() {
        let mut params = toml::map::Map::new();
        for p in &info.params {
            if let Ok(v) = toml::Value::try_from(&p.default) {
                params.insert(p.name.clone(), v);
            }
        }
        // One small component: every parameter's mutants run with every scheme.
        let mut doc = resolved(BASE);
        let w = at(&mut doc, "workload").as_array_mut().unwrap();
        w.truncate(1);
        let s = at(&mut doc, "schemes[0]");
        if info.kind == "shim" {
            params.insert("kind".into(), Value::String(info.name.into()));
            s.as_table_mut()
                .unwrap()
                .insert("shim".into(), Value::Table(params));
        } else {
            s.as_table_mut()
                .unwrap()
                .insert("transport".into(), Value::String(info.name.into()));
            s.as_table_mut()
                .unwrap()
                .insert("params".into(), Value::Table(params));
        }
        let under = if info.kind == "shim" {
            "schemes[0].shim"
        } else {
            "schemes[0].params"
        };
        let (k, f) = mutate_all(&doc, under);
        n += k;
        failures.extend(f.into_iter().map(|e| format!("{}: {e}", info.name)));
    }
    let _ = std::panic::take_hook();
    report(n, &failures);
}
