"""tailcut compare: suite checks, scenario expansion, metrics, ranking, tables, and the checked-in suite's
``ci`` scale (every scheme completes every scenario; conservation holds; no small flow left unfinished
without a failure)."""

from __future__ import annotations

import copy
import importlib.util
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tailcut.compare import (
    COLUMNS,
    FAILED,
    NOT_APPLICABLE,
    OK,
    PENDING,
    Cell,
    SuiteError,
    cell_metrics,
    compare,
    load_suite,
    plan,
    rank,
)
from tailcut.compare_report import compare_html, compare_markdown, rank_by, ranking_table, scenario_table

SUITE = Path(__file__).resolve().parents[2] / "experiments" / "compare" / "suite.toml"

# A suite small enough to run in a second: two leaf-spines, one workload, two failures, three schemes
# (one of which is not applicable on one topology, one pending on a transport that does not exist).
MINI: dict[str, Any] = {
    "name": "mini",
    "seed": 3,
    "vars": {"min_rto": "5ms"},
    "base": {"max_time": "1s", "network": {"buffer": "256KB", "aqm": {"kind": "ecn", "k": "65KB"}}},
    "scales": {"ci": {"max_time": "500ms", "set": {"query.flows": 30}}},
    "topologies": {
        "two": {
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
            "vars": {"core": {"between": ["leaf0", "spine0"]}},
        },
        "three": {
            "topology": {"kind": "leaf_spine", "leaves": 3, "spines": 2, "hosts_per_leaf": 2},
            "vars": {"core": {"between": ["leaf1", "spine1"]}, "min_rto": "10ms"},
            "set": {"query.load": 0.2},
            "not_applicable": {"failure.lossy": "too few links"},
        },
    },
    "workloads": {
        "ws": {
            "components": [
                {
                    "name": "query",
                    "pattern": {"kind": "all_to_all"},
                    "cdf": "websearch",
                    "max_size": "93440B",
                    "load": 0.1,
                    "flows": 1000,
                }
            ]
        }
    },
    "failures": {
        "none": {"faults": []},
        "lossy": {"faults": [{"kind": "loss", "link": "@core", "model": {"kind": "bernoulli", "p": 0.02}}]},
    },
    "schemes": {
        "tcp": {"transport": "tcp", "params": {"min_rto": "@min_rto"}},
        "cb": {
            "transport": "cloudburst",
            "params": {"nic_rate": "10Gbps"},
            "carries": ["query"],
            "other_traffic": {"transport": "dctcp", "params": {"min_rto": "@min_rto"}},
            "not_applicable": {"topology.three": "demo of a scheme-level n/a"},
        },
        "future": {"transport": "no_such_transport", "pending": "its branch"},
    },
}


def mini(**edits: Any) -> dict[str, Any]:
    """A copy of MINI with dotted-path edits (a value of None deletes the key)."""
    suite = copy.deepcopy(MINI)
    for path, value in edits.items():
        *parents, last = path.split("/")
        node = suite
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return suite


def no_validation(config: dict[str, Any]) -> None:
    if config["schemes"][0]["transport"] == "no_such_transport":
        raise ValueError("schemes[0].transport: unknown transport")


# --- suite checks -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edits", "field"),
    [
        ({"schemes/tcp/transprot": "tcp"}, "schemes.tcp.transprot"),
        ({"schemes/tcp/transport": None}, "schemes.tcp.transport"),
        ({"schemes/cb/carries": ["nope"]}, "schemes.cb.carries"),
        ({"schemes/cb/other_traffic": None}, "schemes.cb.other_traffic"),
        ({"schemes/tcp/other_traffic": {"transport": "tcp"}}, "schemes.tcp.other_traffic"),
        ({"schemes/tcp/not_applicable": {"failure.nope": "x"}}, "schemes.tcp.not_applicable.failure.nope"),
        ({"schemes/tcp/not_applicable": {"scale.ci": "x"}}, "schemes.tcp.not_applicable.scale.ci"),
        ({"schemes/tcp/pending": ""}, "schemes.tcp.pending"),
        ({"schemes/tcp/not_measured": {"p99": "x"}}, "schemes.tcp.not_measured.p99"),
        ({"schemes/tcp/not_measured": {"extra_bytes": 3}}, "schemes.tcp.not_measured.extra_bytes"),
        ({"topologies/two/topology": None}, "topologies.two.topology"),
        ({"topologies/two/set": {"nope.flows": 1}}, "topologies.two.set.nope.flows"),
        ({"workloads/ws/components": []}, "workloads.ws.components"),
        ({"failures/none/faults": None}, "failures.none.faults"),
        ({"scales/huge": {}}, "scales.huge"),
        ({"scales/ci/sett": {}}, "scales.ci.sett"),
        ({"base/schemes": []}, "base.schemes"),
        ({"schemes": {}}, "schemes"),
        ({"colour": "red"}, "suite.colour"),
    ],
)
def test_bad_suites_name_the_field(edits: dict[str, Any], field: str) -> None:
    with pytest.raises(SuiteError) as err:
        load_suite(mini(**edits))
    assert str(err.value).startswith(field), str(err.value)


