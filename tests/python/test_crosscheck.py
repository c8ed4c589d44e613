"""``tailcut crosscheck``: the table logic on synthetic flow tables (no root needed), bad input, and one
end-to-end run of experiments/testbed/loss.toml in both worlds (a realnet test: it needs root, network
namespaces and /dev/net/tun, and skips without them unless ``TAILCUT_REQUIRE_REALNET=1``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from conftest import realnet_or_skip
from tailcut import cli, crosscheck
from tailcut.crosscheck import BY_KEY, SIM, TESTBED, SeedRun, build, direction, flagged, ratio, run_figures
from tailcut.report import folder_labels
from tailcut.summary import SIZE_CLASSES

ROOT = Path(__file__).resolve().parents[2]


def flows(scheme: str, fcts_ms: list[float | None], size: int = 20_000, timeouts=None) -> pd.DataFrame:
    """One scheme's flows: ``None`` is an unfinished flow; ``timeouts`` per flow (None: not counted)."""
    n = len(fcts_ms)
    return pd.DataFrame(
        {
            "flow_id": range(n),
            "scheme": [scheme] * n,
            "size_bytes": [size] * n,
            "fct_ns": [int(f * 1e6) if f is not None else 0 for f in fcts_ms],
            "completed": [f is not None for f in fcts_ms],
            "timeouts": timeouts if timeouts is not None else [0] * n,
        }
    )


def sim_run(*frames: pd.DataFrame) -> SeedRun:
    return SeedRun(pd.concat(frames, ignore_index=True))


def test_unfinished_flows_count_as_infinitely_late() -> None:
    figures = run_figures(sim_run(flows("a", [1.0] * 98 + [None, None])))
    small = figures[("a", "small")]
    assert small["flows"] == 100
    assert small["p50_ms"] == 1.0
    assert math.isinf(small["p99_ms"]) and math.isinf(small["p999_ms"]), "the rank falls among unfinished"
    assert small["completed_pct"] == 98.0
    assert figures[("a", "all")]["p99_ms"] == small["p99_ms"]
    assert figures[("a", "medium")]["flows"] == 0 and math.isnan(figures[("a", "medium")]["p50_ms"])


def test_percentiles_are_the_summary_nearest_rank() -> None:
    # 10 flows 1..10 ms: nearest rank p50 is the 5th (5 ms), p99 the 10th; never an interpolated 5.5.
    figures = run_figures(sim_run(flows("a", [float(i) for i in range(1, 11)])))
    assert figures[("a", "all")]["p50_ms"] == 5.0 and figures[("a", "all")]["p99_ms"] == 10.0


def test_ratio_and_flag_rule() -> None:
    p99, timeouts = BY_KEY["p99_ms"], BY_KEY["timeouts_per_100"]
    assert ratio(12.0, 10.0) == pytest.approx(1.2)
    assert not flagged(p99, 10.0, 12.0), "exactly 20% is not more than 20%"
    assert flagged(p99, 10.0, 12.1) and flagged(p99, 10.0, 7.9)
    assert not flagged(p99, 10.0, 8.0)
    assert ratio(math.inf, math.inf) == 1.0 and not flagged(p99, math.inf, math.inf)
    assert math.isinf(ratio(math.inf, 5.0)) and flagged(p99, 5.0, math.inf)
    assert ratio(5.0, math.inf) == 0.0 and flagged(p99, math.inf, 5.0)
    assert math.isnan(ratio(math.nan, 1.0)) and not flagged(p99, 1.0, math.nan), "n/m is never flagged"
    assert not flagged(p99, 1.0, None)
    # Counts: 0 against 1 per 100 flows is within the absolute tolerance; 0 against 2 is not.
    assert math.isinf(ratio(1.0, 0.0)) and not flagged(timeouts, 0.0, 1.0)
    assert flagged(timeouts, 0.0, 2.0) and flagged(timeouts, 2.0, 3.5)
    assert ratio(0.0, 0.0) == 1.0 and not flagged(timeouts, 0.0, 0.0)


