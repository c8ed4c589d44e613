//! The checked-in bad-input corpus (`tests/bad_inputs/`, its README says the format): every case is
//! refused with its expected error text, or runs to the end within a step budget; none panics.

use std::path::{Path, PathBuf};
use tailcut_sim::api;
use tailcut_sim::estimate::Limits;
use tailcut_sim::run;
use tailcut_sim::sim::StopReason;

/// The corpus runs under fixed limits, so that a case refused for its size is refused on every machine.
fn corpus_limits() -> Limits {
    Limits {
        max_memory_bytes: Some(2_000_000_000),
        max_events: Some(1_000_000_000),
        force: false,
    }
}

/// Progress reports come every 4096 events; a case that runs is cancelled after ~20M events.
const PROGRESS_BUDGET: u32 = 5_000;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad_inputs")
}

/// A case's text with every side file it names (`"NAME.topo.toml"`, `"NAME.cdf"`) made absolute, since
/// an experiment parsed from text (not loaded from its file) resolves paths against the working directory.
fn case_text(dir: &Path, path: &Path) -> String {
    let mut text = std::fs::read_to_string(path).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let side = entry.unwrap().path();
        let name = side.file_name().unwrap().to_string_lossy().to_string();
        if is_case(&side) || name.ends_with(".md") {
            continue;
        }
        text = text.replace(&format!("\"{name}\""), &format!("\"{}\"", side.display()));
    }
    text
}

fn is_case(p: &Path) -> bool {
    let name = p.file_name().unwrap().to_string_lossy();
    // Topology files and compare suites are `tailcut validate` cases of their own, checked through the
    // CLI by tests/python/test_bad_inputs.py (suites are read by the Python package).
    name.ends_with(".toml") && !name.ends_with(".topo.toml") && !name.ends_with(".suite.toml")
}

enum Expect {
    Error(Vec<String>),
    Runs {
        unfinished: bool,
    },
    /// Runs and ends at the stall watchdog, flows unfinished.
    Stalls,
}

fn expectation(text: &str, case: &str) -> Expect {
    let errors: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# expect: "))
        .map(str::to_string)
        .collect();
    let run = text.lines().find_map(|l| l.strip_prefix("# expect-run: "));
    match (errors.is_empty(), run) {
        (false, None) => Expect::Error(errors),
        (true, Some("finished")) => Expect::Runs { unfinished: false },
        (true, Some("unfinished")) => Expect::Runs { unfinished: true },
        (true, Some("stalled")) => Expect::Stalls,
        _ => {
            panic!("{case}: needs `# expect: TEXT` lines or one `# expect-run: finished|unfinished|stalled`")
        }
    }
}

/// Runs one case; `Err` says how it went wrong.
fn check_case(dir: &Path, path: &Path) -> Result<(), String> {
    let case = path.file_name().unwrap().to_string_lossy().to_string();
    let text = case_text(dir, path);
    let expect = expectation(&text, &case);
    let limits = corpus_limits();
    let outcome = std::panic::catch_unwind(|| -> Result<Option<(u64, u64, bool)>, String> {
        let exp = api::parse_toml(&text).map_err(|e| e.to_string())?;
        let prep = run::prepare_with(&exp, &limits).map_err(|e| e.to_string())?;
        if let Expect::Error(_) = expect {
            return Ok(None);
        }
        let mut calls = 0u32;
        let tables = run::run_prepared(&prep, &mut |_| {
            calls += 1;
            calls < PROGRESS_BUDGET
        })
        .map_err(|e| format!("run failed: {e}"))?;
        let started: u64 = tables.runs.iter().map(|r| r.flows_started).sum();
        let finished: u64 = tables.runs.iter().map(|r| r.flows_finished).sum();
        let stalled = tables.runs.iter().all(|r| r.stop_reason == StopReason::Stalled);
        Ok(Some((started, finished, stalled)))
    });
    match (outcome, expect) {
        (Err(_), _) => Err(format!("{case}: panicked")),
        (Ok(Err(got)), Expect::Error(want)) => match want.iter().find(|w| !got.contains(w.as_str())) {
            None => Ok(()),
            Some(w) => Err(format!("{case}: wanted `{w}` in the error, got `{got}`")),
        },
        (Ok(Ok(_)), Expect::Error(want)) => Err(format!("{case}: accepted, wanted an error with {want:?}")),
        (Ok(Err(got)), Expect::Runs { .. } | Expect::Stalls) => {
            Err(format!("{case}: wanted a run, got `{got}`"))
        }
        (Ok(Ok(counts)), Expect::Stalls) => match counts.expect("a run") {
            (started, finished, true) if finished < started => Ok(()),
            (started, finished, stalled) => Err(format!(
                "{case}: {finished} of {started} flows finished, stalled={stalled}; wanted a stall"
            )),
        },
        (Ok(Ok(counts)), Expect::Runs { unfinished }) => {
            let (started, finished, _) = counts.expect("a run");
            if unfinished == (finished < started) {
                Ok(())
            } else {
                Err(format!(
                    "{case}: {finished} of {started} flows finished, wanted unfinished={unfinished}"
                ))
            }
        }
    }
}

#[test]
fn every_corpus_case_gets_its_expected_outcome() {
    let dir = corpus_dir();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_case(p))
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "the corpus has {} cases", cases.len());
    let failures: Vec<String> = cases.iter().filter_map(|c| check_case(&dir, c).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
