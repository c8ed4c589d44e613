"""`tailcut reproduce`: seeds, median/range, flip detection, resume, errors, --list, and same-seed
agreement with the checked-in results."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import TINY
from tailcut import reproduce as rp
from tailcut.reproduce import cp, dcquic
from tailcut.reproduce.aggregate import aggregate_entry, ranking, spread
from tailcut.reproduce.generic import METRICS, bench_rows, first_scheme
from tailcut.reproduce.paper import Entry, Group, Paper, Row
from tailcut.reproduce.render import from_json

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tiny_paper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Paper, Path]:
    """A paper of two tiny entries in a private repository-like root, registered as ``tiny``."""
    root = tmp_path / "repo"
    (root / "experiments" / "tiny").mkdir(parents=True)
    shutil.copytree(REPO / "workloads", root / "workloads")
    shutil.copy(TINY, root / "experiments" / "tiny" / "a.toml")
    text = TINY.read_text().replace("flows = 200", "flows = 60")
    (root / "experiments" / "tiny" / "b.toml").write_text(text)
    paper = Paper(
        name="tiny",
        title="Tiny",
        groups=(
            Group(
                "One group",
                (
                    Entry("a", "experiments/tiny/a.toml"),
                    Entry("b_small", "experiments/tiny/b.toml", (("workload.0.flows", 40),)),
                ),
            ),
        ),
        rows=bench_rows,
        metrics=METRICS,
        main="p99_ms",
        baseline=first_scheme,
    )
    monkeypatch.setitem(rp.PAPERS, "tiny", paper)
    return paper, root


def test_spread_is_median_and_range_of_known_values() -> None:
    assert spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "values": [3.0, 1.0, 2.0]}
    assert spread([4.0, 1.0, 2.0, 10.0])["median"] == 3.0
    assert spread([1.0, math.nan, 5.0])["median"] == 3.0
    assert spread([2.0, math.inf])["median"] == math.inf  # an unfinished flow's percentile stays infinite
    assert spread([math.nan])["median"] is None


@given(st.lists(st.floats(0, 1e9) | st.just(math.inf) | st.just(math.nan), min_size=1, max_size=9))
def test_spread_invariants(values: list[float]) -> None:
    import statistics

    stats = spread(values)
    known = [v for v in values if not math.isnan(v)]
    if not known:
        assert stats["median"] is None
        return
    assert stats["min"] == min(known) and stats["max"] == max(known)
    assert stats["min"] <= stats["median"] <= stats["max"]
    if all(math.isfinite(v) for v in known):
        assert stats["median"] == pytest.approx(statistics.median(known))


@given(st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 10, allow_nan=False), min_size=1))
def test_ranking_is_a_partition_ordered_by_value(values: dict[str, float]) -> None:
    rank = ranking(values, higher_is_better=False)
    assert sorted(s for tie in rank for s in tie) == sorted(values)
    firsts = [values[tie[0]] for tie in rank]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    assert all(values[s] == values[tie[0]] for tie in rank for s in tie)


def test_ranking_groups_ties_and_orients_by_metric() -> None:
    values = {"a": 2.0, "b": 1.0, "c": 2.0, "d": math.inf}
    assert ranking(values, higher_is_better=False) == (("b",), ("a", "c"), ("d",))
    assert ranking(values, higher_is_better=True) == (("d",), ("a", "c"), ("b",))


def _paper(main: str = "p99_ms") -> Paper:
    return Paper("x", "X", (), bench_rows, METRICS, main, baseline=first_scheme)


def test_flips_are_flagged_and_stable_rows_are_not() -> None:
    per_seed = {
        1: [
            Row("tcp", "all", {"p99_ms": 5.0}),
            Row("fast", "all", {"p99_ms": 2.0}),
            Row("x", "all", {"p99_ms": 1}),
        ],
        2: [
            Row("tcp", "all", {"p99_ms": 5.0}),
            Row("fast", "all", {"p99_ms": 3.0}),
            Row("x", "all", {"p99_ms": 9}),
        ],
    }
    result = aggregate_entry(_paper(), per_seed)
    rows = {r["scheme"]: r for r in result["rows"]}
    assert rows["tcp"]["vs_baseline"] is None
    assert rows["fast"]["vs_baseline"] == {
        "baseline": "tcp",
        "better": 2,
        "worse": 0,
        "equal": 0,
        "flips": False,
    }
    assert rows["x"]["vs_baseline"]["flips"] is True
    assert rows["fast"]["metrics"]["p99_ms"] == {"median": 2.5, "min": 2.0, "max": 3.0, "values": [2.0, 3.0]}
    [flip] = result["ranking_flips"]
    assert flip["rankings"] == {"1": "x < fast < tcp", "2": "fast < tcp < x"}
    assert flip["swapped"] == ["tcp/x", "fast/x"]


def test_no_flip_when_every_seed_agrees() -> None:
    per_seed = {
        s: [Row("tcp", "all", {"p99_ms": 5.0 + s}), Row("b", "all", {"p99_ms": 1.0})] for s in (1, 2, 3)
    }
    result = aggregate_entry(_paper(), per_seed)
    assert result["ranking_flips"] == []
    assert not any(r["vs_baseline"] and r["vs_baseline"]["flips"] for r in result["rows"])


def test_reproduce_writes_tables_over_seeds_and_resumes(tiny_paper, tmp_path: Path) -> None:
    _, root = tiny_paper
    out = tmp_path / "out"
    outcomes = []
    documents = rp.reproduce("tiny", seeds=2, out=out, root=root, on_done=outcomes.append)
    assert len(outcomes) == 4 and not any(o.skipped or o.error for o in outcomes)
    document = from_json((out / "tiny.json").read_text())
    assert document["seeds"] == 2 and documents["tiny"]["seeds"] == 2
    [group] = document["groups"]
    assert [e["label"] for e in group["entries"]] == ["a", "b_small"]
    for entry in group["entries"]:
        assert entry["seeds"] == [1, 2] and entry["missing_seeds"] == []
        assert {(r["part"], r["scheme"]) for r in entry["rows"]} >= {("all", "tcp"), ("all", "dctcp")}
        for row in entry["rows"]:
            for stats in row["metrics"].values():
                assert len(stats["values"]) == 2
                if stats["median"] is not None:
                    assert stats["min"] <= stats["median"] <= stats["max"]
    flows = {
        r["scheme"]: r["metrics"]["flows"]["median"]
        for r in group["entries"][1]["rows"]
        if r["part"] == "all"
    }
    assert flows == {"tcp": 40, "dctcp": 40}  # the entry's override reached the run
    page = (out / "tiny.md").read_text()
    assert "### `a`" in page and "| all | dctcp |" in page and "Conclusions that flip" in page
    # What made the page: version and commit once, each entry's seeds with their config digests.
    from tailcut.provenance import provenance

    made = provenance()
    assert f"Made by tailcut {made['tailcut_version']}, commit {made['tailcut_commit'] or 'unknown'}" in page
    digests = group["entries"][0]["config_digests"]
    assert list(digests) == ["1", "2"] and len(set(digests.values())) == 2
    assert f"Seeds 1, 2; config digests `{digests['1']}` (seed 1), `{digests['2']}` (seed 2)." in page

    again = []
    rp.reproduce("tiny", seeds=2, out=out, root=root, on_done=again.append)
    assert len(again) == 4 and all(o.skipped for o in again)

    # A changed experiment file is re-run, an unchanged one is not.
    b = root / "experiments" / "tiny" / "b.toml"
    b.write_text(b.read_text().replace("load = 0.3", "load = 0.2"))
    third = []
    rp.reproduce("tiny", ["b_small"], seeds=3, out=out, root=root, on_done=third.append)
    assert sorted(o.skipped for o in third) == [False, False, False]
    fourth = []
    rp.reproduce("tiny", ["a"], seeds=3, out=out, root=root, on_done=fourth.append)
    assert [o.skipped for o in sorted(fourth, key=lambda o: o.slug)] == [True, True, False]


def test_same_seed_gives_the_checked_in_numbers(tmp_path: Path) -> None:
    """tracks/case1_20 at seed 1 against experiments/tracks/results/case1_20.txt (tailcut-bench output)."""
    [document] = rp.reproduce("tracks", ["case1_20"], seeds=1, out=tmp_path, root=REPO).values()
    rows = {r["scheme"]: r["metrics"] for r in document["groups"][0]["entries"][0]["rows"]}
    # droptail: p95 201815.6 us, mean 37445.6 us, timeout frac 0.18; +tracks: p95 10076.7 us, mean 2667.2 us.
    assert rows["droptail"]["p95_ms"]["median"] == pytest.approx(201.8156, abs=1e-4)
    assert rows["droptail"]["mean_ms"]["median"] == pytest.approx(37.4456, abs=1e-4)
    assert rows["droptail"]["timeout_fraction"]["median"] == pytest.approx(0.18)
    assert rows["droptail+tracks"]["p95_ms"]["median"] == pytest.approx(10.0767, abs=1e-4)
    assert rows["droptail+tracks"]["mean_ms"]["median"] == pytest.approx(2.6672, abs=1e-4)
    assert rows["droptail+tracks"]["recoveries"]["median"] == 18
    assert rows["droptail+tracks"]["spoofed"]["median"] == 35
    assert rows["droptail+tracks"]["p95_ratio"]["median"] == pytest.approx(201.8156 / 10.0767, rel=1e-4)


def test_same_seed_gives_fuso_reports_numbers(tmp_path: Path) -> None:
    """fuso/incast_10 at seed 1 against experiments/fuso/results/incast_10.txt (the removed fuso_report)."""
    [document] = rp.reproduce("fuso", ["incast_10"], seeds=1, out=tmp_path, root=REPO).values()
    rows = {r["scheme"]: r["metrics"] for r in document["groups"][0]["entries"][0]["rows"]}
    # tcp: mean 5.221 ms, p99 8.828 ms, timeout frac 0.35, rounds mean 8.526 ms max 8.862 ms.
    assert rows["tcp"]["mean_ms"]["median"] == pytest.approx(5.221, abs=5e-4)
    assert rows["tcp"]["p99_ms"]["median"] == pytest.approx(8.828, abs=5e-4)
    assert rows["tcp"]["timeout_fraction"]["median"] == pytest.approx(0.35)
    assert rows["tcp"]["round_mean_ms"]["median"] == pytest.approx(8.526, abs=5e-4)
    assert rows["tcp"]["round_max_ms"]["median"] == pytest.approx(8.862, abs=5e-4)
    # fuso: extra 0.200 (redundant bytes over delivered), p99 7.530 ms.
    assert rows["fuso"]["redundant_bytes"]["median"] == pytest.approx(0.200, abs=5e-4)
    assert rows["fuso"]["p99_ms"]["median"] == pytest.approx(7.530, abs=5e-4)


def test_cp_fanout_entries_give_the_results_page_goodput(tmp_path: Path) -> None:
    """cp/incast.toml swept to N = 32 as the removed `cp_report --fanout 32` printed it."""
    [document] = rp.reproduce("cp", ["incast_N32"], seeds=1, out=tmp_path, root=REPO).values()
    rows = {r["scheme"]: r["metrics"] for r in document["groups"][0]["entries"][0]["rows"]}
    goodput = {s: round(m["goodput_mbps"]["median"]) for s, m in rows.items()}
    timeouts = {s: m["timeouts"]["median"] for s, m in rows.items()}
    assert goodput == {"tcp": 80, "dctcp": 41, "cp": 76, "cp_64k": 926, "cp_dctcp": 953}
    assert timeouts == {"tcp": 32, "dctcp": 45, "cp": 10, "cp_64k": 0, "cp_dctcp": 0}


def test_same_seed_gives_cloudburst_reports_numbers(tmp_path: Path) -> None:
    """cloudburst/incast_4 at seed 1 against experiments/cloudburst/results/incast_4.txt; DCTCP's mean and
    p99 as re-run under the linux host profile (2026-11-28; 2.938 and 6.115 ms with the paper sender)."""
    [document] = rp.reproduce("cloudburst", ["incast_4"], seeds=1, out=tmp_path, root=REPO).values()
    rows = {(r["part"], r["scheme"]): r["metrics"] for r in document["groups"][0]["entries"][0]["rows"]}
    dctcp, cloudburst = rows[("incast all", "dctcp")], rows[("incast all", "cloudburst")]
    # dctcp: p50 2.976 mean 2.944 p99 6.222 ms, no timeout, coding rate 1.088; cloudburst: p99 3.524, 3.051.
    assert dctcp["p50_ms"]["median"] == pytest.approx(2.976, abs=5e-4)
    assert dctcp["mean_ms"]["median"] == pytest.approx(2.944, abs=5e-4)
    assert dctcp["p99_ms"]["median"] == pytest.approx(6.222, abs=5e-4)
    assert dctcp["timeouts"]["median"] == 0
    assert dctcp["coding_rate"]["median"] == pytest.approx(1.088, abs=5e-4)
    assert cloudburst["p99_ms"]["median"] == pytest.approx(3.524, abs=5e-4)
    assert cloudburst["coding_rate"]["median"] == pytest.approx(3.051, abs=5e-4)


def _entry_rows(document: dict, label: str) -> list[dict]:
    [entry] = [e for g in document["groups"] for e in g["entries"] if e["label"] == label]
    return entry["rows"]


def test_cp_incast_on_4_senders_keeps_the_star_and_splits_the_flows(tmp_path: Path) -> None:
    """incast_4senders at N = 8 as the removed `cp_report --fanout 8` ran it: 4 senders, 2 flows each."""
    [document] = rp.reproduce("cp", ["incast_4senders_N8"], seeds=1, out=tmp_path, root=REPO).values()
    page = (tmp_path / "cp.md").read_text()
    assert "## Incast on 4 physical senders" in page and "workload.0.pattern.flows_per_sender = 2" in page
    rows = {r["scheme"]: r["metrics"] for r in _entry_rows(document, "incast_4senders_N8")}
    assert set(rows) == {"tcp", "dctcp", "cp", "cp_64k", "cp_dctcp"}
    for metrics in rows.values():
        assert metrics["flows"]["median"] == 8
        assert 0 < metrics["goodput_mbps"]["median"] <= 1000  # one 1 Gbps receiver link
    with pytest.raises(ValueError, match="not a multiple of its 4 senders"):
        cp._on_senders("incast_4senders", 250, 4)


def test_fuso_incast_buffer_entry_is_read_on_the_round(tmp_path: Path) -> None:
    [document] = rp.reproduce("fuso", ["incast_buf256K_10"], seeds=1, out=tmp_path, root=REPO).values()
    page = (tmp_path / "fuso.md").read_text()
    assert "## Incast and buffers (not in the paper)" in page
    assert "Conclusions checked on `round_mean_ms`" in page
    rows = {r["scheme"]: r["metrics"] for r in _entry_rows(document, "incast_buf256K_10")}
    assert {"tcp", "mptcp", "fuso"} <= set(rows)
    for metrics in rows.values():
        mean, worst = metrics["round_mean_ms"]["median"], metrics["round_max_ms"]["median"]
        # 10 x 64 KB through one 1 Gbps port take 5.1 ms at line rate; no round can be faster.
        assert 5.1 < mean <= worst < 1000
        assert metrics["rounds_unfinished"]["median"] == 0


def test_dcquic_mps_paper_has_one_part_per_task_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The paper-setting MPS entry, shortened (fewer tasks, shorter background) so that it runs in
    seconds; the rows are the real entry's."""
    [group] = [g for g in dcquic.PAPER.groups if g.entries[0].label == "mps_paper"]
    short = Entry(
        "mps_paper",
        "experiments/dcquic/mps_paper.toml",
        (("workload.0.flows", 12), ("workload.1.until", "0.2s"), ("max_time", "5s")),
    )
    groups = tuple(replace(g, entries=(short,)) if g is group else g for g in dcquic.PAPER.groups)
    monkeypatch.setitem(rp.PAPERS, "dcquic", replace(dcquic.PAPER, groups=groups))
    [document] = rp.reproduce("dcquic", ["mps_paper"], seeds=1, out=tmp_path, root=REPO).values()
    page = (tmp_path / "dcquic.md").read_text()
    assert "## Maximum packet size in the paper's setting (Sec. 4.2, Fig. 4)" in page
    assert "Conclusions checked on `mean_ms`" in page
    rows = {(r["part"], r["scheme"]): r["metrics"] for r in _entry_rows(document, "mps_paper")}
    sizes = ("task 5KB", "task 100KB", "task 1MB", "task 10MB")
    for scheme in ("mps1200", "mps2500", "mps5000", "mps9000"):
        present = [s for s in sizes if (s, scheme) in rows]
        assert len(present) >= 3  # 12 tasks over 4 sizes
        total = sum(rows[(s, scheme)]["flows"]["median"] for s in present)
        assert total == rows[("task", scheme)]["flows"]["median"] == 12
        means = [rows[(s, scheme)]["mean_ms"]["median"] for s in present]
        assert all(m > 0 for m in means)


