"""The summary's definition (docs/metrics.md) on hand-made flows tables and on the cases the Rust summary
checks too (tests/metrics/cases.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailcut import summarize
from tailcut.summary import PERCENTILES, percentile, size_class

CASES = json.loads((Path(__file__).parents[1] / "metrics" / "cases.json").read_text())


def flows(rows: list[tuple]) -> pd.DataFrame:
    cols = ["scheme", "size_bytes", "sent_bytes", "fct_ns", "timeouts", "completed"]
    return pd.DataFrame(rows, columns=cols)


@pytest.fixture
def table() -> pd.DataFrame:
    small = [
        ("tcp", 1_000, 1_000 + (500 if i == 0 else 0), float(i + 1), 1 if i < 2 else 0, True)
        for i in range(100)
    ]
    small.append(("tcp", 99_999, 99_999, math.nan, 3, False))  # unfinished, still counted
    medium = [("tcp", 100_000, 110_000, 1e6, 0, True), ("tcp", 999_999, 999_999, 2e6, 0, True)]
    large = [("tcp", 1_000_000, 1_000_000, 5e7, 0, True)]
    other = [("dctcp", 5_000, 5_000, 10.0, 0, True)]
    return flows(small + medium + large + other)


def row(summary: pd.DataFrame, scheme: str, cls: str) -> pd.Series:
    return summary[(summary["scheme"] == scheme) & (summary["size_class"] == cls)].iloc[0]


def test_size_classes_boundaries(table: pd.DataFrame) -> None:
    s = summarize(table)
    assert row(s, "tcp", "small")["count"] == 101  # 99_999 B is small
    assert row(s, "tcp", "medium")["count"] == 2  # 100_000 and 999_999 B
    assert row(s, "tcp", "large")["count"] == 1  # 1_000_000 B
    assert row(s, "tcp", "all")["count"] == 104
    assert list(s["size_class"].unique()) == ["small", "medium", "large", "all"]


def test_percentiles_by_nearest_rank_with_unfinished_flows_infinitely_late(table: pd.DataFrame) -> None:
    r = row(summarize(table), "tcp", "small")
    assert r["completed"] == 100
    assert r["unfinished"] == 1
    assert r["mean_fct_ns"] == pytest.approx(50.5)  # over the completed flows
    # 101 flows: ranks ceil(0.5 * 101) = 51, 96, 100 and 101, the unfinished one.
    assert (r["p50_fct_ns"], r["p95_fct_ns"], r["p99_fct_ns"]) == (51, 96, 100)
    assert r["p999_fct_ns"] == math.inf


def test_timeout_fraction_counts_all_flows(table: pd.DataFrame) -> None:
    # two finished flows and the unfinished one had timeouts, out of 101 small flows
    assert row(summarize(table), "tcp", "small")["timeout_fraction"] == pytest.approx(3 / 101)


def test_extra_bytes_ratio_counts_what_unfinished_flows_sent(table: pd.DataFrame) -> None:
    s = summarize(table)
    # The unfinished small flow's 99 999 B delivered nothing: all extra, over the 100 completed flows' bytes.
    assert row(s, "tcp", "small")["extra_bytes_ratio"] == pytest.approx((500 + 99_999) / 100_000)
    assert row(s, "tcp", "medium")["extra_bytes_ratio"] == pytest.approx(10_000 / 1_099_999)
    assert row(s, "tcp", "large")["extra_bytes_ratio"] == 0


def test_a_request_is_payload() -> None:
    t = flows([("tcp", 1_000, 1_200, 5.0, 0, True)]).assign(request_bytes=[100])
    assert row(summarize(t), "tcp", "all")["extra_bytes_ratio"] == pytest.approx(100 / 1_100)


def test_columns_nobody_measured_give_nan_not_zero() -> None:
    # A testbed's kernel reports no per-flow timeouts or bytes sent: its table holds None there.
    r = row(summarize(flows([("linux", 1_000, None, 5.0, None, True)] * 2)), "linux", "all")
    assert r["count"] == 2 and r["p50_fct_ns"] == 5.0
    assert math.isnan(r["timeout_fraction"]) and math.isnan(r["extra_bytes_ratio"])


def test_empty_class_has_zero_count_and_nan_stats(table: pd.DataFrame) -> None:
    r = row(summarize(table), "dctcp", "large")
    assert r["count"] == 0 and r["unfinished"] == 0
    assert math.isnan(r["p99_fct_ns"]) and math.isnan(r["timeout_fraction"])


def test_all_unfinished_reports_them() -> None:
    r = row(summarize(flows([("tcp", 10, 10, math.nan, 1, False)] * 3)), "tcp", "all")
    assert r["count"] == 3 and r["unfinished"] == 3 and r["completed"] == 0
    assert r["p50_fct_ns"] == math.inf and math.isnan(r["mean_fct_ns"])


def test_group_by_extra_columns(table: pd.DataFrame) -> None:
    t = table.assign(seed=[1 + i % 2 for i in range(len(table))])
    s = summarize(t, by=["scheme", "seed"])
    assert set(s["seed"]) == {1, 2}
    assert len(s) == 3 * 4  # tcp x 2 seeds, dctcp (one flow) x 1 seed; 4 size classes each


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=20_000_000),
            st.integers(min_value=0, max_value=10_000),
            st.floats(min_value=1, max_value=1e9),
            st.integers(min_value=0, max_value=3),
            st.booleans(),
        ),
        max_size=60,
    )
)
def test_summary_invariants(rows: list[tuple]) -> None:
    table = flows(
        [("tcp", s, s + extra, fct if done else math.nan, to, done) for s, extra, fct, to, done in rows]
    )
    s = summarize(table)
    if table.empty:
        assert s.empty
        return
    by_class = s.set_index("size_class")
    assert by_class.loc["all", "count"] == len(table)
    assert sum(by_class.loc[c, "count"] for c in ("small", "medium", "large")) == len(table)
    assert (s["count"] == s["completed"] + s["unfinished"]).all()
    for _, r in s[s["completed"] > 0].iterrows():
        q = [r["p50_fct_ns"], r["p95_fct_ns"], r["p99_fct_ns"], r["p999_fct_ns"]]
        assert q == sorted(q)
        assert r["p999_fct_ns"] == math.inf or r["p999_fct_ns"] <= table["fct_ns"].max()
        assert (r["p999_fct_ns"] == math.inf) == (math.ceil(0.999 * r["count"]) > r["completed"])
    assert (s["extra_bytes_ratio"].dropna() >= 0).all()
    assert s["timeout_fraction"].dropna().between(0, 1).all()


def _expected(value: object) -> float:
    return math.inf if value == "inf" else math.nan if value is None else float(value)  # type: ignore[arg-type]


def _same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("case", CASES["summaries"], ids=lambda c: c["name"])
def test_shared_cases_give_the_same_figures_as_rust(case: dict) -> None:
    cols = ["size_bytes", "request_bytes", "fct_ns", "timeouts", "sent_bytes", "redundant_bytes"]
    t = pd.DataFrame(case["flows"], columns=cols).assign(scheme="s")
    t["completed"] = t["fct_ns"].notna()
    s = summarize(t)
    for cls, want in case["expect"].items():
        r = row(s, "s", cls).rename({"count": "flows"})
        for figure, value in want.items():
            assert _same(float(r[figure]), _expected(value)), (cls, figure, r[figure], value)


@pytest.mark.parametrize("case", CASES["percentiles"], ids=lambda c: c["name"])
def test_shared_percentile_cases_give_the_same_ranks_as_rust(case: dict) -> None:
    lo, hi = case["finished_range"]
    finished = np.arange(lo, hi + 1, dtype=float)
    for name, per_mille in PERCENTILES.items():
        got = percentile(finished, case["unfinished"], per_mille)
        assert _same(got, _expected(case["expect"][name])), (name, got)


def test_size_class_boundaries_match_the_shared_constants() -> None:
    sizes = pd.Series([99_999, 100_000, 999_999, 1_000_000])
    assert size_class(sizes).tolist() == ["small", "medium", "medium", "large"]


def test_summary_json_is_strict_json_with_null_and_an_unfinished_count(tmp_path) -> None:
    from tailcut.results import read_summary_json, summary_json

    table = summarize(flows([("tcp", 10, 10, math.nan, 1, False)] * 3))
    text = summary_json(table)
    document = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert document["unfinished"] == 3
    every = next(r for r in document["summary"] if r["size_class"] == "all")
    # No strings for numbers: the percentile among unfinished flows is null, and the row counts them.
    assert every["p99_fct_ns"] is None and every["mean_fct_ns"] is None and every["unfinished"] == 3
    assert not any(isinstance(v, str) for r in document["summary"] for k, v in r.items() if k.endswith("_ns"))
    (tmp_path / "summary.json").write_text(text)
    back = read_summary_json(tmp_path / "summary.json")
    assert back.loc[back["size_class"] == "all", "p99_fct_ns"].item() == math.inf
    # An empty class stays NaN, not inf.
    assert math.isnan(back.loc[back["size_class"] == "large", "p99_fct_ns"].item())


def test_summary_json_of_older_versions_reads_back(tmp_path) -> None:
    from tailcut.results import read_summary_json

    old = [{"scheme": "tcp", "size_class": "all", "count": 3, "unfinished": 3, "p99_fct_ns": "inf"}]
    (tmp_path / "summary.json").write_text(json.dumps(old))
    assert read_summary_json(tmp_path / "summary.json")["p99_fct_ns"].item() == math.inf


def test_stall_warnings_name_the_stalled_runs_only() -> None:
    from tailcut.summary import stall_warnings

    runs = [
        {"scheme": "tcp", "stop_reason": "stalled", "warning": "scheme 'tcp' stalled: no packet ..."},
        {"scheme": "dctcp", "stop_reason": "all_finished"},
        {"scheme": "old"},  # runs.json of a core without the watchdog
    ]
    assert stall_warnings(runs) == ["warning: scheme 'tcp' stalled: no packet ..."]
    assert stall_warnings(runs, "seed=2") == ["warning: seed=2: scheme 'tcp' stalled: no packet ..."]
