//! Helpers of the real-network test binaries: the lock that runs them one at a time, the probe that
//! skips them where namespaces or TUN are missing, and running an experiment file's text.
#![allow(dead_code)] // each test binary uses its own part

use std::sync::{Mutex, MutexGuard};
use tailcut_testbed::experiment::{FlowRow, SchemeSummary};
use tailcut_testbed::probe;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The lock, or `None` when the machine cannot run these tests (the probe printed why).
pub fn realnet(test: &str) -> Option<MutexGuard<'static, ()>> {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    probe::should_run(test).then_some(guard)
}

/// The `[testbed]` line of the experiment files of these tests: the run waits this long past `max_time` for
/// flows still going. A run ends when its last flow does, so this bounds only a failing run; the
/// default 2 s is what a loaded 2-CPU machine can overrun with every flow healthy.
pub const GRACE: &str = "grace = \"120s\"";

/// Runs an experiment file's text on the testbed; returns its flow rows and per-scheme summaries.
pub fn run_text(text: &str) -> (Vec<FlowRow>, Vec<SchemeSummary>) {
    let (exp, tb) = tailcut_testbed::experiment::load(text).unwrap();
    tailcut_testbed::experiment::run_experiment(
        &exp,
        &tb,
        &tailcut_testbed::SelfCommand::binary(env!("CARGO_BIN_EXE_tailcut-testbed")),
        None,
    )
    .unwrap()
}

/// Runs an experiment file on the testbed; returns its flow rows and per-scheme summaries, after
/// checking that every flow finished.
pub fn run_file(text: &str) -> (Vec<FlowRow>, Vec<SchemeSummary>) {
    let (rows, summaries) = run_text(text);
    let incomplete: Vec<_> = rows
        .iter()
        .filter(|r| !r.completed)
        .map(|r| (r.flow_id, r.error.clone()))
        .collect();
    assert!(incomplete.is_empty(), "every flow finished: {incomplete:?}");
    assert!(
        rows.iter().all(|r| r.client_port.is_some()),
        "every connector reported its port"
    );
    (rows, summaries)
}

/// Lines of `ip -o link` and `ip netns list` in the root namespace.
pub fn root_net_state() -> (Vec<String>, String) {
    let run = |args: &[&str]| {
        let out = std::process::Command::new("ip").args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    // Drop the per-line counters that change between calls (ip -o link prints no counters).
    let links = run(&["-o", "link"])
        .lines()
        .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        .collect();
    (links, run(&["netns", "list"]))
}

/// Every `net:[INODE]` a process of this machine holds, as its namespace or as an open fd.
pub fn held_netns_inodes() -> Vec<u64> {
    let mut out = Vec::new();
    let parse = |p: &std::path::Path| -> Option<u64> {
        let t = std::fs::read_link(p).ok()?;
        let t = t.to_str()?;
        t.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
    };
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = e.path();
        if !e
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        out.extend(parse(&dir.join("ns/net")));
        if let Ok(fds) = std::fs::read_dir(dir.join("fd")) {
            out.extend(fds.flatten().filter_map(|f| parse(&f.path())));
        }
        if let Ok(tasks) = std::fs::read_dir(dir.join("task")) {
            out.extend(tasks.flatten().filter_map(|t| parse(&t.path().join("ns/net"))));
        }
    }
    out
}