def test_direction_rule() -> None:
    assert direction(10.0, 10.0) == "tie"
    assert direction(10.5, 10.0) == "tie" and direction(9.5, 10.0) == "tie", "within 5% of the baseline"
    assert direction(10.6, 10.0) == "worse" and direction(9.4, 10.0) == "better"
    assert direction(math.inf, 10.0) == "worse" and direction(10.0, math.inf) == "better"
    assert direction(math.inf, math.inf) == "tie"
    assert direction(math.nan, 1.0) is None and direction(1.0, None) is None
    assert direction(99.0, 90.0, higher_is_better=True) == "better"


def _two_schemes(a_ms: float, b_ms: float) -> SeedRun:
    return sim_run(flows("a", [a_ms] * 10), flows("b", [b_ms] * 10))


def test_a_conclusion_that_flips_with_the_seed_says_so() -> None:
    # Simulator: b beats a in seeds 1 and 3, loses in seed 2. Testbed: b loses in every seed.
    sim = {1: _two_schemes(10, 5), 2: _two_schemes(10, 20), 3: _two_schemes(10, 6)}
    tb = {s: _two_schemes(10, 30) for s in (1, 2, 3)}
    doc = build({SIM: sim, TESTBED: tb})
    comparison = next(c for c in doc["comparisons"] if c["size_class"] == "all")
    assert (comparison["scheme"], comparison["baseline"]) == ("b", "a"), "the earlier scheme is the baseline"
    p50 = comparison["metrics"]["p50_ms"]
    assert p50[SIM]["direction"] == "better" and p50[SIM]["per_seed"] == {
        1: "better",
        2: "worse",
        3: "better",
    }
    assert p50[SIM]["flips"] and not p50[TESTBED]["flips"]
    assert p50[TESTBED]["direction"] == "worse" and p50["agree"] is False
    page = crosscheck.markdown(doc)
    line = next(x for x in page.splitlines() if x.startswith("| b vs a | small | FCT p50"))
    assert "**FLIPS** (better 2, worse 1)" in line and "**NO**" in line
    # Empty size classes have no comparison row; every scheme x class has a figures row.
    assert {c["size_class"] for c in doc["comparisons"]} == {"small", "all"}
    assert [(r["scheme"], r["size_class"]) for r in doc["rows"]] == [
        (s, c) for s in ("a", "b") for c in SIZE_CLASSES
    ]


def test_medians_ranges_ratio_and_flag_on_the_page() -> None:
    sim = {s: sim_run(flows("a", [10.0] * 10)) for s in (1, 2, 3)}
    tb = {
        1: sim_run(flows("a", [12.0] * 10)),
        2: sim_run(flows("a", [15.0] * 10)),
        3: sim_run(flows("a", [30.0] * 10)),
    }
    doc = build({SIM: sim, TESTBED: tb})
    row = next(r for r in doc["rows"] if r["size_class"] == "all")
    p50 = row["metrics"]["p50_ms"]
    assert p50[SIM]["median"] == 10.0 and p50[TESTBED]["median"] == 15.0
    assert p50["ratio"] == pytest.approx(1.5) and p50["flagged"]
    page = crosscheck.markdown(doc)
    line = next(x for x in page.splitlines() if "| a | small |" in x)
    assert "| 10.0 | 15.0 [12.0-30.0] | 1.50 | **>20%** |" in line, line
    # Every flow is small: the "all" row says so rather than repeat the figures (the JSON has both).
    assert "| a | all | 10 / 10 | (the small flows: the same figures) |" in page


