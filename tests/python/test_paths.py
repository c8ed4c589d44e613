"""File paths in experiment and suite files resolve against the file's folder, whatever the cwd."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tailcut.config import load_config, load_experiment
from tailcut.paths import anchor_suite

ROOT = Path(__file__).resolve().parents[2]
TINY = Path(__file__).parent / "data" / "tiny.toml"
EXPERIMENTS = sorted((ROOT / "experiments").rglob("*.toml"))

TOPOLOGY = """
[[node]]
name = "h0"
kind = "host"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "sw"
kind = "switch"
[[link]]
a = "h0"
b = "sw"
rate = "10Gbps"
delay = "2us"
[[link]]
a = "h1"
b = "sw"
rate = "10Gbps"
delay = "2us"
"""

SIZES = "1000 0\n20000 0.5\n60000 1\n"


def _experiment_with_neighbours(folder: Path) -> Path:
    """tiny.toml moved into `folder` with a topology file and a CDF file beside it, named relatively."""
    folder.mkdir(parents=True)
    (folder / "two.topo.toml").write_text(TOPOLOGY)
    (folder / "sizes.cdf").write_text(SIZES)
    text = TINY.read_text()
    topology = text[text.index("[topology]") : text.index("[network]")]
    text = text.replace(topology, '[topology]\nkind = "file"\npath = "two.topo.toml"\n\n')
    text = text.replace('link = { between = ["leaf0", "spine0"] }', 'link = { between = ["h0", "sw"] }')
    text = text.replace('cdf = "websearch"', 'cdf = "sizes.cdf"').replace("flows = 200", "flows = 20")
    path = folder / "exp.toml"
    path.write_text(text)
    return path


def test_a_file_path_resolves_against_the_experiment_folder(tmp_path: Path) -> None:
    exp = _experiment_with_neighbours(tmp_path / "here")
    config = load_experiment(exp)
    assert config["topology"]["path"] == str(tmp_path / "here" / "two.topo.toml")
    assert config["workload"][0]["cdf"] == str(tmp_path / "here" / "sizes.cdf")
    # Text has no folder: its paths stay as written, for the working directory.
    assert load_experiment(exp.read_text())["workload"][0]["cdf"] == "sizes.cdf"


def test_builtin_names_and_absolute_paths_are_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text(
        'name = "b"\n'
        '[[workload]]\nname = "a"\ncdf = "websearch"\n'
        '[[workload]]\nname = "b"\ncdf = "/data/x.cdf"\n'
        '[[faults]]\nkind = "random_lossy_links"\nrates = "fuso-loss"\n'
        '[[faults]]\nkind = "random_lossy_links"\nrates = "r.cdf"\n'
        '[[faults]]\nkind = "loss"\nrates = "not-a-path-field"\n'
    )
    config = load_experiment(path)
    assert [w["cdf"] for w in config["workload"]] == ["websearch", "/data/x.cdf"]
    assert [f["rates"] for f in config["faults"]] == [
        "fuso-loss",
        str(tmp_path / "r.cdf"),
        "not-a-path-field",
    ]


def test_validate_and_run_from_another_directory(cli, capsys, tmp_path: Path, monkeypatch) -> None:
    exp = _experiment_with_neighbours(tmp_path / "project" / "exp")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    from tailcut.cli import main

    assert main(["validate", "../project/exp/exp.toml"]) == 0
    out = tmp_path / "out"
    assert main(["run", "../project/exp/exp.toml", "--out", str(out)]) == 0
    capsys.readouterr()
    # The config written with the results names its files absolutely, so it runs from its own folder too.
    written = load_config(out / "config.toml")
    assert written["topology"]["path"] == str(exp.parent / "two.topo.toml")
    monkeypatch.chdir(out)
    assert main(["run", "config.toml", "--out", str(tmp_path / "again")]) == 0
    first = (out / "summary.json").read_text()
    assert (tmp_path / "again" / "summary.json").read_text() == first


def test_a_missing_neighbour_is_named_with_its_resolved_path(cli, capsys, tmp_path: Path) -> None:
    exp = _experiment_with_neighbours(tmp_path / "gone")
    (tmp_path / "gone" / "sizes.cdf").unlink()
    assert cli("validate", exp) == 2
    err = capsys.readouterr().err
    assert "workload" in err and str(tmp_path / "gone" / "sizes.cdf") in err


def test_a_suite_anchors_its_topologies_workloads_and_failures(tmp_path: Path) -> None:
    suite = {
        "topologies": {"t": {"topology": {"kind": "file", "path": "t.topo.toml"}}},
        "workloads": {
            "w": {"components": [{"name": "q", "cdf": "q.cdf"}, {"name": "r", "cdf": "datamining"}]}
        },
        "failures": {"f": {"faults": [{"kind": "random_lossy_links", "rates": "r.cdf"}]}},
    }
    anchor_suite(suite, tmp_path)
    assert suite["topologies"]["t"]["topology"]["path"] == str(tmp_path / "t.topo.toml")
    assert [c["cdf"] for c in suite["workloads"]["w"]["components"]] == [
        str(tmp_path / "q.cdf"),
        "datamining",
    ]
    assert suite["failures"]["f"]["faults"][0]["rates"] == str(tmp_path / "r.cdf")


def test_the_shipped_experiments_are_there() -> None:
    assert len(EXPERIMENTS) >= 100


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: str(p.relative_to(ROOT / "experiments")))
def test_every_shipped_experiment_validates_from_the_root_directory(path: Path, monkeypatch, capsys) -> None:
    from tailcut.cli import main

    monkeypatch.chdir("/")
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_a_moved_experiment_folder_still_finds_its_files(tmp_path: Path, monkeypatch) -> None:
    from tailcut.cli import main

    shutil.copytree(ROOT / "experiments" / "cp", tmp_path / "cp")
    monkeypatch.chdir("/")
    assert main(["validate", str(tmp_path / "cp" / "outcast.toml")]) == 0


def test_a_result_identity_follows_file_contents_not_their_location(tmp_path: Path) -> None:
    from tailcut.config import resolve
    from tailcut.outdir import config_hash

    here = config_hash(resolve(load_experiment(_experiment_with_neighbours(tmp_path / "here"))))
    moved = config_hash(resolve(load_experiment(_experiment_with_neighbours(tmp_path / "moved"))))
    assert here == moved  # the checkout moved: a sweep in its results folder still resumes
    (tmp_path / "moved" / "sizes.cdf").write_text(SIZES.replace("20000", "30000"))
    changed = config_hash(resolve(load_experiment(tmp_path / "moved" / "exp.toml")))
    assert changed != here  # the CDF changed: the old points are not this experiment's


def test_a_suite_identity_follows_file_contents_not_their_location(tmp_path: Path) -> None:
    from tailcut.outdir import config_hash

    def suite(folder: Path) -> dict:
        folder.mkdir()
        (folder / "sizes.cdf").write_text(SIZES)
        raw = {"workloads": {"w": {"components": [{"name": "q", "cdf": "sizes.cdf"}]}}}
        return anchor_suite(raw, folder)

    assert config_hash(suite(tmp_path / "a"), suite=True) == config_hash(suite(tmp_path / "b"), suite=True)
