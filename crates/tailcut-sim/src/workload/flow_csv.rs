//! A plain CSV flow list, for workloads exported from traces or spreadsheets:
//!
//! ```text
//! src,dst,start,size
//! 0,5,0us,64KB
//! 3,5,2.5us,65536
//! ```
//!
//! The first non-comment line is the header naming the four columns `src`, `dst`, `start`, `size` (in any
//! order, each once, no others). `start` is a time with its unit (`ns`, `us`, `ms`, `s`, as in experiment
//! files); a bare number other than `0` is refused, because spreadsheets write seconds and tailcut's bare
//! numbers mean nanoseconds, and guessing would be off by 10^9. `size` is in bytes, a plain integer or with
//! a unit (`64KB`, `1MiB`). Rows need not be sorted by start. Lines starting with `#` and blank lines are
//! skipped; fields are trimmed; quoting is not supported (no field needs a comma).
//!
//! tailcut's own flow table (`flows.csv` of a run: a `flow_id` column) reads back as it is: its columns
//! `start_ns` (nanoseconds, the unit in the name) and `size_bytes` stand for `start` and `size`, its
//! other columns are ignored, and a flow listed once per scheme (one `flow_id`) is one flow, so the
//! file replays the run's workload.

use super::flow_file::{without_bom, FileFlow, FlowFileError, LineErr};
use tailcut_proto::units::{parse_bytes, parse_duration};

const COLUMNS: [&str; 4] = ["src", "dst", "start", "size"];
/// tailcut's flow table: its names for `start` and `size`, and the column that marks it.
const TABLE_START: &str = "start_ns";
const TABLE_SIZE: &str = "size_bytes";
const TABLE_FLOW_ID: &str = "flow_id";

/// Where the columns are in a file's rows.
struct Header {
    at: [usize; 4],
    /// The file is tailcut's flow table: bare starts are nanoseconds, a flow id repeats per scheme.
    flow_id: Option<usize>,
    width: usize,
}

/// Parses a CSV flow list; `file` names it in errors, `n_hosts` bounds the host indices.
pub fn parse(text: &str, file: &str, n_hosts: usize) -> Result<Vec<FileFlow>, FlowFileError> {
    let mut order: Option<Header> = None;
    let mut seen_ids = std::collections::HashSet::new();
    let mut flows = Vec::new();
    for (i, raw) in without_bom(text).lines().enumerate() {
        let e = LineErr { file, line: i + 1 };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some(head) = &order else {
            order = Some(header(&e, &fields)?);
            continue;
        };
        if fields.len() != head.width {
            return Err(e.at(
                "",
                format!(
                    "expected {} fields as the header names, found {}",
                    head.width,
                    fields.len()
                ),
            ));
        }
        if let Some(k) = head.flow_id {
            if !seen_ids.insert(fields[k].to_string()) {
                continue;
            }
        }
        let [src, dst, start, size] = head.at.map(|k| fields[k]);
        let start_ns = if head.flow_id.is_some() {
            start.parse::<u64>().map_err(|_| {
                e.at(
                    TABLE_START,
                    format!("'{start}' is not a whole number of nanoseconds"),
                )
            })?
        } else {
            start_ns(&e, start)?
        };
        let flow = FileFlow {
            src: e.host("src", src, n_hosts)?,
            dst: e.host("dst", dst, n_hosts)?,
            start_ns,
            size_bytes: size_bytes(&e, size)?,
        };
        flows.push(e.flow(flow)?);
    }
    if order.is_none() {
        return Err(FlowFileError {
            file: file.to_string(),
            line: None,
            field: None,
            message: "no header line (src,dst,start,size)".to_string(),
        });
    }
    Ok(flows)
}

/// Where each of [`COLUMNS`] is in the file's rows.
fn header(e: &LineErr, names: &[&str]) -> Result<Header, FlowFileError> {
    let flow_id = names.iter().position(|n| n.eq_ignore_ascii_case(TABLE_FLOW_ID));
    let mut at = [usize::MAX; 4];
    for (k, name) in names.iter().enumerate() {
        let column = match flow_id {
            Some(_) if name.eq_ignore_ascii_case(TABLE_START) => Some(2),
            Some(_) if name.eq_ignore_ascii_case(TABLE_SIZE) => Some(3),
            // The flow table's own `start`/`size` would be ambiguous beside these; it has none.
            Some(_) if !["src", "dst"].iter().any(|c| c.eq_ignore_ascii_case(name)) => None,
            _ => COLUMNS.iter().position(|c| c.eq_ignore_ascii_case(name)),
        };
        let Some(c) = column else {
            if flow_id.is_some() {
                continue;
            }
            return Err(e.at(
                "header",
                format!(
                    "unknown column '{name}': the header must name src, dst, start and size (or be \
                     tailcut's flow table: flow_id, src, dst, start_ns, size_bytes, ...)"
                ),
            ));
        };
        if at[c] != usize::MAX {
            return Err(e.at("header", format!("column '{name}' appears twice")));
        }
        at[c] = k;
    }
    if let Some(c) = at.iter().position(|&k| k == usize::MAX) {
        let name = match (flow_id, c) {
            (Some(_), 2) => TABLE_START,
            (Some(_), 3) => TABLE_SIZE,
            _ => COLUMNS[c],
        };
        return Err(e.at("header", format!("column '{name}' is missing")));
    }
    Ok(Header {
        at,
        flow_id,
        width: names.len(),
    })
}

fn start_ns(e: &LineErr, value: &str) -> Result<u64, FlowFileError> {
    if value.starts_with('-') {
        return Err(e.at("start", format!("'{value}' is negative")));
    }
    let bare = !value.is_empty() && value.chars().all(|c| c.is_ascii_digit() || c == '.');
    if bare && value.parse::<f64>() != Ok(0.0) {
        return Err(e.at(
            "start",
            format!(
                "'{value}' has no unit: write e.g. '{value}ns', '{value}us' or '{value}s' (a column \
                 named start_ns, as tailcut's flow table has, holds bare nanoseconds)"
            ),
        ));
    }
    parse_duration(value)
        .map(|d| d.0)
        .map_err(|m| e.at("start", m.reason))
}

fn size_bytes(e: &LineErr, value: &str) -> Result<u64, FlowFileError> {
    if value.starts_with('-') {
        return Err(e.at("size", format!("'{value}' must be > 0 bytes")));
    }
    parse_bytes(value).map_err(|m| e.at("size", m.reason))
}
