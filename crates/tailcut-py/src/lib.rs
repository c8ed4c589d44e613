//! `tailcut._core`: the thin PyO3 layer between the Python front and `tailcut_sim::api`.
//!
//! Everything crosses the boundary as JSON text so that the Rust side stays the single owner of the config
//! schema and of the result layout; this crate only moves strings, releases the GIL while the simulator runs,
//! and turns Rust errors into the two Python exception classes users catch.

mod native;
mod net;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use tailcut_sim::api::{self, ApiError};
use tailcut_sim::estimate::Limits;
use tailcut_sim::run::WallClock;

// Named `tailcut.X` so that the classes pickle (the package re-exports them), e.g. across a process pool.
create_exception!(
    tailcut,
    ConfigError,
    PyValueError,
    "The experiment config is invalid; the message names the offending field path."
);
create_exception!(
    tailcut,
    SimulationError,
    PyRuntimeError,
    "A valid experiment failed while running (for example, packet conservation was violated)."
);

/// Validate `config_json` and return the fully resolved config (all defaults filled in) as JSON.
///
/// The run's resource estimate is checked too: `max_memory` (bytes, default this machine's available
/// memory) and `max_events` (default `estimate::DEFAULT_MAX_EVENTS`) refuse a run estimated to need
/// more; `force` skips the estimate. A panic (a simulator bug) raises `SimulationError`.
#[pyfunction]
#[pyo3(signature = (config_json, max_memory=None, max_events=None, force=false))]
fn validate(
    py: Python<'_>,
    config_json: &str,
    max_memory: Option<u64>,
    max_events: Option<u64>,
    force: bool,
) -> PyResult<String> {
    let limits = limits(max_memory, max_events, force);
    py.allow_threads(|| guarded(|| api::validate_json_with(config_json, &limits)))
        .map_err(|e| match e {
            ApiError::Config(e) => config_error(py, &e.path, &e.reason, e.to_string()),
            ApiError::Simulation(m) => SimulationError::new_err(m),
            other => ConfigError::new_err(other.to_string()),
        })
}

/// The limits a caller asked for; unset ones keep their defaults.
fn limits(max_memory: Option<u64>, max_events: Option<u64>, force: bool) -> Limits {
    let mut l = Limits::default();
    if max_memory.is_some() {
        l.max_memory_bytes = max_memory;
    }
    if max_events.is_some() {
        l.max_events = max_events;
    }
    l.force = force;
    l
}

/// Runs `f`, turning a panic (a simulator bug) into `ApiError::Simulation` with the panic message rather
/// than pyo3's PanicException (a BaseException that would escape `except Exception` in sweep workers
/// and print a Rust panic from the CLI).
fn guarded<T>(f: impl FnOnce() -> Result<T, ApiError>) -> Result<T, ApiError> {
    panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = format!("simulator panicked: {}", panic_message(payload.as_ref()));
        Err(ApiError::Simulation(message))
    })
}