def test_missing_placeholder_names_where_it_is_used() -> None:
    suite = load_suite(mini(**{"topologies/two/vars": {}}))
    with pytest.raises(
        SuiteError, match=r"failures\.lossy\.faults\[0\]\.link: no value for placeholder '@core'"
    ):
        plan(suite, "ci", validate=no_validation)


def test_invalid_scheme_parameters_name_the_suite_field() -> None:
    with pytest.raises(SuiteError, match=r"^schemes\.tcp\.params\.min_rto: "):
        load_suite(mini(**{"schemes/tcp/params": {"min_rto": "soon"}}))
    with pytest.raises(SuiteError, match=r"^schemes\.cb\.other_traffic\.params\.g: "):
        load_suite(mini(**{"schemes/cb/other_traffic": {"transport": "dctcp", "params": {"g": 1}}}))
    with pytest.raises(SuiteError, match=r"^schemes\.tcp\.shim\.phi: "):
        load_suite(mini(**{"schemes/tcp/shim": {"kind": "tracks", "phi": 0}}))
    with pytest.raises(SuiteError, match=r"^schemes\.tcp\.transport: unknown transport 'tcpp'"):
        load_suite(mini(**{"schemes/tcp/transport": "tcpp"}))


def test_invalid_experiment_of_a_scheme_that_is_not_pending_is_an_error() -> None:
    # A placeholder only a topology gives is checked per cell.
    suite = load_suite(
        mini(**{"schemes/tcp/params": {"min_rto": "@late"}, "topologies/two/vars/late": "soon"})
    )
    with pytest.raises(SuiteError, match=r"two/ws/none x tcp: .*min_rto"):
        plan(suite, "ci")


def test_checked_in_suite_loads() -> None:
    suite = load_suite(SUITE)
    assert {"fuso_testbed", "leaf_spine", "fat_tree"} <= set(suite.topologies)
    assert {"websearch", "datamining", "incast"} <= set(suite.workloads)
    assert {"none", "loss_1pct", "loss_4pct", "lossy_links", "blackhole", "degraded"} <= set(suite.failures)
    assert set(suite.scales) == {"ci", "small", "full"}


# --- expansion ----------------------------------------------------------------------------------------------


def test_plan_crosses_every_axis_and_marks_what_cannot_run() -> None:
    planned = plan(load_suite(mini()), "ci", validate=no_validation)
    assert len(planned) == 2 * 1 * 2 * 3
    status = {(p.cell.topology, p.cell.failure, p.cell.scheme): p for p in planned}
    assert status[("two", "none", "tcp")].status == OK
    assert status[("three", "lossy", "tcp")].status == NOT_APPLICABLE  # topology-level
    assert status[("three", "lossy", "tcp")].reason == "too few links"
    assert status[("three", "none", "cb")].reason == "demo of a scheme-level n/a"
    assert status[("two", "none", "future")].status == PENDING
    assert "its branch" in status[("two", "none", "future")].reason
    assert "unknown transport" in status[("two", "none", "future")].reason
    assert [p.cell.scheme for p in planned[:3]] == ["tcp", "cb", "future"]  # suite order


