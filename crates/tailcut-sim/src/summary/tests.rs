//! The shared cases (`tests/metrics/cases.json`, checked by Python's tests too) and invariants.

use super::*;
use proptest::prelude::*;
use serde_json::Value;
use tailcut_proto::MessageStats;

const CASES: &str = include_str!("../../../../tests/metrics/cases.json");

fn record(size: u64, request: u64, fct: Option<u64>, timeouts: u32, sent: u64, redundant: u64) -> FlowRecord {
    FlowRecord {
        flow_id: 0,
        scheme: "s".into(),
        component: "c".into(),
        src: 0,
        dst: 1,
        size_bytes: size,
        request_bytes: request,
        start_ns: 1_000,
        finish_ns: fct.map(|f| 1_000 + f),
        ideal_fct_ns: 1,
        stats: MessageStats {
            timeouts,
            sent_bytes: sent,
            redundant_bytes: redundant,
            ..MessageStats::default()
        },
    }
}

fn number(v: &Value) -> f64 {
    match v {
        Value::Null => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        v => v.as_f64().expect("a number, null or \"inf\""),
    }
}

fn same(got: f64, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= 1e-12 * want.abs()
}

fn field(s: &Summary, name: &str) -> f64 {
    match name {
        "flows" => s.flows as f64,
        "completed" => s.completed as f64,
        "unfinished" => s.unfinished as f64,
        "mean_fct_ns" => s.mean_fct_ns,
        "p50_fct_ns" => s.p50_fct_ns,
        "p95_fct_ns" => s.p95_fct_ns,
        "p99_fct_ns" => s.p99_fct_ns,
        "p999_fct_ns" => s.p999_fct_ns,
        "timeout_fraction" => s.timeout_fraction,
        "extra_bytes_ratio" => s.extra_bytes_ratio,
        "redundant_bytes_ratio" => s.redundant_bytes_ratio,
        other => panic!("cases.json names an unknown figure {other}"),
    }
}

#[test]
fn summaries_give_the_figures_of_the_shared_cases() {
    let cases: Value = serde_json::from_str(CASES).expect("valid JSON");
    for case in cases["summaries"].as_array().expect("a list") {
        let name = case["name"].as_str().expect("named");
        let flows: Vec<FlowRecord> = case["flows"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|r| {
                let u = |i: usize| r[i].as_u64().expect("an integer");
                record(u(0), u(1), r[2].as_u64(), u(3) as u32, u(4), u(5))
            })
            .collect();
        for (class, want) in case["expect"].as_object().expect("a table") {
            let s = Summary::over(
                flows
                    .iter()
                    .filter(|f| class == "all" || SizeClass::of(f.size_bytes).name() == class),
            );
            for (figure, value) in want.as_object().expect("a table") {
                let (got, want) = (field(&s, figure), number(value));
                assert!(same(got, want), "{name}: {class} {figure} is {got}, not {want}");
            }
        }
    }
}

#[test]
fn percentiles_give_the_ranks_of_the_shared_cases() {
    let cases: Value = serde_json::from_str(CASES).expect("valid JSON");
    for case in cases["percentiles"].as_array().expect("a list") {
        let name = case["name"].as_str().expect("named");
        let range = &case["finished_range"];
        let sorted: Vec<u64> = (range[0].as_u64().unwrap()..=range[1].as_u64().unwrap()).collect();
        let unfinished = case["unfinished"].as_u64().expect("an integer");
        for (label, q) in PERCENTILES {
            let (got, want) = (percentile(&sorted, unfinished, q), number(&case["expect"][label]));
            assert!(same(got, want), "{name}: {label} is {got}, not {want}");
        }
    }
}

proptest! {
    /// Percentiles grow with the rank, stay among the values or infinity, and are infinite exactly
    /// when the rank reaches the unfinished flows.
    #[test]
    fn percentiles_are_ordered_and_count_unfinished_flows_as_late(
        mut fcts in proptest::collection::vec(0u64..1_000_000, 0..200),
        unfinished in 0u64..20,
    ) {
        fcts.sort_unstable();
        let n = fcts.len() as u64 + unfinished;
        let values: Vec<f64> = PERCENTILES.iter().map(|&(_, q)| percentile(&fcts, unfinished, q)).collect();
        for (&(_, q), &v) in PERCENTILES.iter().zip(&values) {
            if n == 0 {
                prop_assert!(v.is_nan());
                continue;
            }
            let rank = (q * n).div_ceil(1000);
            prop_assert_eq!(v.is_infinite(), rank > fcts.len() as u64);
            prop_assert!(v.is_infinite() || fcts.contains(&(v as u64)));
        }
        prop_assert!(values.windows(2).all(|w| w[0] <= w[1] || w[0].is_nan()));
    }
}