/// `ConfigError(message)` carrying the offending field's `path` and the `reason` as attributes, for
/// callers that point at the field themselves (the compare-suite checker).
pub(crate) fn config_error(py: Python<'_>, path: &str, reason: &str, message: String) -> PyErr {
    let err = ConfigError::new_err(message);
    let value = err.value(py);
    match value
        .setattr("path", path)
        .and_then(|()| value.setattr("reason", reason))
    {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// Run one experiment and return the result document as JSON.
///
/// The config is prepared (validated, resolved) once, before anything runs, so that a bad config raises
/// `ConfigError` before the first event; an error during the run itself raises `SimulationError`. The
/// document's `resolved_config` is the config as it ran, every default filled in (as `validate` returns).
/// The GIL is released for the whole run and re-acquired only every ~100 ms to call `progress(fraction)`
/// and to check for Ctrl-C; a callback that returns a false value (other than `None`) or raises cancels
/// the run: `SimulationError("run cancelled ...")`, or the callback's own exception (`KeyboardInterrupt`
/// for Ctrl-C) re-raised here.
#[pyfunction]
#[pyo3(signature = (config_json, seed=None, progress=None, max_memory=None, max_events=None, force=false))]
fn run(
    py: Python<'_>,
    config_json: &str,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
    max_memory: Option<u64>,
    max_events: Option<u64>,
    force: bool,
) -> PyResult<String> {
    let limits = limits(max_memory, max_events, force);
    let (outcome, callback_error, cancelled) = py.allow_threads(|| {
        let mut callback_error: Option<PyErr> = None;
        let mut cancelled = false;
        // The simulator offers progress every few thousand events (about every millisecond); take the
        // GIL only every ~100 ms of wall time, and always for the final report.
        let clock = WallClock::start();
        let mut last_report = f64::NEG_INFINITY;
        let mut on_progress = |fraction: f64| -> bool {
            let now = clock.seconds();
            if fraction < 1.0 && now - last_report < 0.1 {
                return true;
            }
            last_report = now;
            let keep_going = Python::with_gil(|py| match report_progress(py, progress.as_ref(), fraction) {
                Ok(keep_going) => keep_going,
                Err(err) => {
                    callback_error = Some(err);
                    false
                }
            });
            cancelled |= !keep_going;
            keep_going
        };
        let outcome = guarded(|| api::run_json_with(config_json, seed, &limits, &mut on_progress));
        (outcome, callback_error, cancelled)
    });
    if let Some(err) = callback_error {
        return Err(err);
    }
    outcome.map_err(|err| match err {
        ApiError::Config(e) => config_error(py, &e.path, &e.reason, e.to_string()),
        ApiError::Cancelled if cancelled => {
            SimulationError::new_err("run cancelled by the progress callback")
        }
        other => SimulationError::new_err(other.to_string()),
    })
}

/// Re-run one scheme of an experiment recording every event of the flows `flows`; returns the run's
/// result document (that scheme only) with an `events` table and a `trace` summary, as JSON (see
/// `tailcut_sim::api::trace_json`). Errors as in [`run`]; an unknown scheme or flow id is a `ConfigError`
/// whose path is `scheme` or `flow`.
#[pyfunction]
#[pyo3(signature = (config_json, flows, scheme=None, seed=None, max_trace_events=500_000, max_memory=None, max_events=None, force=false))]
#[allow(clippy::too_many_arguments)]
fn trace(
    py: Python<'_>,
    config_json: &str,
    flows: Vec<u64>,
    scheme: Option<String>,
    seed: Option<u64>,
    max_trace_events: usize,
    max_memory: Option<u64>,
    max_events: Option<u64>,
    force: bool,
) -> PyResult<String> {
    // `trace_json` prepares the experiment before it checks the scheme and flows or runs anything.
    let limits = limits(max_memory, max_events, force);
    // A traced run is one scheme of an experiment that already ran: no progress callback, but Ctrl-C
    // still cancels it.
    let mut interrupted: Option<PyErr> = None;
    let outcome = py.allow_threads(|| {
        let mut on_progress = |_: f64| -> bool {
            Python::with_gil(|py| match py.check_signals() {
                Ok(()) => true,
                Err(e) => {
                    interrupted = Some(e);
                    false
                }
            })
        };
        guarded(|| {
            api::trace_json(
                config_json,
                seed,
                scheme.as_deref(),
                &flows,
                max_trace_events,
                &limits,
                &mut on_progress,
            )
        })
    });
    if let Some(err) = interrupted {
        return Err(err);
    }
    outcome.map_err(|err| match err {
        ApiError::Config(e) => config_error(py, &e.path, &e.reason, e.to_string()),
        other => SimulationError::new_err(other.to_string()),
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Calls the user's progress callback; `Ok(false)` asks the simulator to stop.
fn report_progress(py: Python<'_>, progress: Option<&Py<PyAny>>, fraction: f64) -> PyResult<bool> {
    py.check_signals()?;
    let Some(callback) = progress else {
        return Ok(true);
    };
    let answer = callback.call1(py, (fraction,))?;
    let answer = answer.bind(py);
    if answer.is_none() {
        return Ok(true);
    }
    answer.is_truthy()
}

/// The schemes the simulator knows, with their parameters and defaults, as a JSON list.
#[pyfunction]
fn schemes() -> String {
    api::schemes_json()
}

/// The JSON schema of an experiment file (`tailcut.reference` renders docs/experiment-file.md from it).
#[pyfunction]
fn experiment_schema() -> String {
    api::experiment_schema_json()
}

/// Check one scheme's `{transport, params, shim}` on its own (the compare suite's schemes); raises
/// `ConfigError` whose `path` is relative to the entry.
#[pyfunction]
fn check_scheme(py: Python<'_>, entry_json: &str) -> PyResult<()> {
    py.allow_threads(|| guarded(|| api::check_scheme_json(entry_json)))
        .map_err(|e| match e {
            ApiError::Config(e) => config_error(py, &e.path, &e.reason, e.to_string()),
            other => ConfigError::new_err(other.to_string()),
        })
}

/// The version of the Rust core this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The commit this module was built from (`build.rs`), `None` when the build had no git.
#[pyfunction]
fn build_commit() -> Option<&'static str> {
    option_env!("TAILCUT_COMMIT")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_schema, m)?)?;
    m.add_function(wrap_pyfunction!(check_scheme, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(build_commit, m)?)?;
    m.add_function(wrap_pyfunction!(native::testbed_main, m)?)?;
    m.add_function(wrap_pyfunction!(native::start_late_p50, m)?)?;
    m.add(
        "TESTBED_EXIT_INVALID_TIMING",
        tailcut_testbed::timing::EXIT_INVALID_TIMING,
    )?;
    let bounds = tailcut_testbed::config::TestbedConfig::default();
    m.add("TESTBED_MAX_START_LATE_NS", bounds.max_start_late.0)?;
    m.add_class::<net::NetClient>()?;
    m.add_class::<net::NetServer>()?;
    m.add_class::<net::KernelClient>()?;
    m.add("KERNEL_BASELINES", tailcut_net::cli::KERNEL_BASELINES.to_vec())?;
    m.add_function(wrap_pyfunction!(net::generate_cert, m)?)?;
    m.add_function(wrap_pyfunction!(net::net_scheme_entry, m)?)?;
    Ok(())
}
