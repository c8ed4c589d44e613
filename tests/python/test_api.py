"""The Python API as a notebook would use it, through the real Rust core."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pandas as pd
import pytest

import tailcut
from conftest import INVALID_VALUE, SWEEP_KEY, SWEEP_VALUES, TINY
from tailcut import _core
from tailcut.config import load_config, to_json


def test_run_from_path_text_and_dict_agree() -> None:
    a = tailcut.run(TINY)
    b = tailcut.run(str(TINY))
    c = tailcut.run(load_config(TINY))
    d = tailcut.run(TINY.read_text())
    for other in (b, c, d):
        pd.testing.assert_frame_equal(a.flows, other.flows)
    assert isinstance(a.flows, pd.DataFrame) and isinstance(a.ports, pd.DataFrame)
    assert isinstance(a.summary, pd.DataFrame) and not a.summary.empty
    assert a.runs and a.config


def test_same_seed_same_result_different_seed_different() -> None:
    a = tailcut.run(TINY, seed=3)
    b = tailcut.run(TINY, seed=3)
    c = tailcut.run(TINY, seed=4)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    pd.testing.assert_frame_equal(a.ports, b.ports)
    assert not a.flows.equals(c.flows)


def test_overrides_mapping() -> None:
    res = tailcut.run(TINY, overrides={SWEEP_KEY: SWEEP_VALUES[1]})
    node = res.config
    for part in SWEEP_KEY.split("."):
        node = node[part]
    assert node == SWEEP_VALUES[1]


def test_unfinished_flows_have_null_fct_and_are_counted() -> None:
    res = tailcut.run(TINY)
    unfinished = res.flows[~res.flows["completed"].astype(bool)]
    assert unfinished["fct_ns"].isna().all()
    overall = res.summary[res.summary["size_class"] == "all"]
    assert overall["unfinished"].sum() == len(unfinished)
    assert overall["count"].sum() == len(res.flows)


def test_result_write_and_load_round_trip(tmp_path: Path) -> None:
    res = tailcut.run(TINY)
    res.write(tmp_path / "r")
    back = tailcut.Result.load(tmp_path / "r")
    pd.testing.assert_frame_equal(res.flows, back.flows)
    pd.testing.assert_frame_equal(res.summary, back.summary)
    assert back.runs == res.runs


def test_validate_returns_resolved_json() -> None:
    resolved = json.loads(_core.validate(to_json(load_config(TINY))))
    assert resolved["name"] == "tiny"


def test_run_prepares_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The core's run validates and resolves the experiment itself; a separate validation would prepare it
    # (and generate its flows) again. A bad config still fails before anything runs.
    def no_validate(*args: object, **kwargs: object) -> str:
        raise AssertionError("tailcut.run validated separately")

    monkeypatch.setattr(_core, "validate", no_validate)
    assert tailcut.run(TINY, seed=5).config["seed"] == 5
    with pytest.raises(tailcut.ConfigError) as e:
        tailcut.run(TINY, overrides={SWEEP_KEY: INVALID_VALUE})
    assert e.value.path == SWEEP_KEY


def test_the_resolved_config_fills_in_every_scheme_parameter(tmp_path: Path) -> None:
    res = tailcut.run(TINY)
    schemes = json.loads(_core.schemes())
    for scheme in res.config["schemes"]:
        listed = next(s for s in schemes if s["name"] == scheme["transport"])
        for p in listed["params"]:
            if "." not in p["name"] and p["default"] is not None:
                assert p["name"] in scheme["params"], (scheme["name"], p["name"])
    # config.toml repeats the run: resolving it again changes nothing.
    res.write(tmp_path / "r")
    again = json.loads(_core.validate(to_json(load_config(tmp_path / "r" / "config.toml"))))
    assert again["schemes"] == res.config["schemes"]
    pd.testing.assert_frame_equal(tailcut.run(tmp_path / "r" / "config.toml").flows, res.flows)


def test_progress_callback_false_cancels() -> None:
    calls: list[float] = []

    def stop(fraction: float) -> bool:
        calls.append(fraction)
        return False

    try:
        tailcut.run(TINY, progress=stop)
    except tailcut.SimulationError as exc:
        assert calls and "cancelled by the progress callback" in str(exc)
        return
    if not calls:
        pytest.skip("the run finished before the first progress tick")
    pytest.fail("returning False from progress did not cancel the run")


def test_progress_callback_exception_propagates() -> None:
    calls: list[float] = []

    def boom(fraction: float) -> bool:
        calls.append(fraction)
        raise KeyError("from callback")

    try:
        tailcut.run(TINY, progress=boom)
    except KeyError as exc:
        assert "from callback" in str(exc)
        return
    if not calls:
        pytest.skip("the run finished before the first progress tick")
    pytest.fail("the callback's exception was swallowed")


def test_notebook_html_repr() -> None:
    res = tailcut.run(TINY)
    assert "<table" in res._repr_html_() and f"{len(res.flows)} flows" in res._repr_html_()


def test_run_progress_rises_to_one() -> None:
    seen: list[float] = []
    tailcut.run(TINY, progress=lambda f: seen.append(f))
    assert seen and seen[-1] == 1.0
    assert all(a <= b for a, b in pairwise(seen))


def test_sweep_progress_rises_to_one(tmp_path) -> None:

    for jobs in (1, 2):
        seen: list[float] = []
        tailcut.sweep(TINY, {SWEEP_KEY: list(SWEEP_VALUES)}, jobs=jobs, progress=seen.append)
        assert seen[-1] == 1.0, jobs
        assert all(a <= b for a, b in pairwise(seen)), jobs
        # Not only the points' ends: the running points report in between.
        assert len(set(seen)) > len(SWEEP_VALUES), (jobs, seen)
