//! The scheme layer's registry on sockets: every scheme either runs on the runtime, byte-exact over
//! loopback, or is refused with a reason that names the field; and every `[[schemes]]` entry of
//! the project's experiment files goes through the runtime's resolution unchanged.

mod common;

use common::calls_through;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use tailcut_net::tls::TlsConfig;
use tailcut_net::{NetConfig, Network};
use tailcut_scheme::{registry, Entry};

/// Schemes the runtime runs, on a network without and with trimming switch ports. Written out so
/// that a scheme moving between "runs" and "refused" is a visible change of this test.
const RUNS: &[&str] = &[
    "tcp",
    "dctcp",
    "tlp",
    "tcp_ir",
    "proactive",
    "cloudburst",
    "mptcp",
    "fuso",
    "dcquic",
];
const RUNS_WHERE_SWITCHES_TRIM: &[&str] = &["cp", "cp_dctcp"];

/// Timers for a loaded machine (tests/common): the entries' own keys, as a file would add them.
fn patient(transport: &str) -> Map<String, Value> {
    let v = match transport {
        "cloudburst" => json!({"transmission_timeout": "1s", "decoder_timeout": "100ms"}),
        "dcquic" => json!({}),
        _ => json!({"min_rto": "5ms", "initial_rto": "20ms"}),
    };
    v.as_object().cloned().unwrap_or_default()
}

fn request(i: u64) -> Vec<u8> {
    let len = [0usize, 1, 1_400, 9_000, 30_000][(i % 5) as usize];
    (0..len).map(|k| (k as u64 * 13 + i) as u8).collect()
}

#[test]
fn every_scheme_runs_byte_exact_or_is_refused_naming_the_field() {
    for trims in [false, true] {
        let base = NetConfig {
            network: Network { trims },
            ..NetConfig::default()
        };
        for info in registry().into_iter().filter(|i| i.kind == "transport") {
            let name = info.name;
            let should_run = RUNS.contains(&name) || (trims && RUNS_WHERE_SWITCHES_TRIM.contains(&name));
            match base.clone().scheme(name, &patient(name)) {
                Ok(mut cfg) => {
                    assert!(should_run, "{name} (trims {trims}) was accepted; list it in RUNS");
                    assert_eq!(cfg.scheme.transport, name);
                    if name == "dcquic" {
                        cfg.tls = TlsConfig::generate(&["localhost".into()]).unwrap().0;
                    }
                    let (ss, cs, _) = calls_through(&cfg, |_| None, 20, request);
                    assert_eq!((ss.requests, cs.calls_completed), (20, 20), "{name}");
                }
                Err(e) => {
                    assert!(!should_run, "{name} (trims {trims}) refused: {e}");
                    assert!(
                        e.path == "transport" || e.path.starts_with("params."),
                        "{name}: the refusal names no field: {e}"
                    );
                    assert!(e.reason.len() > 20, "{name}: a reason, not a word: {e}");
                }
            }
        }
    }
}

fn experiment_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            experiment_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// Every `[[schemes]]` entry of every experiment file, unchanged: the runtime's resolution accepts
/// it, or refuses it naming a field of the entry (never an unknown key, never a panic). The entries
/// it accepts are the same the simulator resolves: equal engine configurations apart from the
/// socket defaults the entry did not set.
#[test]
fn every_experiment_files_scheme_entry_resolves_on_sockets_or_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut files = Vec::new();
    experiment_files(&root, &mut files);
    let (mut runs, mut refused) = (0, 0);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let Ok(doc) = toml::from_str::<toml::Table>(&text) else {
            continue;
        };
        let doc = serde_json::to_value(doc).unwrap();
        for (i, s) in doc["schemes"].as_array().into_iter().flatten().enumerate() {
            let here = format!("{}: schemes[{i}]", f.display());
            let table = s.as_object().unwrap();
            let entry = match Entry::from_table(table) {
                Ok(e) => e,
                Err(e) => {
                    // Only the simulated network's keys are refused here.
                    assert!(e.path == "network" || e.path == "shim", "{here}: {e}");
                    refused += 1;
                    continue;
                }
            };
            match NetConfig::default().scheme(&entry.transport, &entry.params) {
                Ok(cfg) => {
                    cfg.validate().unwrap_or_else(|e| panic!("{here}: {e}"));
                    runs += 1;
                }
                Err(e) => {
                    assert!(!e.reason.contains("unknown field"), "{here}: {e}");
                    assert!(
                        e.path == "transport" || e.path.starts_with("params."),
                        "{here}: {e}"
                    );
                    refused += 1;
                }
            }
        }
    }
    assert!(runs > 50 && refused > 10, "{runs} entries ran, {refused} refused");
}
