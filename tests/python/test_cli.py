"""Every CLI command on the tiny experiment, through the real Rust core."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import INVALID_VALUE, SWEEP_KEY, SWEEP_VALUES
from tailcut.results import FLOW_COLUMNS, PORT_COLUMNS

RUN_FILES = {
    "flows.parquet",
    "flows.csv",
    "ports.parquet",
    "summary.json",
    "config.toml",
    "runs.json",
    "report.html",
    ".tailcut.json",
}


def test_console_script_is_installed() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tailcut", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("tailcut ")


def test_command_starts_without_the_data_stack() -> None:
    # `tailcut --help` must start fast (issue: < 0.3 s CPU): pandas, pyarrow and numpy alone take ~0.2 s to
    # import, so the command and the package import them only where a table is built.
    probe = (
        "import sys, tailcut, tailcut.cli; print(sorted({'pandas', 'pyarrow', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_validate_ok(cli, tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("validate", tiny) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK")
    assert "tiny" in out


def test_validate_error_exit_2(cli, tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny.write_text("no_such_field = 1\n" + tiny.read_text())
    assert cli("validate", tiny) == 2
    assert "no_such_field" in capsys.readouterr().err


def test_validate_toml_syntax_error_exit_2(cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    assert cli("validate", bad) == 2
    err = capsys.readouterr().err
    assert "bad.toml" in err and "line 1" in err


def test_validate_missing_file_exit_2(cli, tmp_path: Path) -> None:
    assert cli("validate", tmp_path / "nope.toml") == 2


def test_schemes_table(cli, capsys: pytest.CaptureFixture[str]) -> None:
    from tailcut import _core

    assert cli("schemes", "--all") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["SCHEME", "PARAMETER", "DEFAULT", "DESCRIPTION"]
    listed = json.loads(_core.schemes())
    for scheme in listed:
        assert scheme["name"] in out
        for param in scheme["params"]:
            assert f" {param['name']} " in out
            assert param["doc"], f"{scheme['name']}.{param['name']} is undocumented"
    by_name = {s["name"]: s for s in listed}
    assert by_name["tracks"]["kind"] == "shim" and "tracks (shim)" in out
    tcp = {p["name"]: p["default"] for p in by_name["tcp"]["params"]}
    assert tcp["spray_paths"] == 0 and tcp["sack"] is True
    assert {"alpha", "gamma", "fake_sack"} <= {p["name"] for p in by_name["tracks"]["params"]}


def test_schemes_table_formats_defaults_as_toml() -> None:
    from tailcut.schemes_text import format_schemes

    scheme = {
        "name": "b",
        "kind": "transport",
        "description": "B",
        "params": [
            {"name": "z", "default": True, "doc": "Z"},
            {"name": "y", "default": {"kind": "k", "g": 0.5}, "doc": "Y"},
            {"name": "x", "default": None, "doc": "X"},
        ],
    }
    table = format_schemes([scheme]).splitlines()
    assert table[0].split() == ["SCHEME", "PARAMETER", "DEFAULT", "DESCRIPTION"]
    assert table[2].split() == ["z", "true", "Z"]
    # A default wider than its column takes the row; its description follows on the next line.
    assert table[3].split() == ["y", "{kind", "=", "k,", "g", "=", "0.5}"]
    assert table[4].split() == ["Y"]
    assert table[5].split() == ["x", "-", "X"]


def test_run_writes_all_files(cli, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli("run", tiny, "--out", out, "--seed", "11") == 0
    assert set(p.name for p in out.iterdir()) == RUN_FILES
    flows = pd.read_parquet(out / "flows.parquet")
    assert set(FLOW_COLUMNS) <= set(flows.columns)
    assert set(PORT_COLUMNS) <= set(pd.read_parquet(out / "ports.parquet").columns)
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert {r["size_class"] for r in summary} == {"small", "medium", "large", "all"}
    runs = json.loads((out / "runs.json").read_text())
    assert runs and all(r["conservation"]["ok"] for r in runs)
    assert str(out / "report.html") in capsys.readouterr().out
    # no temporary folders left beside the result
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_run_default_out_dir_is_results_name(cli, tiny: Path, tmp_path: Path) -> None:
    assert cli("run", tiny) == 0
    assert (tmp_path / "results" / "tiny" / "flows.parquet").exists()


def test_config_toml_repeats_the_run_exactly(cli, tiny: Path, tmp_path: Path) -> None:
    assert (
        cli("run", tiny, "--out", tmp_path / "a", "--seed", "5", "--set", f"{SWEEP_KEY}={SWEEP_VALUES[1]}")
        == 0
    )
    assert cli("run", tmp_path / "a" / "config.toml", "--out", tmp_path / "b") == 0
    a = pd.read_parquet(tmp_path / "a" / "flows.parquet")
    b = pd.read_parquet(tmp_path / "b" / "flows.parquet")
    pd.testing.assert_frame_equal(a, b)


def test_run_set_override_lands_in_config_toml(cli, tiny: Path, tmp_path: Path) -> None:
    from tailcut.config import load_config

    assert cli("run", tiny, "--out", tmp_path / "a", "--set", f"{SWEEP_KEY}={SWEEP_VALUES[0]}") == 0
    node = load_config(tmp_path / "a" / "config.toml")
    for part in SWEEP_KEY.split("."):
        node = node[part]
    assert node == SWEEP_VALUES[0]


def test_run_bad_config_writes_nothing(cli, tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("run", tiny, "--out", out, "--set", "no_such_field=1") == 2
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_run_failing_midway_writes_nothing(
    cli, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after the simulation (here: while drawing the report) must not leave a partial folder."""
    import tailcut.report

    def broken(*_args: object, **_kwargs: object) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(tailcut.report, "run_report_html", broken)
    out = tmp_path / "out"
    assert cli("run", tiny, "--out", out) == 2
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_rerun_with_overwrite_replaces_previous_result(cli, tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("run", tiny, "--out", out, "--seed", "1") == 0
    (out / "report.html").unlink()
    assert cli("run", tiny, "--out", out, "--seed", "2", "--overwrite") == 0
    assert set(p.name for p in out.iterdir()) == RUN_FILES


def test_report_command_several_dirs(cli, tiny: Path, tmp_path: Path) -> None:
    for seed in ("1", "2"):
        assert cli("run", tiny, "--out", tmp_path / f"seed{seed}", "--seed", seed) == 0
    report = tmp_path / "both.html"
    assert cli("report", tmp_path / "seed1", tmp_path / "seed2", "--out", report) == 0
    text = report.read_text()
    assert text.count("<svg") == 6
    assert "seed1: " in text and "seed2: " in text  # series labelled by folder
    # One line of provenance per folder, each with its own seed.
    assert "seed1: seed 1 · config digest" in text and "seed2: seed 2 · config digest" in text


def test_report_command_rejects_non_result_dir(cli, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert cli("report", tmp_path / "empty") == 2


def test_sweep_command(cli, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sw"
    grid = f"{SWEEP_KEY}={SWEEP_VALUES[0]},{SWEEP_VALUES[1]}"
    assert cli("sweep", tiny, "--grid", grid, "--seeds", "2", "--jobs", "2", "--out", out) == 0
    assert len(list((out / "points").iterdir())) == 4
    assert {"flows.parquet", "summary.parquet", "report.html", "sweep.json"} <= {
        p.name for p in out.iterdir()
    }
    assert "4 points: 4 ran" in capsys.readouterr().out


def test_sweep_command_reports_failed_point(
    cli, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tailcut.runner

    real = tailcut.runner.run

    def failing_second(config, seed=None, overrides=None, progress=None):
        if overrides and overrides.get(SWEEP_KEY) == SWEEP_VALUES[1]:
            raise tailcut.SimulationError(f"{SWEEP_KEY} {SWEEP_VALUES[1]} breaks (test)")
        return real(config, seed=seed, overrides=overrides, progress=progress)

    monkeypatch.setattr(tailcut.runner, "run", failing_second)
    out = tmp_path / "sw"
    grid = f"{SWEEP_KEY}={SWEEP_VALUES[0]},{SWEEP_VALUES[1]}"
    assert cli("sweep", tiny, "--grid", grid, "--out", out) == 1
    printed = capsys.readouterr().out
    (bad,) = [p for p in (out / "points").iterdir() if p.name.startswith(f"{SWEEP_KEY}={SWEEP_VALUES[1]}__")]
    (good,) = [p for p in (out / "points").iterdir() if p.name.startswith(f"{SWEEP_KEY}={SWEEP_VALUES[0]}__")]
    assert "1 failed" in printed and f"FAILED {bad.name}" in printed
    assert SWEEP_KEY in (bad / "error.txt").read_text()
    assert not (bad / "flows.parquet").exists()
    assert (good / "flows.parquet").exists()
    assert "Failed points" in (out / "report.html").read_text()


def test_report_command_mixes_runs_and_sweeps(cli, tiny: Path, tmp_path: Path) -> None:
    assert cli("run", tiny, "--out", tmp_path / "one") == 0
    grid = f"{SWEEP_KEY}={SWEEP_VALUES[0]},{SWEEP_VALUES[1]}"
    assert cli("sweep", tiny, "--grid", grid, "--out", tmp_path / "sw") == 0
    assert cli("report", tmp_path / "one", tmp_path / "sw", "--out", tmp_path / "r.html") == 0
    text = (tmp_path / "r.html").read_text()
    assert text.count("<svg") == 6 + 2
    assert "Summary: one" in text and "Summary: sw" in text
    # The sweep folder's digest is the one its marker resumes by.
    import json

    digest = json.loads((tmp_path / "sw" / ".tailcut.json").read_text())["config_hash"]
    assert f"config digest {digest}" in text


def test_run_shows_progress_on_stderr(
    cli, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("run", tiny, "--out", tmp_path / "out") == 0
    captured = capsys.readouterr()
    assert "100%" in captured.err
    assert "100%" not in captured.out


def test_sweep_with_an_invalid_point_fails_before_running(
    cli, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sw"
    assert cli("sweep", tiny, "--grid", f"{SWEEP_KEY}={SWEEP_VALUES[0]},{INVALID_VALUE}", "--out", out) == 2
    assert SWEEP_KEY in capsys.readouterr().err
    assert not out.exists()


def test_a_stalled_run_ends_early_with_a_warning(cli, capsys, tmp_path: Path) -> None:
    """Every path black-holed and max_time at its bound: the stall watchdog ends the run (docs/simulator.md,
    "Stalled runs"), the flows are reported unfinished and the CLI says why."""
    case = Path(__file__).resolve().parents[1] / "bad_inputs" / "every_path_black_holed.toml"
    out = tmp_path / "stalled"
    assert cli("run", case, "--set", "stall_timeout=20s", "--out", out) == 0
    err = capsys.readouterr().err
    assert "stalled: no packet reached any host for 20" in err
    assert "flows unfinished" in err
    runs = json.loads((out / "runs.json").read_text())
    assert [r["stop_reason"] for r in runs] == ["stalled"]
    # Two 20 s windows and the next backed-off retransmission timer at most, far from max_time (100000 s).
    assert runs[0]["sim_end_ns"] <= 200 * 10**9


def test_run_prints_n_m_for_timeouts_dcquic_does_not_count(
    cli, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real DCQUIC run: its timeout fraction reads n/m on the terminal and on the report, never 0%."""
    text = tiny.read_text().replace('name = "dctcp"\ntransport = "dctcp"\nparams = { min_rto = "5ms" }', "")
    # The last [[schemes]] table, emptied above, becomes a DCQUIC scheme.
    tiny.write_text(text.replace("flows = 200", "flows = 40") + '\nname = "quic"\ntransport = "dcquic"\n')
    assert cli("run", tiny, "--out", tmp_path / "out") == 0
    printed = capsys.readouterr().out
    (quic,) = [line for line in printed.splitlines() if line.startswith("  quic: ")]
    (tcp,) = [line for line in printed.splitlines() if line.startswith("  tcp: ")]
    assert quic.endswith("flows with a timeout n/m") and tcp.endswith("%"), printed  # TCP counts its own
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<td>quic</td>" in page and "<td>n/m</td>" in page
