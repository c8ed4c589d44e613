//! Registry-wide rules: every parameter listed and documented, every listed parameter accepted.

use super::over_tcp::TCP_DOCS;
use super::{registry, resolve, resolve_filled, to_map, SCHEMES};
use serde_json::{Map, Value};
use tailcut_proto::tcp::{DelayedAck, TcpConfig};
use tailcut_proto::Dur;

/// `tailcut schemes` is the parameters' only reference: one without a doc line cannot be looked up.
#[test]
fn every_parameter_of_every_scheme_and_shim_is_documented_once() {
    let all = registry();
    assert_eq!(all.len(), SCHEMES.len() + 1, "schemes and the T-RACKs shim");
    for info in &all {
        assert!(!info.description.is_empty(), "{}", info.name);
        for (i, p) in info.params.iter().enumerate() {
            assert!(
                !p.doc.is_empty(),
                "{}: `{}` has no documentation",
                info.name,
                p.name
            );
            assert!(
                info.params[..i].iter().all(|q| q.name != p.name),
                "{}: `{}` listed twice",
                info.name,
                p.name
            );
        }
    }
}

/// The registry's text is what users read (`tailcut schemes`, docs/experiment-file.md): no pointers into
/// the project's issues or design notes, no Rust paths.
#[test]
fn registry_text_has_no_internal_notes() {
    for info in registry() {
        let texts = std::iter::once(info.description).chain(info.params.iter().map(|p| p.doc));
        for text in texts {
            for note in ["issue #", "(seed ", "::", "TODO"] {
                assert!(!text.contains(note), "{}: {note:?} in {text:?}", info.name);
            }
        }
    }
}

/// Every TCP option, optional ones included, is listed (serialisation omits the unset optional ones, so
/// set them all).
#[test]
fn every_tcp_option_is_listed() {
    let full = TcpConfig {
        spray_paths: 4,
        delayed_ack: Some(DelayedAck::Fixed(Dur::from_millis(1))),
        ..TcpConfig::default()
    };
    for key in to_map(&full).keys() {
        assert!(
            TCP_DOCS.iter().any(|(n, _)| n == key),
            "TCP option `{key}` is not listed"
        );
    }
    let tcp = registry().into_iter().find(|s| s.name == "tcp").unwrap();
    let spray = tcp.params.iter().find(|p| p.name == "spray_paths").unwrap();
    assert_eq!(spray.default, Value::from(0));
}

/// A listed parameter is a real one: given alone at its default it is never an unknown key.
#[test]
fn every_listed_parameter_is_accepted() {
    for info in registry().iter().filter(|i| i.kind == "transport") {
        for p in info.params.iter().filter(|p| !p.name.contains('.')) {
            let mut m = Map::new();
            m.insert(p.name.clone(), p.default.clone());
            if let Err(e) = resolve(info.name, &m) {
                assert!(
                    !e.reason.contains("unknown field"),
                    "{}: `{}` = {}: {e}",
                    info.name,
                    p.name,
                    p.default
                );
            }
        }
        resolve(info.name, &Map::new()).unwrap_or_else(|e| panic!("{}: {e}", info.name));
    }
}

