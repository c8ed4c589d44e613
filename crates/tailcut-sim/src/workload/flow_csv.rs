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

use super::flow_file::{without_bom, FileFlow, FlowFileError, LineErr};
use tailcut_proto::units::{parse_bytes, parse_duration};

const COLUMNS: [&str; 4] = ["src", "dst", "start", "size"];

/// Parses a CSV flow list; `file` names it in errors, `n_hosts` bounds the host indices.
pub fn parse(text: &str, file: &str, n_hosts: usize) -> Result<Vec<FileFlow>, FlowFileError> {
    let mut order: Option<[usize; 4]> = None;
    let mut flows = Vec::new();
    for (i, raw) in without_bom(text).lines().enumerate() {
        let e = LineErr { file, line: i + 1 };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let Some(order) = order else {
            order = Some(header(&e, &fields)?);
            continue;
        };
        if fields.len() != COLUMNS.len() {
            return Err(e.at(
                "",
                format!(
                    "expected {} fields (src,dst,start,size), found {}",
                    COLUMNS.len(),
                    fields.len()
                ),
            ));
        }
        let [src, dst, start, size] = order.map(|k| fields[k]);
        let flow = FileFlow {
            src: e.host("src", src, n_hosts)?,
            dst: e.host("dst", dst, n_hosts)?,
            start_ns: start_ns(&e, start)?,
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
fn header(e: &LineErr, names: &[&str]) -> Result<[usize; 4], FlowFileError> {
    let mut at = [usize::MAX; 4];
    for (k, name) in names.iter().enumerate() {
        let Some(c) = COLUMNS.iter().position(|c| c.eq_ignore_ascii_case(name)) else {
            return Err(e.at(
                "header",
                format!("unknown column '{name}': the header must name src, dst, start and size"),
            ));
        };
        if at[c] != usize::MAX {
            return Err(e.at("header", format!("column '{name}' appears twice")));
        }
        at[c] = k;
    }
    if let Some(c) = at.iter().position(|&k| k == usize::MAX) {
        return Err(e.at("header", format!("column '{}' is missing", COLUMNS[c])));
    }
    Ok(at)
}

fn start_ns(e: &LineErr, value: &str) -> Result<u64, FlowFileError> {
    if value.starts_with('-') {
        return Err(e.at("start", format!("'{value}' is negative")));
    }
    let bare = !value.is_empty() && value.chars().all(|c| c.is_ascii_digit() || c == '.');
    if bare && value.parse::<f64>() != Ok(0.0) {
        return Err(e.at(
            "start",
            format!("'{value}' has no unit: write e.g. '{value}us' or '{value}s'"),
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
