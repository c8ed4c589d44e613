"""Summary math on a hand-made flows table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailcut import summarize


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
    medium = [("tcp", 100_000, 110_000, 1e6, 0, True), ("tcp", 9_999_999, 9_999_999, 2e6, 0, True)]
    large = [("tcp", 10_000_000, 10_000_000, 5e7, 0, True)]
    other = [("dctcp", 5_000, 5_000, 10.0, 0, True)]
    return flows(small + medium + large + other)


def row(summary: pd.DataFrame, scheme: str, cls: str) -> pd.Series:
    return summary[(summary["scheme"] == scheme) & (summary["size_class"] == cls)].iloc[0]


def test_size_classes_boundaries(table: pd.DataFrame) -> None:
    s = summarize(table)
    assert row(s, "tcp", "small")["count"] == 101  # 99_999 B is small
    assert row(s, "tcp", "medium")["count"] == 2  # 100_000 and 9_999_999 B
    assert row(s, "tcp", "large")["count"] == 1  # 10_000_000 B
    assert row(s, "tcp", "all")["count"] == 104
    assert list(s["size_class"].unique()) == ["small", "medium", "large", "all"]


def test_percentiles_over_completed_flows_only(table: pd.DataFrame) -> None:
    r = row(summarize(table), "tcp", "small")
    fct = np.arange(1, 101, dtype=float)
    assert r["completed"] == 100
    assert r["unfinished"] == 1
    assert r["mean_fct_ns"] == pytest.approx(50.5)
    assert r["p50_fct_ns"] == pytest.approx(np.percentile(fct, 50))
    assert r["p95_fct_ns"] == pytest.approx(95.05)
    assert r["p99_fct_ns"] == pytest.approx(99.01)
    assert r["p999_fct_ns"] == pytest.approx(99.901)


def test_timeout_fraction_counts_all_flows(table: pd.DataFrame) -> None:
    # two finished flows and the unfinished one had timeouts, out of 101 small flows
    assert row(summarize(table), "tcp", "small")["timeout_fraction"] == pytest.approx(3 / 101)


def test_extra_bytes_ratio(table: pd.DataFrame) -> None:
    s = summarize(table)
    small_payload = 100 * 1_000 + 99_999
    assert row(s, "tcp", "small")["extra_bytes_ratio"] == pytest.approx(500 / small_payload)
    assert row(s, "tcp", "medium")["extra_bytes_ratio"] == pytest.approx(10_000 / 10_099_999)
    assert row(s, "tcp", "large")["extra_bytes_ratio"] == 0


def test_empty_class_has_zero_count_and_nan_stats(table: pd.DataFrame) -> None:
    r = row(summarize(table), "dctcp", "large")
    assert r["count"] == 0 and r["unfinished"] == 0
    assert math.isnan(r["p99_fct_ns"]) and math.isnan(r["timeout_fraction"])


def test_all_unfinished_reports_them() -> None:
    r = row(summarize(flows([("tcp", 10, 10, math.nan, 1, False)] * 3)), "tcp", "all")
    assert r["count"] == 3 and r["unfinished"] == 3 and r["completed"] == 0
    assert math.isnan(r["p50_fct_ns"])


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
        assert r["p999_fct_ns"] <= table["fct_ns"].max() + 1e-6
    assert (s["extra_bytes_ratio"].dropna() >= 0).all()
    assert s["timeout_fraction"].dropna().between(0, 1).all()