def test_testbed_timeouts_come_from_the_kernel_for_whole_scheme_rows_only() -> None:
    """A kernel counts no per-flow timeouts: the namespaces' counter covers the scheme's run, so it goes
    to rows holding all of the scheme's flows; a row holding part of them is not measured, never 0."""
    small = flows("tcp", [1.0] * 6, timeouts=[None] * 6)
    medium = flows("tcp", [5.0] * 4, size=200_000, timeouts=[None] * 4)
    tb = SeedRun(
        pd.concat([small, medium], ignore_index=True), quality={"tcp": {"kernel": {"TcpExt.TCPTimeouts": 3}}}
    )
    figures = run_figures(tb)
    assert figures[("tcp", "all")]["timeouts_per_100"] == 30.0
    assert figures[("tcp", "all")]["timeouts_source"] == "kernel"
    assert math.isnan(figures[("tcp", "small")]["timeouts_per_100"])
    assert figures[("tcp", "small")]["timeouts_source"] == "n/m"
    # The same flows in one class only: that class is the whole scheme and gets the counter.
    only_small = SeedRun(small, quality={"tcp": {"kernel": {"TcpExt.TCPTimeouts": 3}}})
    assert run_figures(only_small)[("tcp", "small")]["timeouts_per_100"] == 50.0
    # Without the counter (no testbed.json) nothing was measured.
    assert run_figures(SeedRun(small))[("tcp", "all")]["timeouts_source"] == "n/m"
    sim = sim_run(flows("tcp", [1.0] * 6, timeouts=[1, 0, 0, 0, 0, 0]), medium.assign(timeouts=0))
    doc = build({SIM: {1: sim}, TESTBED: {1: tb}})
    page = crosscheck.markdown(doc)
    small_line = next(x for x in page.splitlines() if x.startswith("| | | | timeouts") and "n/m" in x)
    assert "16.7 (flows) | n/m | - |" in small_line, small_line
    all_row = next(r for r in doc["rows"] if r["size_class"] == "all")
    assert all_row["timeouts_source"] == {SIM: ["flows"], TESTBED: ["kernel"]}
    assert "| 10.0 (flows) | 30.0 (kernel) | 3.00 | **>20%** |" in page


def test_a_runtime_schemes_timeouts_are_its_own_never_the_kernels() -> None:
    """On the testbed's runtime a one-way flow's sender counts its timeouts; a request/response flow's
    are not counted, and the namespaces' TCP counter knows nothing of a TCP running over UDP."""
    quality = {"fuso": {"stack": "runtime", "kernel": {"TcpExt.TCPTimeouts": 0}}}
    counted = SeedRun(flows("fuso", [1.0] * 4, timeouts=[1, 0, 0, 1]), quality=quality)
    assert run_figures(counted)[("fuso", "all")]["timeouts_per_100"] == 50.0
    assert run_figures(counted)[("fuso", "all")]["timeouts_source"] == "flows"
    partly = SeedRun(flows("fuso", [1.0] * 4, timeouts=[1, None, 0, None]), quality=quality)
    assert run_figures(partly)[("fuso", "all")]["timeouts_source"] == "n/m"
    # The page says which stack ran each scheme on the testbed.
    doc = build({SIM: {1: sim_run(flows("fuso", [1.0] * 4))}, TESTBED: {1: counted}})
    assert doc["timing"][0]["stack"] == "runtime"
    assert "`fuso` on tailcut's engines over UDP in the hosts" in crosscheck.markdown(doc)


def test_an_engine_that_counts_no_timeouts_reads_not_measured() -> None:
    run = SeedRun(flows("q", [1.0] * 5), unmeasured={"q": {"timeout_fraction": "QUIC has no RTO"}})
    figures = run_figures(run)
    assert math.isnan(figures[("q", "all")]["timeouts_per_100"])
    assert figures[("q", "all")]["timeouts_source"] == "n/m"


def test_json_has_no_nan_and_spells_infinity() -> None:
    doc = build({SIM: {1: sim_run(flows("a", [1.0, None]))}, TESTBED: {}})
    text = crosscheck.to_json(doc)
    assert "NaN" not in text and "Infinity" not in text
    row = next(r for r in json.loads(text)["rows"] if r["size_class"] == "all")
    assert row["metrics"]["p99_ms"]["sim"]["median"] == "inf"
    assert row["metrics"]["p99_ms"]["testbed"]["median"] is None


def test_invalid_timing_and_failures_are_marked_on_the_page() -> None:
    tb = SeedRun(
        flows("a", [1.0] * 4),
        quality={"a": {"timing": {"valid": False, "reasons": ["fabric lateness p99 13 us > 10 us"]}}},
    )
    doc = build(
        {SIM: {1: sim_run(flows("a", [1.0] * 4))}, TESTBED: {1: tb}},
        invalid={1: ["a: fabric lateness p99 13 us > 10 us"]},
        failed={SIM: {2: "SimulationError: boom"}},
    )
    page = crosscheck.markdown(doc)
    assert "**TIMING INVALID on the testbed in seed(s) 1**" in page
    assert "**INVALID**: fabric lateness p99 13 us > 10 us" in page
    assert "**FAILED** sim seed 2 (left out): SimulationError: boom" in page


