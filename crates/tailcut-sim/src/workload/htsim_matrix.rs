//! htsim's connection-matrix files (`sim/datacenter/connection_matrix.cpp`, `ConnectionMatrix::load`), so
//! that workloads written for htsim run here unchanged:
//!
//! ```text
//! Nodes 16
//! Connections 2
//! 0->5 id 1 start 0 size 65536
//! 3->5 id 2 start 2500000 size 65536
//! ```
//!
//! Header lines (`Nodes N`, `Connections N`, `Triggers N`, `Failures N`) and `#` comments may appear
//! anywhere; blank lines are skipped. A connection line is `SRC->DST` followed by key-value tokens in any
//! order: `start` in picoseconds (htsim's unit; rounded to the nearest nanosecond, tailcut's unit),
//! `size` in bytes (both required), `id` (a positive integer, as htsim requires; tailcut renumbers flows
//! in start order, so the id is only checked) and `prio` (checked, not used: tailcut has no priority
//! queues for it). htsim's triggers, failures and `addon` start flows on events tailcut does not model,
//! so they are refused rather than silently started at time 0.

use super::flow_file::{without_bom, FileFlow, FlowFileError, LineErr};

/// Picoseconds per nanosecond.
const PS_PER_NS: f64 = 1000.0;

/// Header counts as the file states them.
#[derive(Default)]
struct Header {
    nodes: Option<u64>,
    connections: Option<(u64, usize)>,
}

/// Parses a connection matrix; `file` names it in errors, `n_hosts` bounds the host indices.
pub fn parse(text: &str, file: &str, n_hosts: usize) -> Result<Vec<FileFlow>, FlowFileError> {
    let mut header = Header::default();
    let mut flows = Vec::new();
    for (i, raw) in without_bom(text).lines().enumerate() {
        let e = LineErr { file, line: i + 1 };
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        let Some(&first) = tokens.first() else {
            continue;
        };
        if first.starts_with('#') {
            continue;
        }
        match first {
            "Nodes" | "Connections" | "Triggers" | "Failures" => {
                let count = header_count(&e, first, &tokens)?;
                match first {
                    "Nodes" => header.nodes = Some(count),
                    "Connections" => header.connections = Some((count, e.line)),
                    _ if count > 0 => {
                        return Err(e.at(
                            first,
                            format!("{first} are not supported: tailcut starts every flow at its start time"),
                        ))
                    }
                    _ => {}
                }
            }
            _ if first.contains("->") => flows.push(connection(&e, &tokens, n_hosts, header.nodes)?),
            "trigger" | "failure" => {
                return Err(e.at(
                    "",
                    format!("'{first}' lines are not supported: tailcut starts every flow at its start time"),
                ))
            }
            _ => {
                return Err(e.at(
                    "",
                    format!(
                        "'{first}' is neither a header (Nodes, Connections) nor a connection (SRC->DST ...)"
                    ),
                ))
            }
        }
    }
    if let Some((stated, line)) = header.connections {
        if stated != flows.len() as u64 {
            return Err(LineErr { file, line }.at(
                "Connections",
                format!(
                    "the header says {stated} connections, the file lists {}",
                    flows.len()
                ),
            ));
        }
    }
    Ok(flows)
}

fn header_count(e: &LineErr, key: &str, tokens: &[&str]) -> Result<u64, FlowFileError> {
    match tokens {
        [_, n] => n
            .parse()
            .map_err(|_| e.at(key, format!("'{n}' is not a non-negative integer"))),
        _ => Err(e.at(key, format!("expected '{key} N', found {} tokens", tokens.len()))),
    }
}

/// One `SRC->DST key value ...` line.
fn connection(
    e: &LineErr,
    tokens: &[&str],
    n_hosts: usize,
    nodes: Option<u64>,
) -> Result<FileFlow, FlowFileError> {
    let (src_text, dst_text) = tokens[0].split_once("->").expect("the caller found '->'");
    let src = e.host("src", src_text, n_hosts)?;
    let dst = e.host("dst", dst_text, n_hosts)?;
    if let Some(n) = nodes {
        for (field, h) in [("src", src), ("dst", dst)] {
            if u64::from(h) >= n {
                return Err(e.at(field, format!("host {h} is not below the header's Nodes {n}")));
            }
        }
    }
    let (mut start_ns, mut size_bytes) = (None, None);
    let mut rest = tokens[1..].iter();
    while let Some(&key) = rest.next() {
        match key {
            "addon" | "trigger" | "send_done_trigger" | "recv_done_trigger" => {
                return Err(e.at(
                    key,
                    "htsim's triggers are not supported: tailcut starts every flow at its start time",
                ))
            }
            "start" | "size" | "id" | "prio" => {}
            _ => return Err(e.at(key, "unknown token (expected start, size, id or prio)")),
        }
        let value = *rest
            .next()
            .ok_or_else(|| e.at(key, format!("'{key}' needs a value after it")))?;
        match key {
            "start" => start_ns = Some(start_picoseconds(e, value)?),
            "size" => size_bytes = Some(size(e, value)?),
            "id" => {
                if !matches!(value.parse::<u64>(), Ok(id) if id > 0) {
                    return Err(e.at(
                        "id",
                        format!("'{value}' is not a positive integer (htsim refuses id 0)"),
                    ));
                }
            }
            _ => {
                value
                    .parse::<i64>()
                    .map_err(|_| e.at("prio", format!("'{value}' is not an integer")))?;
            }
        }
    }
    let start_ns =
        start_ns.ok_or_else(|| e.at("start", "missing: every connection needs 'start PICOSECONDS'"))?;
    let size_bytes =
        size_bytes.ok_or_else(|| e.at("size", "missing: every connection needs 'size BYTES'"))?;
    e.flow(FileFlow {
        src,
        dst,
        start_ns,
        size_bytes,
    })
}

/// htsim reads the start as a float of picoseconds; converted to whole nanoseconds.
fn start_picoseconds(e: &LineErr, value: &str) -> Result<u64, FlowFileError> {
    let ps: f64 = value
        .parse()
        .map_err(|_| e.at("start", format!("'{value}' is not a number of picoseconds")))?;
    if !ps.is_finite() || ps < 0.0 {
        return Err(e.at(
            "start",
            format!("'{value}' must be a non-negative number of picoseconds"),
        ));
    }
    let ns = (ps / PS_PER_NS).round();
    if ns >= u64::MAX as f64 {
        return Err(e.at("start", format!("'{value}' picoseconds is out of range")));
    }
    Ok(ns as u64)
}

fn size(e: &LineErr, value: &str) -> Result<u64, FlowFileError> {
    if value.starts_with('-') {
        return Err(e.at("size", format!("'{value}' must be > 0 bytes")));
    }
    value
        .parse()
        .map_err(|_| e.at("size", format!("'{value}' is not a whole number of bytes")))
}
