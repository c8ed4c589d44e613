//! The files of a testbed run: `flows.json` and `ports.json` (column-oriented, the simulator's
//! column names, which the Python front turns into Parquet) and `testbed.json`, what only a real run
//! has (kernel counters, lateness, TUN drops, the fabric's report). The Python front adds the
//! simulator's `summary.json` and `report.html`, computed from the flows as for a simulator run.

use crate::experiment::{FlowRow, SchemeSummary};
use std::collections::BTreeMap;
use std::path::Path;

/// The files [`write`] writes, in `out`.
pub const FILES: [&str; 3] = [FLOWS, PORTS, TESTBED];
const FLOWS: &str = "flows.json";
const PORTS: &str = "ports.json";
const TESTBED: &str = "testbed.json";

/// Writes `flows.json` and `ports.json` (column-oriented: `{column: [values]}`, the simulator's
/// column names) and `testbed.json` into `out`.
pub fn write(out: &Path, rows: &[FlowRow], summaries: &[SchemeSummary]) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    let columns = |records: Vec<serde_json::Value>| {
        let mut cols: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
        for r in records {
            if let serde_json::Value::Object(m) = r {
                for (k, v) in m {
                    cols.entry(k).or_default().push(v);
                }
            }
        }
        cols
    };
    let flow_vals = rows
        .iter()
        .map(|r| serde_json::to_value(r).expect("plain data"))
        .collect();
    let mut port_vals = Vec::new();
    for s in summaries {
        for p in &s.fabric.ports {
            let mut v = serde_json::to_value(p).expect("plain data");
            v["scheme"] = serde_json::Value::from(s.scheme.clone());
            if let Some(m) = v.as_object_mut() {
                let lat = m.remove("lateness").unwrap_or_default();
                for (k, x) in lat.as_object().into_iter().flatten() {
                    m.insert(format!("lateness_{k}"), x.clone());
                }
            }
            port_vals.push(v);
        }
    }
    let write = |name: &str, v: &dyn erased::Json| -> Result<(), String> {
        std::fs::write(out.join(name), v.json()).map_err(|e| format!("{}: {e}", out.join(name).display()))
    };
    write(FLOWS, &columns(flow_vals))?;
    write(PORTS, &columns(port_vals))?;
    write(TESTBED, &summaries.to_vec())?;
    Ok(())
}

mod erased {
    /// Serialises any of the output documents (a tiny object-safe wrapper over serde).
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string_pretty(self).expect("plain data")
        }
    }
}