def test_cell_config_substitutes_vars_and_applies_sets() -> None:
    planned = plan(load_suite(mini()), "ci", validate=no_validation)
    by = {(p.cell.topology, p.cell.failure, p.cell.scheme): p.config for p in planned}
    tcp3 = by[("three", "none", "tcp")]
    assert tcp3["schemes"] == [{"name": "tcp", "transport": "tcp", "params": {"min_rto": "10ms"}}]
    assert tcp3["workload"][0]["load"] == 0.2 and tcp3["workload"][0]["flows"] == 30  # topology, scale
    assert tcp3["max_time"] == "500ms" and tcp3["seed"] == 3
    lossy = by[("two", "lossy", "tcp")]
    assert lossy["faults"][0]["link"] == {"between": ["leaf0", "spine0"]}
    cb = by[("two", "none", "cb")]
    assert cb["schemes"][0]["applies_to"] == ["query"]
    assert cb["other_traffic"] == {"transport": "dctcp", "params": {"min_rto": "5ms"}}
    assert "other_traffic" not in by[("two", "none", "tcp")]
    assert MINI["topologies"]["two"]["vars"]["core"] == {"between": ["leaf0", "spine0"]}  # untouched


def test_plan_filters_and_unknown_scheme() -> None:
    suite = load_suite(mini())
    planned = plan(suite, "ci", schemes=["tcp"], scenarios="two/*", validate=no_validation)
    assert [p.cell for p in planned] == [Cell("two", "ws", "none", "tcp"), Cell("two", "ws", "lossy", "tcp")]
    with pytest.raises(SuiteError, match="--schemes: no scheme named 'udp'"):
        plan(suite, "ci", schemes=["udp"], validate=no_validation)
    with pytest.raises(SuiteError, match="scale"):
        plan(suite, "huge", validate=no_validation)


def test_slugs_are_unique_and_safe() -> None:
    cell = Cell("fat tree", "ws", "loss/1", "tcp")
    assert cell.slug == "fat_tree__ws__loss_1__tcp"
    assert cell.scenario == "fat tree/ws/loss/1"


# --- metrics, ranking, tables -------------------------------------------------------------------------------


def flows_table(fcts: list[float | None], sizes: list[int] | None = None) -> pd.DataFrame:
    sizes = sizes or [10_000] * len(fcts)
    return pd.DataFrame(
        {
            "size_bytes": sizes,
            "sent_bytes": [s + 1000 for s in sizes],
            "fct_ns": [math.nan if f is None else f for f in fcts],
            "completed": [f is not None for f in fcts],
            "timeouts": [1 if f is not None and f > 5e6 else 0 for f in fcts],
        }
    )


def test_cell_metrics() -> None:
    fcts: list[float | None] = [float(i * 1000) for i in range(1, 99)] + [None, 8e6, 2e6]
    sizes = [10_000] * 100 + [2_000_000]
    m = cell_metrics(flows_table(fcts, sizes))
    assert m["small_flows"] == 100 and m["small_unfinished"] == 1
    # Nearest rank over 100 small flows: the 99th is the slowest completed one, the 100th the unfinished.
    assert m["p50_us"] == 50.0
    assert m["p99_us"] == 8000.0 and m["p999_us"] == math.inf
    assert m["timeout_fraction"] == pytest.approx(0.01)
    assert m["large_flows"] == 1 and m["large_unfinished"] == 0
    assert m["large_tput_gbps"] == pytest.approx(2_000_000 * 8 / 2e6)
    # Every small flow sent 11 000 B; only the 99 completed ones delivered their 10 000 B.
    assert m["extra_bytes_small"] == pytest.approx(100 * 11_000 / (99 * 10_000) - 1)


def test_rank_counts_unfinished_as_worst_and_shares_ties() -> None:
    table = pd.DataFrame(
        {
            "scenario": ["s"] * 5 + ["t", "s", "s"],
            "scheme": ["a", "b", "c", "d", "e", "a", "g", "h"],
            "status": [OK, OK, OK, OK, NOT_APPLICABLE, OK, OK, OK],
            "p99_us": [10.0, 5.0, math.inf, 5.0, math.nan, 1.0, math.inf, math.inf],
            "small_unfinished": [0, 0, 9, 0, 0, 0, 3, 9],
            "p999_us": [20.0, 9.0, math.inf, 9.0, math.nan, 1.0, math.inf, math.inf],
            "p50_us": [1.0, 2.0, 0.5, 2.0, math.nan, 1.0, 9.0, 0.4],
        }
    )
    # c and h: as many stuck, h faster at the median; g: fewer stuck beats any median.
    assert rank(table).tolist()[:4] == [3, 1, 6, 1]
    assert rank(table).tolist()[6:] == [4, 5]
    assert math.isnan(rank(table)[4]) and rank(table)[5] == 1


