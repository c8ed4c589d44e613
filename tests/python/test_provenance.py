"""Every output says which tailcut made it (issue #43): version, commit and config digest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from conftest import SWEEP_KEY, SWEEP_VALUES, TINY
from tailcut import _core
from tailcut.outdir import config_hash
from tailcut.provenance import KEYS, parquet_provenance, provenance, recorded, without


def test_provenance_names_version_commit_and_digest() -> None:
    stamp = provenance({"name": "x"})
    assert stamp["tailcut_version"] == _core.version()
    assert "tailcut_commit" in stamp
    assert stamp["config_digest"] == config_hash({"name": "x"})
    assert "config_digest" not in provenance()


def test_a_run_folder_carries_provenance_everywhere(tiny_result) -> None:
    out, result = tiny_result
    stamp = provenance(result.config)
    summary = json.loads((out / "summary.json").read_text())
    assert {k: summary[k] for k in KEYS} == stamp
    runs = json.loads((out / "runs.json").read_text())
    assert isinstance(runs, list) and all({k: r[k] for k in KEYS} == stamp for r in runs)
    for table in ("flows.parquet", "ports.parquet"):
        assert parquet_provenance(out / table) == {k: v for k, v in stamp.items() if v is not None}
    assert recorded(out) == stamp
    # The digest is the one the folder's config resumes by.
    assert stamp["config_digest"] == config_hash(result.config)


def test_an_old_folder_without_provenance_still_loads(tiny_result, tmp_path: Path) -> None:
    from tailcut.results import Result

    out, result = tiny_result
    old = tmp_path / "old"
    shutil.copytree(out, old)
    (old / ".tailcut.json").write_text('{"kind": "run"}')
    runs = without(json.loads((old / "runs.json").read_text()))
    (old / "runs.json").write_text(json.dumps(runs))
    document = json.loads((old / "summary.json").read_text())
    (old / "summary.json").write_text(json.dumps(document["summary"]))
    for table in ("flows.parquet", "ports.parquet"):
        pd.read_parquet(out / table).to_parquet(old / table, index=False)
        assert parquet_provenance(old / table) == {}
    loaded = Result.load(old)
    assert recorded(old) == {}
    assert len(loaded.flows) == len(result.flows) and loaded.runs == runs


def test_results_are_the_same_apart_from_provenance(tiny_result) -> None:
    """What identity compares (the tables, and summary.json without its provenance) does not move with
    the version: the stamp is additive."""
    out, result = tiny_result
    summary = json.loads((out / "summary.json").read_text())
    assert set(without(summary)) == {"unfinished", "summary"}
    runs = json.loads((out / "runs.json").read_text())
    assert without(runs) == [without(r) for r in result.runs]


def test_sweep_and_compare_json_carry_provenance(tmp_path: Path) -> None:
    from tailcut.sweep import sweep

    out = tmp_path / "sweep"
    sweep(TINY, {SWEEP_KEY: list(SWEEP_VALUES)[:1]}, out=out, overrides={"workload.0.flows": 20})
    meta = json.loads((out / "sweep.json").read_text())
    marker = json.loads((out / ".tailcut.json").read_text())
    assert meta["tailcut_version"] == _core.version() and meta["config_digest"] == marker["config_hash"]
    assert parquet_provenance(out / "summary.parquet")["config_digest"] == marker["config_hash"]
    point = next((out / "points").iterdir())
    assert recorded(point)["tailcut_version"] == _core.version()


def test_net_bench_output_is_stamped(tmp_path: Path) -> None:
    from tailcut.cli import main

    out = tmp_path / "bench"
    argv = ["net", "bench", "--scheme", "tcp", "--size", "100B", "--count", "5", "--warmup", "1"]
    assert main([*argv, "--param", "min_rto=5ms", "--out", str(out)]) == 0
    meta = json.loads((out / "net.json").read_text())
    assert meta["tailcut_version"] == _core.version() and "tailcut_commit" in meta
    assert parquet_provenance(out / "flows.parquet")["tailcut_version"] == _core.version()


def test_config_toml_has_every_scheme_parameter_filled_in(tiny_result) -> None:
    from tailcut.config import load_config

    out, _ = tiny_result
    written = load_config(out / "config.toml")
    registry = {s["name"]: s for s in json.loads(_core.schemes())}
    for scheme in written["schemes"]:
        params = registry[scheme["transport"]]["params"]
        expected = {p["name"] for p in params if p["default"] is not None}
        assert expected <= set(scheme["params"]), (scheme["name"], expected - set(scheme["params"]))


def test_a_config_from_another_version_says_what_changed(tiny_result, tmp_path: Path, cli, capsys) -> None:
    import warnings

    from tailcut.config import load_config, to_toml
    from tailcut.results import Result

    out, _ = tiny_result
    old = tmp_path / "old"
    shutil.copytree(out, old)
    marker = json.loads((old / ".tailcut.json").read_text())
    (old / ".tailcut.json").write_text(json.dumps({**marker, "tailcut_version": "0.0.1"}))
    config = load_config(old / "config.toml")
    del config["schemes"][0]["params"]["spray_paths"]  # a parameter that 0.0.1 did not have
    config["schemes"][0]["params"]["min_rto"] = "200ms"  # as it was, and as it is by default
    (old / "config.toml").write_text(to_toml(config))

    assert cli("validate", old / "config.toml") == 0
    err = capsys.readouterr().err
    assert "written by tailcut 0.0.1 (" in err and "this is tailcut " + _core.version() in err
    assert "scheme tcp (tcp): parameters added since, which take their current defaults: spray_paths" in err
    tcp = next(line for line in err.splitlines() if line.startswith("  scheme tcp (tcp): written values"))
    assert "initial_rto = 5ms (default now 1s)" in tcp and "min_rto" not in tcp

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Result.load(old)
    assert any("spray_paths" in str(w.message) for w in caught)

    # The same version says nothing.
    assert cli("validate", out / "config.toml") == 0
    assert "warning" not in capsys.readouterr().err


def test_testbed_json_has_null_not_inf_and_counts_the_unfinished() -> None:
    from tailcut.testbed import strict_quality

    entry = {"scheme": "linux", "flows": 10, "completed": 8, "fct_p50_ns": 1200, "fct_p99_ns": "inf"}
    assert strict_quality(entry) == {**entry, "fct_p99_ns": None, "unfinished": 2}


def test_commit_is_the_one_the_extension_was_built_from() -> None:
    """build.rs bakes it in: twelve hex digits of the commit, ``+dirty`` when tracked files differed
    (test_wheel.py checks that a built wheel has one)."""
    import re

    from tailcut import _core
    from tailcut import provenance as prov

    assert prov.commit() == _core.build_commit()
    if prov.commit() is not None:
        assert re.fullmatch(r"[0-9a-f]{12}(\+dirty)?", prov.commit()), prov.commit()
    assert prov.provenance()["tailcut_commit"] == prov.commit()
