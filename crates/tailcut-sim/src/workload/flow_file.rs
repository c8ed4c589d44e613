//! Workloads read from a file that lists every flow: an htsim connection matrix
//! ([`super::htsim_matrix`]) or a CSV flow list ([`super::flow_csv`]).
//!
//! The file gives each flow's hosts, size and start, so the component's size distribution and arrival
//! process fields must be absent. Paths are relative to the working directory, as for CDF files.

use super::config::WorkloadComponent;
use super::generate::{Ctx, RawFlow};
use super::WorkloadError;
use std::fmt;
use std::path::Path;

/// A flow file that cannot be read or has a bad line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowFileError {
    /// The file as named in the experiment.
    pub file: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// The field of that line (`src`, `dst`, `start`, `size`, ...), when one is at fault.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for FlowFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, " line {l}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for FlowFileError {}

/// One flow as a file gives it, before the component's flows are merged and numbered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFlow {
    pub src: u32,
    pub dst: u32,
    /// Start time in nanoseconds.
    pub start_ns: u64,
    pub size_bytes: u64,
}

/// Builds the errors of one line of one file.
pub(super) struct LineErr<'a> {
    pub(super) file: &'a str,
    pub(super) line: usize,
}

impl LineErr<'_> {
    pub(super) fn at(&self, field: &str, message: impl Into<String>) -> FlowFileError {
        FlowFileError {
            file: self.file.to_string(),
            line: Some(self.line),
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }

    /// A host index: a non-negative integer below `n_hosts`.
    pub(super) fn host(&self, field: &str, text: &str, n_hosts: usize) -> Result<u32, FlowFileError> {
        let h: u32 = text.parse().map_err(|_| {
            self.at(
                field,
                format!("'{text}' is not a host index (a non-negative integer)"),
            )
        })?;
        if (h as usize) >= n_hosts {
            return Err(self.at(
                field,
                format!("host {h} is out of range (the topology has {n_hosts} hosts, 0..{n_hosts})"),
            ));
        }
        Ok(h)
    }

    /// The checks every flow gets whatever its file format.
    pub(super) fn flow(&self, f: FileFlow) -> Result<FileFlow, FlowFileError> {
        if f.src == f.dst {
            return Err(self.at("dst", format!("host {} sends to itself", f.src)));
        }
        crate::limits::flow_size("size", f.size_bytes).map_err(|e| self.at(&e.path, e.reason))?;
        if f.start_ns > crate::limits::MAX_TIME.0 {
            return Err(self.at(
                "start",
                format!("must be at most 100000s, got {}", tailcut_proto::Dur(f.start_ns)),
            ));
        }
        Ok(f)
    }
}

/// Text after a UTF-8 byte order mark, which spreadsheet exports put first and `split` does not trim.
pub(super) fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Which fields of the component a flow file leaves no room for.
fn reject_generator_fields(c: &WorkloadComponent, cx: &Ctx) -> Result<(), WorkloadError> {
    let set = [
        ("cdf", c.cdf.is_some()),
        ("min_size", c.min_size.is_some()),
        ("max_size", c.max_size.is_some()),
        ("fixed", c.fixed.is_some()),
        ("choices", c.choices.is_some()),
        ("load", c.load.is_some()),
        ("rate_per_host", c.rate_per_host.is_some()),
        ("start", c.start.0 != 0),
        ("until", c.until.is_some()),
        ("flows", c.flows.is_some()),
        ("client_hosts", c.client_hosts.is_some()),
        ("server_hosts", c.server_hosts.is_some()),
    ];
    match set.iter().find(|(_, given)| *given) {
        Some((field, _)) => Err(cx.err(
            field,
            "not used: the flow file gives every flow's hosts, size and start",
        )),
        None => Ok(()),
    }
}

/// The flows of a file component, in start order (equal starts keep the file's order).
pub(super) fn component_flows(
    c: &WorkloadComponent,
    cx: &Ctx,
    path: &str,
    parse: fn(&str, &str, usize) -> Result<Vec<FileFlow>, FlowFileError>,
) -> Result<Vec<RawFlow>, WorkloadError> {
    reject_generator_fields(c, cx)?;
    let text = crate::limits::read_regular_file(Path::new(path)).map_err(|e| {
        cx.err(
            "pattern.path",
            FlowFileError {
                file: path.to_string(),
                line: None,
                field: None,
                message: format!("cannot read: {e}"),
            }
            .to_string(),
        )
    })?;
    let mut flows: Vec<RawFlow> = parse(&text, path, cx.n_hosts())
        .map_err(|e| cx.err("pattern.path", e.to_string()))?
        .into_iter()
        .map(|f| RawFlow {
            start: tailcut_proto::Time(f.start_ns),
            src: f.src,
            dst: f.dst,
            size_bytes: f.size_bytes,
        })
        .collect();
    if flows.is_empty() {
        return Err(cx.err("pattern.path", format!("{path}: the file lists no flows")));
    }
    flows.sort_by_key(|f| f.start);
    Ok(flows)
}