def fake_table() -> pd.DataFrame:
    rows = []
    for scenario, values in {"x/w/none": (10.0, 20.0), "x/w/loss": (30.0, 15.0)}.items():
        for scheme, p99 in zip(("a", "b"), values, strict=True):
            rows.append(
                {"scenario": scenario, "topology": "x", "workload": "w", "failure": scenario.split("/")[2],
                 "scheme": scheme, "combination": False, "status": OK, "reason": "", "small_flows": 10,
                 "small_unfinished": 0, "p50_us": 1.0, "p99_us": p99, "p999_us": p99, "timeout_fraction": 0.0,
                 "extra_bytes_small": 0.1, "extra_bytes_all": 0.1, "large_flows": 1, "large_unfinished": 0,
                 "large_tput_gbps": 9.0, "wall_s": 0.1}
            )  # fmt: skip
        rows.append({**rows[-1], "scheme": "c", "status": PENDING, "reason": "needs its branch"})
    table = pd.DataFrame(rows)
    table["rank"] = rank(table)
    return table


def test_tables_and_markdown() -> None:
    table = fake_table()
    ranking = ranking_table(table)
    assert ranking["scheme"].tolist() == ["a", "b"] and ranking["mean rank"].tolist() == [1.5, 1.5]
    assert ranking.set_index("scheme").loc["a", "wins"] == 1
    one = scenario_table(table[table["scenario"] == "x/w/loss"])
    assert one["scheme"].tolist() == ["b", "a", "c"] and one["rank"].tolist()[:2] == ["1", "2"]
    # Times as every report prints them: a unit and three significant digits (p50 1 us, p99 15 / 30 us).
    assert one["p50"].tolist()[:2] == ["1.00 us", "1.00 us"]
    assert one["p99"].tolist()[:2] == ["15.0 us", "30.0 us"]
    text = compare_markdown(table, {"suite": "t", "scale": "ci", "ran": 4, "skipped": 0, "wall_seconds": 1})
    assert "## Overall ranking" in text and "### x/w/loss" in text
    assert "| c | pending | 2 | needs its branch |" in text
    assert "pending: see Not run" in text
    assert "| 1 | b | 1.00 us | 15.0 us | 15.0 us |" in text


def test_html_tables_are_rounded_with_named_columns() -> None:
    table = fake_table()
    table.loc[table["scheme"] == "a", "rank"] = [1.0, 2.0 / 3.0]  # a raw float the page must round
    assert rank_by(table, "failure").columns.name is None  # no unnamed header cell over the axis' name
    meta = {"suite": "t", "scale": "ci", "ran": 4, "skipped": 0, "wall_seconds": 1}
    made = {"tailcut_version": "9.9.9", "tailcut_commit": None, "config_digest": "abcd", "seeds": [3]}
    page = compare_html(table, meta, made)
    assert "0.666" not in page and "0.667" in page and "0.833" in page  # three significant digits
    assert "<th></th>" not in page and "<th>scheme</th>" in page
    assert "seed 3 · config digest abcd · tailcut 9.9.9 · commit unknown" in page
    assert "<td>10.0%</td>" in page  # extra bytes as a percentage, as the run report prints it
    text = compare_markdown(table, meta, made)
    assert "Seed 3 · config digest `abcd` · tailcut 9.9.9 · commit unknown" in text


# --- running ------------------------------------------------------------------------------------------------


def test_mini_suite_runs_writes_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = compare(mini(), out, scale="ci", jobs=1)
    table = result.table
    assert not result.failed
    assert set(table["status"]) == {OK, NOT_APPLICABLE, PENDING}
    ok = table[table["status"] == OK]
    assert len(ok) == 5 and ok["rank"].notna().all()
    for name in ("compare.parquet", "compare.md", "compare.json", "report.html"):
        assert (out / name).exists()
    pd.testing.assert_frame_equal(pd.read_parquet(out / "compare.parquet"), table)
    again = compare(mini(), out, scale="ci", jobs=1)
    assert again.meta["ran"] == 0 and again.meta["skipped"] == 5
    assert again.table[["scenario", "scheme", "p99_us"]].equals(table[["scenario", "scheme", "p99_us"]])