def test_every_manifest_file_exists() -> None:
    for paper in rp.PAPERS.values():
        for entry in paper.entries():
            assert (REPO / entry.file).is_file(), entry


def test_cli_errors_name_the_bad_input(cli, tmp_path: Path, capsys) -> None:
    assert cli("reproduce", "nosuch", "--out", tmp_path / "o") == 2
    assert "paper: unknown paper 'nosuch'" in capsys.readouterr().err
    assert cli("reproduce", "tracks", "nosuch_file", "--out", tmp_path / "o") == 2
    assert "experiment: no entry of tracks matches nosuch_file" in capsys.readouterr().err
    # Numbers are range-checked by the parser itself (argparse exits 2), before anything is planned.
    with pytest.raises(SystemExit) as info:
        cli("reproduce", "tracks", "case1_20", "--seeds", "0", "--out", tmp_path / "o")
    assert info.value.code == 2
    assert "argument --seeds: must be in 1.." in capsys.readouterr().err


def test_missing_data_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rp, "PACKAGE_DATA", tmp_path / "installed")
    with pytest.raises(FileNotFoundError, match="installed without its data"):
        rp.find_root(tmp_path / "nowhere")


def test_the_papers_files_ship_inside_the_package(tmp_path: Path) -> None:
    """Outside a clone, the installed package's own experiments/ and workloads/ are found."""
    assert rp.find_root(tmp_path) == rp.PACKAGE_DATA
    assert (rp.PACKAGE_DATA / "experiments" / "fuso").is_dir()
    assert (rp.PACKAGE_DATA / "workloads" / "websearch.cdf").is_file()


def test_list_names_every_entry_and_measured_seconds(tiny_paper, cli, tmp_path: Path, capsys) -> None:
    _, root = tiny_paper
    assert cli("reproduce", "cp", "--list") == 0
    text = capsys.readouterr().out
    assert "incast_N250" in text and "workload.0.pattern.fanout=250" in text
    out = tmp_path / "out"
    rp.reproduce("tiny", ["a"], seeds=1, out=out, root=root)
    lines = rp.listing("tiny", out).splitlines()
    assert any(line.split()[:1] == ["a"] and "s/seed [1]" in line for line in lines)
    assert any(line.split()[:1] == ["b_small"] and "not measured" in line for line in lines)
    assert f"[1] mean of 1 run(s) in {out}" in lines


def test_list_without_a_paper_lists_every_paper(cli, capsys) -> None:
    assert cli("reproduce", "--list") == 0
    papers = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert {"fuso", "tracks", "cloudburst", "cp", "dcquic", "baselines"} <= set(papers)
    assert cli("reproduce") == 2
    assert "reproduce needs a paper" in capsys.readouterr().err
