"""`tailcut run --jobs N` (issue #43): the schemes of one run in parallel processes, results identical to
one process."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import tailcut
from conftest import TINY
from tailcut.config import load_config


def _comparable(runs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in runs]


def test_jobs_gives_the_result_of_one_process() -> None:
    config = load_config(TINY)
    config["schemes"].append({"name": "tracks", "transport": "tcp", "shim": {"kind": "tracks"}})
    one = tailcut.run(config, seed=3)
    many = tailcut.run(config, seed=3, jobs=3)
    pd.testing.assert_frame_equal(one.flows, many.flows)
    pd.testing.assert_frame_equal(one.ports, many.ports)
    pd.testing.assert_frame_equal(one.summary, many.summary)
    assert one.config == many.config
    assert _comparable(one.runs) == _comparable(many.runs)


def test_run_jobs_writes_the_same_folder(cli, tiny: Path, tmp_path: Path) -> None:
    assert cli("run", tiny, "--out", tmp_path / "one") == 0
    assert cli("run", tiny, "--out", tmp_path / "two", "--jobs", "2") == 0
    for name in ("flows.csv", "config.toml", "summary.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    for name in ("flows.parquet", "ports.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "one" / name), pd.read_parquet(tmp_path / "two" / name)
        )


def test_jobs_checks_the_whole_experiment_first() -> None:
    config = load_config(TINY)
    config["schemes"][1]["params"] = {"min_rtto": "5ms"}
    with pytest.raises(tailcut.ConfigError, match="min_rtto"):
        tailcut.run(config, jobs=2)
    with pytest.raises(ValueError, match="jobs"):
        tailcut.run(config, jobs=0)


def test_progress_with_jobs_never_goes_back() -> None:
    seen: list[float] = []
    tailcut.run(TINY, jobs=2, progress=seen.append)
    assert seen and seen == sorted(seen) and seen[-1] == 1.0