def test_metrics_a_scheme_does_not_measure_are_blank_and_marked(tmp_path: Path) -> None:
    why = "the engine does not attribute retransmissions to messages"
    suite = mini(**{"schemes/tcp/not_measured": {"extra_bytes": why}})
    result = compare(suite, tmp_path / "cmp", scale="ci", schemes=["tcp"], scenarios="two/*")
    ok = result.table[result.table["status"] == OK]
    assert len(ok) == 2
    assert ok["extra_bytes_small"].isna().all() and ok["extra_bytes_all"].isna().all()
    assert ok["timeout_fraction"].notna().all()
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "## Not measured (n/m)" in text and f"| tcp | extra_bytes | {why} |" in text
    assert "| n/m | n/m |" in text


def test_an_engine_that_counts_no_timeouts_is_n_m_without_declaring_it(tmp_path: Path) -> None:
    """DCQUIC's timeouts are n/m from tailcut.summary.NOT_MEASURED, the definition the run report uses."""
    from tailcut.compare import collect

    suite = load_suite(mini(**{"schemes/tcp/transport": "dcquic", "schemes/tcp/params": {}}))
    planned = [p for p in plan(suite, "ci", schemes=["tcp"], validate=no_validation) if p.status == OK][:1]
    folder = tmp_path / planned[0].cell.slug
    folder.mkdir()
    flows_table([1e4, 2e4]).to_parquet(folder / "flows.parquet")
    row = collect(suite, planned, tmp_path).iloc[0]
    assert math.isnan(row["timeout_fraction"]) and row["not_measured"].startswith("timeout_fraction: QUIC")
    assert scenario_table(collect(suite, planned, tmp_path))["timeout frac"].tolist() == ["n/m"]


def test_a_failing_cell_is_reported_and_the_rest_complete(tmp_path: Path) -> None:
    # Reading a missing flow-size file fails inside the run, after validation of everything else.
    suite = mini(**{"topologies/three/set": {"query.cdf": str(tmp_path / "missing.cdf")}})
    result = compare(suite, tmp_path / "cmp", scale="ci", schemes=["tcp"], validate=lambda _: None)
    table = result.table
    assert set(table.loc[table["topology"] == "three", "status"]) <= {FAILED, NOT_APPLICABLE}
    assert set(table.loc[table["topology"] == "two", "status"]) == {OK}
    assert result.failed


def test_cli_compare(cli, tmp_path: Path) -> None:
    import tomli_w

    suite = tmp_path / "mini.toml"
    suite.write_text(tomli_w.dumps(mini()))
    assert cli("compare", suite, "--scale", "ci", "--schemes", "tcp", "--out", tmp_path / "o") == 0
    assert (tmp_path / "o" / "compare.md").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text(tomli_w.dumps(mini(**{"schemes/tcp/carries": ["nope"]})))
    assert cli("compare", bad, "--out", tmp_path / "b") == 2


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install '.[ray]')"
)
def test_ray_executor_matches_local(tmp_path: Path) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = compare(mini(), tmp_path / "ray", scale="ci", executor="ray", schemes=["tcp"])
    finally:
        ray.shutdown()
    local = compare(mini(), tmp_path / "local", scale="ci", schemes=["tcp"])
    pd.testing.assert_frame_equal(remote.table.drop(columns="wall_s"), local.table.drop(columns="wall_s"))


# --- several seeds ------------------------------------------------------------------------------------------

TWO_SCHEMES = {"schemes": ["tcp", "cb"], "scenarios": "two/*"}  # 4 cells, each run in well under a second