def test_labels_of_folders_with_one_name_stay_apart(tmp_path: Path) -> None:
    dirs = [tmp_path / "x" / "sim" / "seed-1", tmp_path / "x" / "testbed" / "seed-1", tmp_path / "other"]
    assert folder_labels(dirs) == ["sim/seed-1", "testbed/seed-1", "other"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "crosscheck needs an experiment FILE"),
        (["--from-dirs", "a", "b"], "--from-dirs needs --out DIR"),
        (["FILE", "--from-dirs", "a", "b", "--out", "o"], "without FILE"),
        (["FILE", "--set", "topology.left=0"], "topology.left: must be >= 1"),
        (["--from-dirs", "missing-a", "missing-b", "--out", "o"], "missing-a: neither a result folder"),
    ],
)
def test_bad_input_is_one_line_naming_it(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [str(ROOT / "experiments/testbed/loss.toml") if a == "FILE" else a for a in args]
    assert cli.main(["crosscheck", *argv]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "results").exists() and not (tmp_path / "o").exists(), "nothing written"


def test_crosscheck_of_the_loss_file_in_both_worlds(tmp_path: Path, capsys) -> None:
    """Functional facts only (files, rows, equal flow counts); never a timing value, which is the
    machine's. Two seeds of loss.toml take about 10 s."""
    realnet_or_skip()
    out = tmp_path / "xc"
    exp = ROOT / "experiments/testbed/loss.toml"
    # Timing is this machine's: accepted here, its exit code is the testbed tests' subject.
    assert (
        cli.main(["crosscheck", str(exp), "--seeds", "2", "--out", str(out), "--allow-invalid-timing"]) == 0
    )
    for world in ("sim", "testbed"):
        for seed in (1, 2):
            assert (out / world / f"seed-{seed}" / "flows.parquet").is_file()
    assert (out / "testbed/seed-1/testbed.json").is_file()
    doc = json.loads((out / "crosscheck.json").read_text())
    assert doc["seeds"] == {"sim": [1, 2], "testbed": [1, 2]}
    assert [(r["scheme"], r["size_class"]) for r in doc["rows"]] == [("tcp", c) for c in SIZE_CLASSES]
    for row in doc["rows"]:
        assert row["flows"]["sim"] == row["flows"]["testbed"], row["size_class"]
        assert set(row["metrics"]) == set(BY_KEY)
    everything = next(r for r in doc["rows"] if r["size_class"] == "all")
    assert everything["flows"]["sim"] == {"1": 400, "2": 400}
    assert everything["timeouts_source"] == {"sim": ["flows"], "testbed": ["kernel"]}
    page = (out / "crosscheck.md").read_text()
    for cls in SIZE_CLASSES:
        assert f"| tcp | {cls} |" in page
    assert "One scheme: nothing to compare." in page and "## Testbed timing" in page
    # A rerun resumes: every seed is already there.
    capsys.readouterr()
    assert (
        cli.main(["crosscheck", str(exp), "--seeds", "2", "--out", str(out), "--allow-invalid-timing"]) == 0
    )
    assert capsys.readouterr().err.count("already in") == 4
    # The same report from the folders alone; and `tailcut report` draws a pair of them side by side.
    again = tmp_path / "again"
    assert (
        cli.main(
            [
                "crosscheck",
                "--from-dirs",
                str(out / "sim"),
                str(out / "testbed"),
                "--out",
                str(again),
                "--allow-invalid-timing",
            ]
        )
        == 0
    )
    assert json.loads((again / "crosscheck.json").read_text())["rows"] == doc["rows"]
    page = tmp_path / "both.html"
    assert cli.main(["report", str(out / "sim/seed-1"), str(out / "testbed/seed-1"), "--out", str(page)]) == 0
    text = page.read_text()
    assert "Summary: sim/seed-1" in text and "Summary: testbed/seed-1" in text
