//! The real-network commands inside the extension module, so that `pip install tailcut` alone gives
//! them (python/tailcut/native.py): `tailcut testbed`, `tailcut-testbed` and `tailcut-tracksd` run
//! `tailcut_testbed::command::main` here, exactly what the cargo-built binary runs.

use pyo3::prelude::*;
use std::ffi::OsString;
use tailcut_testbed::SelfCommand;

/// Runs `tailcut-testbed ARGS...` and returns its exit code. The agents it starts in its hosts run
/// `program prefix... agent` (for the package: `python -m tailcut.native testbed agent`).
#[pyfunction]
pub fn testbed_main(py: Python<'_>, args: Vec<String>, program: String, prefix: Vec<String>) -> u8 {
    let me = SelfCommand::with_prefix(program, prefix.into_iter().map(OsString::from).collect());
    py.allow_threads(|| tailcut_testbed::command::main(&args, &me))
}

/// The testbed's start-lateness statistic (`tailcut_testbed::timing::start_late_p50`), for the net
/// bench's timing verdict: one rule for both.
#[pyfunction]
pub fn start_late_p50(start_late_ns: Vec<u64>) -> Option<u64> {
    tailcut_testbed::timing::start_late_p50(&start_late_ns)
}