/// `delayed_ack` is a time (the fixed rule, written back as the same string) or a table with
/// `kind = "linux"` (Linux's rules, written back with every key); a bad key of the table is named.
#[test]
fn delayed_ack_is_a_time_or_a_linux_table_and_errors_name_the_key() {
    let m: Map<String, Value> = serde_json::from_str(r#"{"delayed_ack": "1ms"}"#).unwrap();
    let (_, filled) = resolve_filled("tcp", &m).unwrap();
    assert_eq!(filled["delayed_ack"], Value::String("1ms".into()));
    let m: Map<String, Value> =
        serde_json::from_str(r#"{"delayed_ack": {"kind": "linux", "delack_max": "4ms"}}"#).unwrap();
    let (_, filled) = resolve_filled("tcp", &m).unwrap();
    let want: Value = serde_json::from_str(
        r#"{"kind": "linux", "ato_min": "40ms", "delack_min": "40ms", "delack_max": "4ms", "quickacks_max": 16}"#,
    )
    .unwrap();
    assert_eq!(filled["delayed_ack"], want);
    let full: TcpConfig = serde_json::from_value(Value::Object(filled)).unwrap();
    assert_eq!(
        full.delayed_ack,
        Some(DelayedAck::Linux(tailcut_proto::tcp::LinuxDelayedAck {
            delack_max: Dur::from_millis(4),
            ..Default::default()
        }))
    );
    for (table, path) in [
        (
            r#"{"delayed_ack": {"kind": "linux", "ato_min": "0ms"}}"#,
            "params.delayed_ack.ato_min",
        ),
        (
            r#"{"delayed_ack": {"kind": "linux", "ato_min": "fast"}}"#,
            "params.delayed_ack.ato_min",
        ),
        (
            r#"{"delayed_ack": {"kind": "linux", "delack_max": "0s"}}"#,
            "params.delayed_ack.delack_max",
        ),
        (
            r#"{"delayed_ack": {"kind": "linux", "ato": "4ms"}}"#,
            "params.delayed_ack.ato",
        ),
        (
            r#"{"delayed_ack": {"kind": "freebsd"}}"#,
            "params.delayed_ack.kind",
        ),
        (r#"{"delayed_ack": {"ato_min": "4ms"}}"#, "params.delayed_ack"),
        (r#"{"delayed_ack": "soon"}"#, "params.delayed_ack"),
    ] {
        let m: Map<String, Value> = serde_json::from_str(table).unwrap();
        let e = resolve("tcp", &m).unwrap_err();
        assert_eq!(e.path, path, "{table}: {e}");
    }
}

#[test]
fn unknown_transports_and_parameters_name_the_field() {
    let e = resolve("tcpp", &Map::new()).err().unwrap();
    assert_eq!(e.path, "transport");
    assert!(e.reason.contains("known: tcp, dctcp"), "{e}");
    let m: Map<String, Value> = serde_json::from_str(r#"{"min_rtto": "5ms"}"#).unwrap();
    let e = resolve("tcp", &m).err().unwrap();
    assert_eq!(e.path, "params.min_rtto");
    assert!(e.reason.contains("unknown field"), "{e}");
    let m: Map<String, Value> = serde_json::from_str(r#"{"copies": 9}"#).unwrap();
    assert_eq!(resolve("repflow", &m).err().unwrap().path, "params.copies");
}

#[test]
fn initial_rto_follows_min_rto_only_without_a_handshake() {
    let rto = |json: &str| {
        let m: Map<String, Value> = serde_json::from_str(json).unwrap();
        let cfg = super::over_tcp::tcp_config(TcpConfig::default(), m.clone(), &m).unwrap();
        cfg.initial_rto
    };
    assert_eq!(rto(r#"{"min_rto": "5ms"}"#), Dur::from_millis(5));
    assert_eq!(
        rto(r#"{"min_rto": "5ms", "handshake": true}"#),
        Dur::from_millis(1000)
    );
    assert_eq!(
        rto(r#"{"min_rto": "5ms", "initial_rto": "3s"}"#),
        Dur::from_millis(3000)
    );
}

/// A value of `default` that differs from it and is still valid in most places: a number one
/// step away, a boolean flipped, a number with a unit one unit up or down. `None` for values
/// without an obvious neighbour (names, tables, absent options), which
/// `every_parameter_reaches_the_spec` sets from its own table.
fn neighbours(default: &Value) -> Vec<Value> {
    match default {
        Value::Bool(b) => vec![Value::Bool(!b)],
        Value::Number(n) if n.is_u64() => {
            let n = n.as_u64().unwrap();
            vec![(n + 1).into(), n.saturating_sub(1).into(), (n * 2).into()]
        }
        Value::Number(n) => {
            let f = n.as_f64().unwrap();
            vec![(f * 0.5).into(), (f + 0.5).into()]
        }
        Value::String(s) => {
            let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
            let unit = &s[digits.len()..];
            match digits.parse::<u64>() {
                Ok(n) if !unit.is_empty() => vec![
                    Value::String(format!("{}{unit}", n + 1)),
                    Value::String(format!("{}{unit}", n.saturating_sub(1))),
                ],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// Parameters without a numeric or boolean neighbour: params tables (with any companion key the
/// value needs) that set them to something other than their default.
const OTHER_VALUES: &[(&str, &str)] = &[
    ("loss_detection", r#"{"loss_detection": "dupthresh"}"#),
    (
        "ecn",
        r#"{"ecn": false, "congestion_control": {"kind": "new_reno"}}"#,
    ),
    ("rto_backoff", r#"{"rto_backoff": "karn"}"#),
    ("rto_estimator", r#"{"rto_estimator": "rfc6298"}"#),
    ("host", r#"{"host": "paper"}"#),
    ("host", r#"{"host": "testbed"}"#),
    ("host_delay", r#"{"host_delay": {"read_after_arrival": "10us"}}"#),
    ("rack", r#"{"rack": {"reo_wnd_min_rtt_divisor": 8}}"#),
    ("delayed_ack", r#"{"delayed_ack": "1ms"}"#),
    (
        "delayed_ack",
        r#"{"delayed_ack": {"kind": "linux", "delack_max": "4ms"}}"#,
    ),
    (
        "congestion_control",
        r#"{"congestion_control": {"kind": "dctcp", "g": 0.125}, "ecn": true}"#,
    ),
    (
        "congestion_control",
        r#"{"congestion_control": {"kind": "new_reno"}}"#,
    ),
    (
        "congestion_control",
        r#"{"congestion_control": {"kind": "cubic"}}"#,
    ),
    ("codec", r#"{"codec": "raptorq"}"#),
    ("degree", r#"{"degree": {"kind": "fixed", "d": 3}}"#),
    ("path_mode", r#"{"path_mode": "ecmp"}"#),
    ("mps", r#"{"mps": {"negotiate": false}}"#),
    ("migration", r#"{"migration": {"alpha": 3.0}}"#),
    ("thresholds", r#"{"thresholds": ["50KB", "200KB"]}"#),
    ("wrr_weights", r#"{"wrr_weights": [2, 1]}"#),
    ("replicate_below", r#"{"replicate_below": "50KB"}"#),
    ("nic_rate", r#"{"nic_rate": "5Gbps"}"#),
];

/// A listed parameter reaches the engine: every scheme's every parameter, set to a valid value other
/// than its default, changes the resolved spec (the engine's configuration, replication or switch
/// needs). A key the registry lists but drops on the way would leave the spec as it was.
#[test]
fn every_parameter_reaches_the_spec() {
    let mut checked = 0;
    for info in registry().iter().filter(|i| i.kind == "transport") {
        let base = resolve(info.name, &Map::new()).unwrap();
        for p in &info.params {
            let mut candidates: Vec<Map<String, Value>> = neighbours(&p.default)
                .into_iter()
                .map(|v| {
                    let mut m = Map::new();
                    match p.name.split_once('.') {
                        // A key of a table parameter: set through the table.
                        Some((table, key)) => m.insert(table.into(), serde_json::json!({ key: v })),
                        None => m.insert(p.name.clone(), v),
                    };
                    m
                })
                .collect();
            candidates.extend(
                OTHER_VALUES
                    .iter()
                    .filter(|(n, _)| *n == p.name)
                    .map(|(_, v)| serde_json::from_str(v).unwrap()),
            );
            let reached = candidates
                .iter()
                .any(|m| resolve(info.name, m).is_ok_and(|s| s != base));
            // A parameter the scheme needs at one value (TLP's and CP's SACK) is read too when every
            // other value is refused, naming it.
            let top = format!("params.{}", p.name.split('.').next().unwrap_or_default());
            let pinned = !candidates.is_empty()
                && candidates.iter().all(|m| {
                    resolve(info.name, m)
                        .err()
                        .is_some_and(|e| e.path.starts_with(&top))
                });
            assert!(
                reached || pinned,
                "{}: `{}` (default {}) never changed the resolved spec; tried {candidates:?}",
                info.name,
                p.name,
                p.default
            );
            checked += 1;
        }
    }
    assert!(checked > 300, "only {checked} parameters checked");
}

/// Tables whose defaults depend on other keys: TCP's `initial_rto` follows `min_rto` without a handshake,
/// CloudBurst's sizes follow `multi_block`, CP's switch keys exist only with `cp = true`.
const DEPENDENT: &[&str] = &[
    r#"{"min_rto": "5ms"}"#,
    r#"{"min_rto": "5ms", "handshake": true}"#,
    r#"{"min_rto": "5ms", "initial_rto": "3s"}"#,
    r#"{"handshake": true}"#,
    r#"{"multi_block": false}"#,
    r#"{"multi_block": false, "symbol_bytes": 1000}"#,
    r#"{"nic_rate": "5Gbps"}"#,
    r#"{"nic_rate": "host"}"#,
    r#"{"cp": true}"#,
    r#"{"cp": true, "switch_header_bytes": "80B"}"#,
    r#"{"mps": {"negotiate": false}}"#,
];

/// The table a run reports back holds every parameter at its effective value, and resolving it gives
/// the spec the user's table gave: for every scheme, from its defaults, each parameter's other values
/// and the tables whose defaults depend on another key. Filling a filled table changes nothing.
#[test]
fn the_filled_table_resolves_to_the_same_spec() {
    let mut checked = 0;
    for info in registry().iter().filter(|i| i.kind == "transport") {
        let mut tables: Vec<Map<String, Value>> = vec![Map::new()];
        tables.extend(DEPENDENT.iter().map(|t| serde_json::from_str(t).unwrap()));
        for p in &info.params {
            for v in neighbours(&p.default) {
                let mut m = Map::new();
                match p.name.split_once('.') {
                    Some((table, key)) => m.insert(table.into(), serde_json::json!({ key: v })),
                    None => m.insert(p.name.clone(), v),
                };
                tables.push(m);
            }
        }
        tables.extend(
            OTHER_VALUES
                .iter()
                .map(|(_, v)| serde_json::from_str::<Map<String, Value>>(v).unwrap()),
        );
        for user in &tables {
            let Ok((spec, filled)) = resolve_filled(info.name, user) else {
                continue;
            };
            assert_eq!(resolve(info.name, user).unwrap(), spec);
            let (again, refilled) = resolve_filled(info.name, &filled)
                .unwrap_or_else(|e| panic!("{}: {user:?} filled to {filled:?}: {e}", info.name));
            assert_eq!(again, spec, "{}: {user:?} filled to {filled:?}", info.name);
            assert_eq!(refilled, filled, "{}: {user:?}", info.name);
            // The user's keys are kept (in their canonical spelling: "0s" is written "0ns").
            for k in user.keys() {
                assert!(filled.contains_key(k), "{}: {k} of {user:?}", info.name);
            }
            checked += 1;
        }
        // Every parameter with a default is in the table, unless it is valid only with another key
        // (CP's switch keys without cp = true).
        let (_, filled) = resolve_filled(info.name, &Map::new()).unwrap();
        for p in info
            .params
            .iter()
            .filter(|p| !p.name.contains('.') && !p.default.is_null())
        {
            let alone = Map::from_iter([(p.name.clone(), p.default.clone())]);
            if resolve(info.name, &alone).is_ok() {
                assert!(
                    filled.contains_key(&p.name),
                    "{}: `{}` not filled in",
                    info.name,
                    p.name
                );
            }
        }
    }
    assert!(checked > 300, "only {checked} tables checked");
}

/// Every scheme on every driver: the simulator runs each; Linux's stacks on the testbed run the
/// transports of `KERNEL_STACKS` and refuse the others at `transport`; a key without a kernel
/// setting is refused at its path. (Sockets: `tailcut-net`'s tests/registry.rs runs each.)
#[test]
fn every_scheme_on_every_driver_runs_or_is_refused_naming_the_field() {
    use crate::driver::{resolve_for, Driver, KERNEL_STACKS};
    for info in registry().iter().filter(|i| i.kind == "transport") {
        let none = Map::new();
        resolve_for(info.name, &none, Driver::Simulator).unwrap_or_else(|e| panic!("{}: {e}", info.name));
        let kernel = resolve_for(info.name, &none, Driver::Kernel);
        match KERNEL_STACKS.iter().find(|(n, _)| *n == info.name) {
            Some((_, settable)) => {
                kernel.unwrap_or_else(|e| panic!("{}: {e}", info.name));
                let mut m = Map::new();
                m.insert("max_rto".into(), Value::from("30s"));
                let e = resolve_for(info.name, &m, Driver::Kernel).unwrap_err();
                assert_eq!(e.path, "params.max_rto", "{e}");
                assert!(!settable.contains(&"max_rto"));
                // The testbed's hosts are Linux: the papers' sender is not theirs to run.
                let mut m = Map::new();
                m.insert("host".into(), Value::from("paper"));
                let e = resolve_for(info.name, &m, Driver::Kernel).unwrap_err();
                assert_eq!(e.path, "params.host", "{e}");
                // Profiles that describe Linux (the testbed's own hosts included) are theirs.
                m.insert("host".into(), Value::from("linux"));
                resolve_for(info.name, &m, Driver::Kernel).unwrap_or_else(|e| panic!("{e}"));
                m.insert("host".into(), Value::from("testbed"));
                match resolve_for(info.name, &m, Driver::Kernel) {
                    // MPTCP has no handshake model, which the testbed profile brings.
                    Err(e) if info.name == "mptcp" => assert_eq!(e.path, "params.host", "{e}"),
                    r => r.map(|_| ()).unwrap_or_else(|e| panic!("{}: {e}", info.name)),
                }
                // The profile's rules are the kernel's own: not settable one by one.
                let mut m = Map::new();
                m.insert("timer_hz".into(), Value::from(1000));
                let e = resolve_for(info.name, &m, Driver::Kernel).unwrap_err();
                assert_eq!(e.path, "params.timer_hz", "{e}");
            }
            None => assert_eq!(kernel.unwrap_err().path, "transport", "{}", info.name),
        }
    }
}

/// `host_delay` models an application's wake-ups: the runtime's applications are real, so it refuses
/// the key; the `testbed` profile (which describes real hosts) runs there.
#[test]
fn the_runtime_refuses_a_modelled_wake_up_and_runs_the_testbed_profile() {
    use crate::driver::{resolve_for, Driver, Network};
    let sockets = Driver::Sockets(Network::default());
    let mut m = Map::new();
    m.insert(
        "host_delay".into(),
        serde_json::json!({"read_after_arrival": "50us"}),
    );
    let e = resolve_for("tcp", &m, sockets).unwrap_err();
    assert_eq!(e.path, "params.host_delay", "{e}");
    let mut m = Map::new();
    m.insert("host".into(), Value::from("testbed"));
    let spec = resolve_for("tcp", &m, sockets).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.engine.tcp().map(|t| t.timer_hz), Some(250));
}