def same(a: float, b: float) -> bool:
    """Equal as figures: both missing, both infinite, or close."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-12)


def test_seeds_run_per_seed_folders_and_table_holds_median_and_range(tmp_path: Path) -> None:
    import json
    import statistics

    from tailcut.compare_seeds import SEED_COLUMNS, SPREAD
    from tailcut.config import load_config

    out = tmp_path / "cmp"
    result = compare(mini(), out, scale="ci", seeds=3, **TWO_SCHEMES)
    table = result.table
    assert not result.failed and list(table.columns) == [*COLUMNS, *SEED_COLUMNS]
    assert result.meta["seeds"] == [3, 4, 5] and json.loads((out / "compare.json").read_text())["seeds"] == [
        3,
        4,
        5,
    ]
    assert result.meta["ran"] == 4 * 3
    spreads = 0
    for row in table.itertuples():
        cell = Cell(row.topology, row.workload, row.failure, row.scheme)
        assert not (out / "points" / cell.slug / "flows.parquet").exists()  # only per-seed folders
        per_seed = []
        for seed in (3, 4, 5):
            folder = out / "points" / cell.slug / f"seed={seed}"
            assert load_config(folder / "config.toml")["seed"] == seed
            per_seed.append(cell_metrics(pd.read_parquet(folder / "flows.parquet")))
        assert row.seeds_ok == 3 and row.status == OK
        for metric in ("small_flows", "p50_us", "p99_us", "p999_us", "extra_bytes_small", "extra_bytes_all"):
            values = [float(m[metric]) for m in per_seed]
            assert same(getattr(row, metric), statistics.median(values)), (cell, metric)
            assert same(getattr(row, f"{metric}_min"), min(values)), (cell, metric)
            assert same(getattr(row, f"{metric}_max"), max(values)), (cell, metric)
            spreads += min(values) != max(values)
    assert spreads > 0, "the seeds ran the same flows"
    # Ranks are per seed; the table's rank is their median, and the per-seed tables are kept on disk.
    seeds_table = result.per_seed
    pd.testing.assert_frame_equal(pd.read_parquet(out / "compare_seeds.parquet"), seeds_table)
    for seed, frame in seeds_table.groupby("seed"):
        assert frame["rank"].tolist() == rank(frame.reset_index(drop=True)).tolist(), seed
    medians = seeds_table.groupby(["scenario", "scheme"], sort=False)["rank"].median()
    assert table.set_index(["scenario", "scheme"])["rank"].to_dict() == medians.to_dict()
    assert set(SPREAD) <= set(seeds_table.columns)
    # compare.md: the seeds, and each scheme's mean rank as median [min-max] over its per-seed mean ranks.
    text = (out / "compare.md").read_text()
    assert text.splitlines()[2].startswith("Seeds 3, 4, 5 · config digest")
    assert "## Conclusions that flip between seeds" in text
    for scheme, frame in seeds_table.groupby("scheme"):
        means = frame.groupby("seed")["rank"].mean()
        low, mid, high = (f"{v:.2f}" for v in (means.min(), means.median(), means.max()))
        assert f"| {scheme} | 2 | {mid if low == high else f'{mid} [{low}-{high}]'} |" in text, scheme
    assert "seeds 3, 4, 5 · config digest" in (out / "report.html").read_text()


def test_one_seed_writes_what_it_wrote_before_seeds(tmp_path: Path) -> None:
    """--seeds 1 (the default): the cell's own folder, the table's old columns, no per-seed file, no flip
    section, and the digest of a folder made before --seeds existed, so such folders resume."""
    import json

    from tailcut.outdir import config_hash

    out = tmp_path / "cmp"
    result = compare(mini(), out, scale="ci", seeds=1, **TWO_SCHEMES)
    assert list(result.table.columns) == COLUMNS and result.per_seed is None
    assert not (out / "compare_seeds.parquet").exists()
    folders = sorted(p.name for p in (out / "points").iterdir())
    assert len(folders) == 4 and all((out / "points" / f / "flows.parquet").exists() for f in folders)
    text = (out / "compare.md").read_text()
    assert "flip" not in text and text.splitlines()[2].startswith("Seed 3 · config digest")
    suite = load_suite(mini())
    tables = {k: v for k, v in suite.__dict__.items() if k != "source"}
    marker = json.loads((out / ".tailcut.json").read_text())
    assert marker["config_hash"] == config_hash({**tables, "scale": "ci"}, suite=True)


def test_a_folder_of_other_seeds_is_refused(tmp_path: Path) -> None:
    from tailcut.outdir import OutputError

    out = tmp_path / "cmp"
    compare(mini(), out, scale="ci", seeds=2, schemes=["tcp"], scenarios="two/ws/none")
    for other in (1, 3):
        with pytest.raises(OutputError, match="resuming would mix"):
            compare(mini(), out, scale="ci", seeds=other, schemes=["tcp"], scenarios="two/ws/none")


def test_resume_reruns_only_the_missing_seed_of_a_cell(tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "cmp"
    first = compare(mini(), out, scale="ci", seeds=2, **TWO_SCHEMES)
    gone = f"{Cell('two', 'ws', 'lossy', 'cb').slug}/seed=4"
    shutil.rmtree(out / "points" / gone)
    seen = []
    again = compare(mini(), out, scale="ci", seeds=2, on_done=seen.append, **TWO_SCHEMES)
    assert again.meta["ran"] == 1 and again.meta["skipped"] == 4 * 2 - 1
    assert [o.slug for o in seen if not o.skipped] == [gone]
    assert (out / "points" / gone / "flows.parquet").exists()
    walls = ["wall_s", "wall_s_min", "wall_s_max"]
    pd.testing.assert_frame_equal(again.table.drop(columns=walls), first.table.drop(columns=walls))


def test_bad_seeds_are_refused_naming_the_option(cli, capsys, tmp_path: Path) -> None:
    import tomli_w

    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r"^--seeds: must be an integer >= 1"):
            compare(mini(), tmp_path / "api", scale="ci", seeds=bad, validate=no_validation)
    with pytest.raises(ValueError, match=r"^--seeds: .* past 2\^64 - 1"):
        compare(mini(seed=2**64 - 1), tmp_path / "api", scale="ci", seeds=2, validate=no_validation)
    assert not (tmp_path / "api").exists()
    suite = tmp_path / "mini.toml"
    suite.write_text(tomli_w.dumps(mini()))
    with pytest.raises(SystemExit) as info:
        cli("compare", suite, "--seeds", "0", "--out", tmp_path / "o")
    assert info.value.code == 2 and "argument --seeds" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def seed_tables(p99: dict[int, dict[str, tuple[float, float, float]]]) -> pd.DataFrame:
    """Per-seed tables of schemes a, b, c on scenarios x/w/*, ranked per seed as compare ranks them:
    ``p99[seed][failure]`` gives the p99 of a, b and c."""
    base = {**fake_table().iloc[0].to_dict(), "not_measured": ""}
    frames = []
    for seed, scenarios in p99.items():
        rows = []
        for failure, values in scenarios.items():
            for scheme, value in zip("abc", values, strict=True):
                rows.append({**base, "scenario": f"x/w/{failure}", "failure": failure, "scheme": scheme,
                             "p99_us": value, "p999_us": value})  # fmt: skip
        frame = pd.DataFrame(rows)
        frame["rank"] = rank(frame)
        frame.insert(1, "seed", seed)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# b beats a on scenario x from seed 2 and on y in seed 3; c always wins z. Mean ranks: a 1.33, 1.67, 2;
# b 2.33, 2, 1.67; c 2.33 in every seed: a/b swap, b/c only tie (seed 1) and never swap.
FLIPPING = {
    1: {"x": (10, 20, 30), "y": (10, 20, 30), "z": (10, 20, 5)},
    2: {"x": (20, 10, 30), "y": (10, 20, 30), "z": (10, 20, 5)},
    3: {"x": (20, 10, 30), "y": (20, 10, 30), "z": (10, 20, 5)},
}


def test_flips_between_seeds_are_found() -> None:
    from tailcut.compare_seeds import adjacent_flips, combine, winner_flips

    per_seed = seed_tables(FLIPPING)
    table = combine(per_seed)
    order = ranking_table(table, per_seed)["scheme"].tolist()
    assert order == ["a", "b", "c"]
    flips = adjacent_flips(per_seed, order)
    assert [f["pair"] for f in flips] == ["a/b"]
    assert flips[0]["orders"] == {1: "a 1.33 < b 2.33", 2: "a 1.67 < b 2", 3: "b 1.67 < a 2"}
    assert winner_flips(per_seed) == [
        {"scenario": "x/w/x", "winners": {1: "a", 2: "b", 3: "b"}},
        {"scenario": "x/w/y", "winners": {1: "a", 2: "a", 3: "b"}},
    ]
    text = compare_markdown(table, {"suite": "t", "scale": "ci", "seeds": [1, 2, 3]}, None, per_seed)
    assert "1 of the 2 neighbouring pairs of the overall ranking swap order" in text
    assert "| a/b | a 1.33 < b 2.33 | a 1.67 < b 2 | b 1.67 < a 2 |" in text
    assert "| x/w/y | a | a | b |" in text and "| x/w/z |" not in text
    assert "| a | 3 | 1.67 [1.33-2.00] |" in text and "| c | 3 | 2.33 |" in text  # c: the same in every seed
    steady = seed_tables({1: FLIPPING[1], 2: FLIPPING[1]})
    assert adjacent_flips(steady, ["a", "b", "c"]) == [] and winner_flips(steady) == []
    assert "0 of the 2 neighbouring pairs" in compare_markdown(
        combine(steady), {"seeds": [1, 2]}, None, steady
    )


def test_combine_takes_medians_over_the_seeds_a_cell_ran_in() -> None:
    from tailcut.compare_seeds import combine

    per_seed = seed_tables({1: {"x": (10, 20, 30)}, 2: {"x": (20, math.inf, 40)}, 3: {"x": (30, 30, 50)}})
    per_seed.loc[(per_seed["seed"] == 3) & (per_seed["scheme"] == "a"), ["status", "reason"]] = [
        FAILED,
        "boom",
    ]
    per_seed.loc[per_seed["scheme"] == "c", ["status", "reason"]] = [FAILED, "always"]
    for seed in (1, 2, 3):  # ranked as compare ranks them, among the cells that ran
        mine = per_seed["seed"] == seed
        per_seed.loc[mine, "rank"] = rank(per_seed[mine])
    row = combine(per_seed).set_index("scheme")
    # a: seeds 1 and 2 only, median of two is their midpoint; b: an unfinished seed is the worst value.
    assert row.at["a", "status"] == OK and row.at["a", "seeds_ok"] == 2
    assert (row.at["a", "p99_us"], row.at["a", "p99_us_min"], row.at["a", "p99_us_max"]) == (15, 10, 20)
    assert row.at["a", "reason"] == "seed 3 failed: boom"
    assert (row.at["b", "p99_us"], row.at["b", "p99_us_min"], row.at["b", "p99_us_max"]) == (30, 20, math.inf)
    assert (row.at["b", "rank"], row.at["b", "rank_min"], row.at["b", "rank_max"]) == (2, 1, 2)
    assert (
        row.at["c", "status"] == FAILED and row.at["c", "seeds_ok"] == 0 and math.isnan(row.at["c", "p99_us"])
    )


# --- the checked-in suite at its smallest scale -------------------------------------------------------------


@pytest.fixture(scope="module")
def ci_suite(tmp_path_factory: pytest.TempPathFactory):
    return compare(SUITE, tmp_path_factory.mktemp("compare") / "ci", scale="ci", jobs=2)


def test_ci_scale_every_scheme_completes_every_scenario(ci_suite) -> None:
    table = ci_suite.table
    assert not ci_suite.failed, ci_suite.failed  # a conservation violation fails its cell
    assert FAILED not in set(table["status"])
    assert table["scenario"].nunique() == 3 * 3 * 6
    for scheme, group in table.groupby("scheme"):
        statuses = set(group["status"]) - {NOT_APPLICABLE}
        # A scheme runs everywhere it applies, or is pending (not in this build) everywhere.
        assert statuses == {OK} or statuses == {PENDING}, (scheme, statuses)
        if OK in statuses:
            assert (group["status"] == OK).sum() >= 3 * 3 * 5, scheme  # n/a only where the suite says
    assert not table.loc[table["status"] != OK, "reason"].eq("").any()


def test_ci_scale_no_small_flow_unfinished_without_failure(ci_suite) -> None:
    table = ci_suite.table
    healthy = table[(table["failure"] == "none") & (table["status"] == OK)]
    assert len(healthy) > 0
    assert (healthy["small_flows"] > 0).all()
    stuck = healthy[healthy["small_unfinished"] > 0]
    assert stuck.empty, stuck[["scenario", "scheme", "small_unfinished"]].to_string()
