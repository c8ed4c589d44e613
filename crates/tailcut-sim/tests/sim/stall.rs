//! The stall watchdog (`stall_timeout`, docs/simulator.md "Stalled runs"): a run in which nothing can
//! get through ends early with its flows unfinished and the reason, and it never fires while a flow
//! arrival or a fault (e.g. a repair) is still to come, nor on a run that makes progress.

use tailcut_sim::metrics::RunInfo;
use tailcut_sim::sim::StopReason;
use tailcut_sim::{api, run, Tables};

/// A 2 x 2 leaf-spine with `faults` (TOML) and 20 TCP flows, run to `max_time` unless it stalls.
fn experiment(max_time: &str, extra: &str, faults: &str) -> tailcut_sim::Experiment {
    let text = format!(
        r#"
name = "stall"
max_time = "{max_time}"
{extra}

[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2

[[workload]]
name = "w"
pattern = {{ kind = "all_to_all" }}
fixed = "10KB"
load = 0.1
flows = 20

[[schemes]]
name = "tcp"
transport = "tcp"
{faults}
"#
    );
    api::parse_toml(&text).expect("valid experiment")
}

/// Every leaf-spine link black-holed in both directions from `at` (until `until`, if given).
fn black_holes(at: &str, until: Option<&str>) -> String {
    let mut out = String::new();
    for leaf in 0..2 {
        for spine in 0..2 {
            out += &format!(
                "[[faults]]\nkind = \"loss\"\nlink = {{ between = [\"leaf{leaf}\", \"spine{spine}\"] }}\n\
                 model = {{ kind = \"blackhole\" }}\nat = \"{at}\"\n"
            );
            if let Some(u) = until {
                out += &format!("until = \"{u}\"\n");
            }
        }
    }
    out
}

fn run_it(exp: &tailcut_sim::Experiment) -> (Tables, RunInfo, f64) {
    let t = run(exp, &mut |_| true).expect("runs");
    let info = t.runs[0].clone();
    let wall = info.wall_seconds;
    (t, info, wall)
}

fn unfinished(t: &Tables) -> usize {
    t.flows.iter().filter(|f| f.finish_ns.is_none()).count()
}

#[test]
fn every_path_black_holed_ends_at_the_stall_not_at_max_time() {
    // max_time at its bound (100,000 s; 1,000,000 s is refused by the range check).
    let exp = experiment("100000s", "", &black_holes("0s", None));
    let (t, info, wall) = run_it(&exp);
    assert_eq!(info.stop_reason, StopReason::Stalled, "{info:?}");
    // Ends one to two windows (300 s by default) after the last delivery, at the first event after
    // that (retransmission timers back off to 60 s), not at max_time.
    assert!(info.sim_end_ns <= 1_000_000_000_000, "{info:?}");
    assert!(wall < 30.0, "took {wall} s of wall time");
    // Cross-leaf flows never arrive; flows within a leaf do not cross a black hole.
    assert!(unfinished(&t) > 0);
    assert_eq!(unfinished(&t) as u64, info.flows_started - info.flows_finished);
    let warning = info.warning.expect("a stalled run says why");
    assert!(warning.contains("stalled"), "{warning}");
    assert!(
        warning.contains("no packet reached any host for 300"),
        "{warning}"
    );
    assert!(warning.contains("unfinished"), "{warning}");
}

#[test]
fn the_timeout_is_configurable_and_zero_turns_the_watchdog_off() {
    let exp = experiment("100000s", "stall_timeout = \"10s\"", &black_holes("0s", None));
    let (_, info, _) = run_it(&exp);
    assert_eq!(info.stop_reason, StopReason::Stalled);
    assert!(info.sim_end_ns <= 100_000_000_000, "{info:?}");

    let exp = experiment("2000s", "stall_timeout = \"0s\"", &black_holes("0s", None));
    let (t, info, _) = run_it(&exp);
    assert_eq!(info.stop_reason, StopReason::MaxTime, "{info:?}");
    assert!(info.warning.is_none());
    assert!(unfinished(&t) > 0);
}

#[test]
fn a_scheduled_repair_is_waited_for() {
    // Black-holed from 0 to 1000 s: three stall windows pass before the repair, yet the watchdog must
    // wait for it (a fault is still to come), and the flows then finish.
    let exp = experiment("100000s", "", &black_holes("0s", Some("1000s")));
    let (t, info, _) = run_it(&exp);
    assert_eq!(info.stop_reason, StopReason::AllFinished, "{info:?}");
    assert_eq!(unfinished(&t), 0);
    assert!(info.sim_end_ns > 1_000_000_000_000);
}

#[test]
fn a_link_slower_than_the_window_is_not_a_stall() {
    // Every leaf-spine link at 30 bps: one 1.5 KB packet takes 400 s to serialise, longer than the 300 s
    // window, so windows pass without a delivery while packets are on their way.
    let mut slow = String::new();
    for leaf in 0..2 {
        for spine in 0..2 {
            slow += &format!(
                "[[faults]]\nkind = \"degrade\"\nlink = {{ between = [\"leaf{leaf}\", \"spine{spine}\"] }}\n\
                 rate = \"30bps\"\n"
            );
        }
    }
    let exp = experiment("5000s", "", &slow);
    let (_, info, _) = run_it(&exp);
    assert_ne!(info.stop_reason, StopReason::Stalled, "{info:?}");
}

#[test]
fn a_run_that_progresses_is_untouched() {
    let exp = experiment("10s", "", "");
    let (t, info, _) = run_it(&exp);
    assert_eq!(info.stop_reason, StopReason::AllFinished);
    assert_eq!(unfinished(&t), 0);
    assert!(info.warning.is_none());
    // The same flows to the nanosecond with the watchdog off.
    let off = experiment("10s", "stall_timeout = \"0s\"", "");
    let (t_off, _, _) = run_it(&off);
    let fct = |t: &Tables| t.flows.iter().map(|f| f.finish_ns).collect::<Vec<_>>();
    assert_eq!(fct(&t), fct(&t_off));
}

#[test]
fn stall_timeout_is_range_checked() {
    let exp = experiment("10s", "stall_timeout = \"200000s\"", "");
    let err = run(&exp, &mut |_| true).err().expect("refused").to_string();
    assert!(err.starts_with("stall_timeout:"), "{err}");
}
