"""Sweeps: 4 points on the local pool and on Ray give identical tables; interrupted sweeps resume."""

from __future__ import annotations

import importlib.util
import os
from html import escape
from pathlib import Path

import pandas as pd
import pytest

import tailcut
from conftest import SWEEP_KEY, SWEEP_VALUES, TINY
from tailcut.sweep import Point, parse_grid_option, points

GRID = {SWEEP_KEY: list(SWEEP_VALUES)}


def sorted_table(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in (SWEEP_KEY, "seed", "scheme", "flow_id", "size_class") if c in frame.columns]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> tailcut.SweepResult:
    out = tmp_path_factory.mktemp("sweep") / "local"
    return tailcut.sweep(TINY, GRID, seeds=2, jobs=2, out=out)


def test_parse_grid_option() -> None:
    assert parse_grid_option("a.b=1,2ms, true") == ("a.b", [1, "2ms", True])
    with pytest.raises(ValueError):
        parse_grid_option("a.b=")


def test_points_order_and_slugs() -> None:
    pts = points({"a": [1, 2], "b": ["x y", "z/w"]}, seeds=[5, 6])
    assert len(pts) == 8
    assert pts[0] == Point((("a", 1), ("b", "x y")), 5)
    assert pts[0].slug == "a=1__b=x_y__seed=5"
    assert pts[3].slug == "a=1__b=z_w__seed=6"
    assert len({p.slug for p in pts}) == 8


def test_local_sweep_tables(local_sweep: tailcut.SweepResult) -> None:
    assert local_sweep.path is not None
    assert len(local_sweep.outcomes) == 4 and not local_sweep.failed
    flows = local_sweep.flows
    assert list(flows.columns[:2]) == [SWEEP_KEY, "seed"]
    assert set(flows[SWEEP_KEY]) == set(SWEEP_VALUES)
    assert flows["seed"].nunique() == 2
    summary = pd.read_parquet(local_sweep.path / "summary.parquet")
    assert len(summary) == 4 * flows["scheme"].nunique() * 4  # points x schemes x size classes
    pd.testing.assert_frame_equal(summary, local_sweep.summary)
    for point_dir in (local_sweep.path / "points").iterdir():
        assert (point_dir / "flows.parquet").exists() and (point_dir / "report.html").exists()


def test_point_equals_single_run(local_sweep: tailcut.SweepResult) -> None:
    """A sweep point is exactly the plain run with the same override and seed."""
    first = local_sweep.flows.iloc[0]
    seed, value = int(first["seed"]), first[SWEEP_KEY]
    single = tailcut.run(TINY, seed=seed, overrides={SWEEP_KEY: value}).flows
    part = local_sweep.flows[(local_sweep.flows["seed"] == seed) & (local_sweep.flows[SWEEP_KEY] == value)]
    part = part.drop(columns=[SWEEP_KEY, "seed"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(part, single, check_dtype=False)


def test_sweep_report(local_sweep: tailcut.SweepResult) -> None:
    from tailcut.outdir import config_hash
    from tailcut.provenance import provenance
    from tailcut.report import SWEEP_BAND, sweep_caption, sweep_titles

    text = (local_sweep.path / "report.html").read_text()
    assert text.count("<svg") == 2
    for title in sweep_titles(SWEEP_KEY):
        # Two seeds per point: the caption says the line is their median and the band their range.
        caption = sweep_caption(title, 2)
        assert f"<figcaption>{escape(caption)}</figcaption>" in text
        assert "median over 2 seeds" in caption and SWEEP_BAND in caption
    line = text.split("<p class='provenance'>")[1].split("</p>")[0]
    assert "seeds 1, 2" in line
    assert f"config digest {config_hash(local_sweep.config)}" in line
    assert f"tailcut {provenance()['tailcut_version']}" in line and "commit " in line


def test_sweep_figure_draws_median_and_band() -> None:
    from matplotlib.collections import PolyCollection

    from tailcut.report import sweep_figure

    rows = [
        {"k": k, "seed": seed, "scheme": "a", "size_class": "small", "count": 10, "unfinished": 0, "v": v}
        for k, values in ((1, (1.0, 2.0, 6.0)), (2, (4.0, 4.0, 4.0)))
        for seed, v in zip((1, 2, 3), values, strict=True)
    ]
    fig = sweep_figure({"s": (pd.DataFrame(rows), ["k"])}, "v", "small", "t", "v")
    ax = fig.axes[0]
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [2.0, 4.0]  # medians, not means (3.0)
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == 1.0 and ys.max() == 6.0  # min to max over the seeds
    one = sweep_figure(
        {"s": (pd.DataFrame([r for r in rows if r["seed"] == 1]), ["k"])}, "v", "small", "t", "v"
    )
    assert not [c for c in one.axes[0].collections if isinstance(c, PolyCollection)]  # one seed: no band


def test_resume_reruns_only_missing_point(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    first = tailcut.sweep(TINY, GRID, seeds=2, jobs=1, out=out)
    victim = out / "points" / first.outcomes[1].slug
    (victim / "flows.parquet").unlink()
    stamps = {o.slug: os.stat(out / "points" / o.slug / "runs.json").st_mtime_ns for o in first.outcomes}
    second = tailcut.sweep(TINY, GRID, seeds=2, jobs=1, out=out)
    ran = [o.slug for o in second.outcomes if not o.skipped]
    assert ran == [victim.name]
    for slug, stamp in stamps.items():
        if slug != victim.name:
            assert os.stat(out / "points" / slug / "runs.json").st_mtime_ns == stamp
    pd.testing.assert_frame_equal(sorted_table(first.flows), sorted_table(second.flows))


def test_sweep_without_out_keeps_tables_only(local_sweep: tailcut.SweepResult) -> None:
    res = tailcut.sweep(TINY, {SWEEP_KEY: [SWEEP_VALUES[0]]}, seeds=1)
    assert res.path is None and len(res.outcomes) == 1
    expected = local_sweep.flows[local_sweep.flows[SWEEP_KEY] == SWEEP_VALUES[0]]
    expected = expected[expected["seed"] == expected["seed"].min()]
    pd.testing.assert_frame_equal(sorted_table(res.flows), sorted_table(expected))


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install '.[ray]')"
)
def test_ray_sweep_matches_local(local_sweep: tailcut.SweepResult, tmp_path: Path) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = tailcut.sweep(TINY, GRID, seeds=2, executor="ray", out=tmp_path / "ray")
    finally:
        ray.shutdown()
    assert not remote.failed
    pd.testing.assert_frame_equal(sorted_table(remote.flows), sorted_table(local_sweep.flows))
    pd.testing.assert_frame_equal(sorted_table(remote.summary), sorted_table(local_sweep.summary))


@pytest.mark.parametrize(
    ("grid", "seeds", "message"),
    [
        ({}, 1, "at least one grid key"),
        ({SWEEP_KEY: []}, 1, "at least one value"),
        ({SWEEP_KEY: list(SWEEP_VALUES)}, 0, "seeds must be >= 1"),
        ({"workload.label": ["a b", "a/b"]}, 1, "share a folder"),
    ],
)
def test_sweep_rejects_bad_grids_before_running(tmp_path: Path, grid: dict, seeds: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tailcut.sweep(TINY, grid, seeds=seeds, out=tmp_path / "sw")
    assert not (tmp_path / "sw").exists()
