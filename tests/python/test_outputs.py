"""Output folders (issue #25): --out never removes what tailcut did not write, never mixes two experiments'
results, leaves no temporary folder behind, and sweeps fail loudly; interruption stops a sweep's workers."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import tomli_w

import tailcut
from conftest import SWEEP_KEY, SWEEP_VALUES, TINY
from tailcut import outdir

GRID = f"{SWEEP_KEY}={SWEEP_VALUES[0]},{SWEEP_VALUES[1]}"


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- run --out --------------------------------------------------------------------------------------------


def test_run_refuses_a_folder_of_the_users_files(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    for extra in ([], ["--overwrite"]):
        assert cli("run", tiny, "--out", out, *extra) == 2
        assert "precious.txt" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["precious.txt"]
    assert (out / "precious.txt").read_text() == "keep me"
    assert hidden(tmp_path) == []


def test_run_refuses_an_existing_file(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    assert cli("run", tiny, "--out", notes) == 2
    assert "is an existing file" in capsys.readouterr().err
    assert notes.read_text() == "my notes"


def test_run_writes_into_an_empty_folder(cli, tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert cli("run", tiny, "--out", out) == 0
    assert (out / "flows.parquet").exists() and outdir.read_marker(out)["kind"] == "run"


def test_a_result_is_replaced_only_with_overwrite(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert cli("run", tiny, "--out", out, "--seed", "1") == 0
    first = pd.read_parquet(out / "flows.parquet")
    assert cli("run", tiny, "--out", out, "--seed", "2") == 2
    assert "--overwrite" in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_parquet(out / "flows.parquet"), first)
    assert cli("run", tiny, "--out", out, "--seed", "2", "--overwrite") == 0
    assert not pd.read_parquet(out / "flows.parquet").equals(first)
    # A file the user added to a result folder is theirs: not even --overwrite removes it.
    (out / "notes.md").write_text("my analysis")
    assert cli("run", tiny, "--out", out, "--overwrite") == 2
    assert (out / "notes.md").read_text() == "my analysis"


def test_a_folder_without_the_marker_is_never_replaced(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    # Names alone do not make a folder tailcut's: a user's runs.json and config.toml survive --overwrite.
    out = tmp_path / "mine"
    out.mkdir()
    (out / "runs.json").write_text("[1, 2]")
    (out / "config.toml").write_text("mine = true")
    assert cli("run", tiny, "--out", out, "--overwrite") == 2
    assert "runs.json" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["config.toml", "runs.json"]
    assert (out / "runs.json").read_text() == "[1, 2]"
    # The same for a tailcut result whose marker is gone (an older tailcut's).
    assert cli("run", tiny, "--out", tmp_path / "old") == 0
    (tmp_path / "old" / outdir.MARKER).unlink()
    assert cli("run", tiny, "--out", tmp_path / "old", "--overwrite") == 2
    assert "removed by hand" in capsys.readouterr().err


def test_a_second_writer_of_the_same_out_is_refused(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    # Another process's lock, as a concurrent `tailcut run --out out` holds it.
    lock = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, sys; f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX); "
         "print('locked', flush=True); sys.stdin.read()", str(tmp_path / ".out.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert lock.stdout.readline().strip() == "locked"
        assert cli("run", tiny, "--out", out) == 2
        assert "another tailcut is writing" in capsys.readouterr().err
        assert not out.exists()
    finally:
        lock.communicate("")
    assert cli("run", tiny, "--out", out) == 0
    # The lock is released (and its file removed) once the result is written.
    assert not (tmp_path / ".out.lock").exists()


@pytest.mark.parametrize("problem", ["read-only", "mount point"])
def test_an_unwritable_out_is_refused_before_the_run(
    cli, tiny: Path, tmp_path: Path, capsys, monkeypatch, problem: str
) -> None:
    import tailcut.runner

    out = tmp_path / "ro"
    out.mkdir()
    if problem == "read-only":
        real = os.access
        monkeypatch.setattr(outdir.os, "access", lambda p, mode: False if Path(p) == out else real(p, mode))
    else:
        monkeypatch.setattr(outdir.os.path, "ismount", lambda p: Path(p) == out)
    monkeypatch.setattr(tailcut.runner, "run", lambda *a, **k: pytest.fail("the run started"))
    assert cli("run", tiny, "--out", out) == 2
    assert problem.replace("-", "") in capsys.readouterr().err.replace("-", "")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ro.") and p.name != ".ro.lock"] == []
    assert list(out.iterdir()) == []


def test_a_failed_swap_leaves_no_old_folder(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "t"
    target.mkdir()
    real = os.replace

    def refuse(a, b):
        if Path(a) == target:
            raise OSError(16, "Device or resource busy")
        return real(a, b)

    monkeypatch.setattr(outdir.os, "replace", refuse)
    with pytest.raises(OSError), outdir.atomic_dir(target):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["t"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped interrupt
def test_a_dropped_ctrl_c_still_stops_a_serial_sweep(cli, tiny: Path, tmp_path: Path, monkeypatch) -> None:
    """SIGINT's KeyboardInterrupt raised in a weakref callback or __del__ is printed and dropped by
    Python; the sweep must stop anyway (exit 130), with no combined tables written."""
    import tailcut.runner
    from tailcut import interrupt

    real = tailcut.runner.run_to_dir

    class Dropped:
        def __del__(self) -> None:
            interrupt._handler(signal.SIGINT, None)  # raised here, swallowed by the interpreter

    def run_to_dir(*args, **kwargs):
        Dropped()
        return real(*args, **kwargs)

    monkeypatch.setattr(tailcut.runner, "run_to_dir", run_to_dir)
    out = tmp_path / "sw"
    assert cli("sweep", tiny, "--grid", "seed=1,2,3", "--jobs", "1", "--out", out) == 130
    assert not (out / "flows.parquet").exists() and not (out / "sweep.json").exists()
    assert len(list((out / "points").glob("*/flows.parquet"))) <= 1


def test_the_python_api_guards_too(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match=r"precious\.txt"):
        tailcut.runner.run_to_dir(TINY, out)
    result = tailcut.run(TINY)
    with pytest.raises(outdir.OutputError):
        result.write(out, overwrite=True)
    assert [p.name for p in out.iterdir()] == ["precious.txt"]


def test_temporary_folders_of_killed_runs_are_removed_next_time(cli, tiny: Path, tmp_path: Path) -> None:
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [
        tmp_path / f".out.tmp-{host}-{dead.pid}-abc123de",  # a writer that was killed
        tmp_path / f".out.old-{host}-{dead.pid}-abc123df",
        tmp_path / ".out.tmp-k2j4h5g6",  # an older tailcut's, which did not name its writer
    ]
    alive = [
        tmp_path / f".out.tmp-{host}-{os.getpid()}-abc123dg",  # a writer still running
        tmp_path / f".out.tmp-otherhost-{dead.pid}-abc123dh",  # another host's: not ours to judge
    ]
    for folder in stale + alive:
        folder.mkdir()
        (folder / "flows.parquet").write_text("half")
    assert cli("run", tiny, "--out", tmp_path / "out") == 0
    assert hidden(tmp_path) == sorted(p.name for p in alive)


def test_an_interrupted_write_leaves_no_temporary_folder(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), outdir.atomic_dir(tmp_path / "out") as tmp:
        (tmp / "flows.parquet").write_text("half")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


# --- sweeps -----------------------------------------------------------------------------------------------


def test_resuming_a_sweep_of_another_experiment_is_refused(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "sw"
    assert cli("sweep", tiny, "--grid", GRID, "--out", out) == 0
    capsys.readouterr()
    other = tmp_path / "other.toml"
    text = tiny.read_text().replace('name = "tiny"', 'name = "other"')
    other.write_text(text.replace("p = 0.01", "p = 0.05"))
    assert cli("sweep", other, "--grid", GRID, "--out", out) == 2
    err = capsys.readouterr().err
    assert "'tiny'" in err and "'other'" in err
    before = pd.read_parquet(out / "flows.parquet")
    # The same experiment resumes; --overwrite starts the other one afresh.
    assert cli("sweep", tiny, "--grid", GRID, "--out", out) == 0
    assert "0 ran, 2 already done" in capsys.readouterr().out
    assert cli("sweep", other, "--grid", GRID, "--out", out, "--overwrite") == 0
    assert "2 ran, 0 already done" in capsys.readouterr().out
    assert not pd.read_parquet(out / "flows.parquet").equals(before)


def test_a_sweep_refuses_a_folder_of_the_users_files(cli, tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert cli("sweep", tiny, "--grid", GRID, "--out", out, "--overwrite") == 2
    assert [p.name for p in out.iterdir()] == ["precious.txt"]


def test_an_unknown_grid_key_fails_before_anything_runs(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "sw"
    assert cli("sweep", tiny, "--grid", "unknownkey=1,2", "--out", out) == 2
    err = capsys.readouterr().err
    assert "unknownkey" in err and "grid point" in err
    assert not out.exists()
    with pytest.raises(tailcut.ConfigError, match="unknownkey"):
        tailcut.sweep(TINY, {"unknownkey": [1, 2]}, out=out)
    assert not out.exists()


def test_an_invalid_grid_value_fails_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(tailcut.ConfigError, match=SWEEP_KEY):
        tailcut.sweep(TINY, {SWEEP_KEY: [SWEEP_VALUES[0], 0]}, out=tmp_path / "sw")
    assert not (tmp_path / "sw").exists()


def test_seed_in_the_grid_is_honoured(tmp_path: Path) -> None:
    res = tailcut.sweep(TINY, {"seed": [1, 2]}, out=tmp_path / "sw")
    assert [o.slug for o in res.outcomes] == ["seed=1", "seed=2"]
    assert sorted(res.flows["seed"].unique()) == [1, 2]
    one, two = (res.flows[res.flows["seed"] == s].drop(columns="seed") for s in (1, 2))
    assert not one.reset_index(drop=True).equals(two.reset_index(drop=True))
    single = tailcut.run(TINY, seed=2).flows
    assert len(single) == len(two)
    assert (tmp_path / "sw" / "summary.parquet").exists()


@pytest.mark.parametrize(
    ("grid", "seeds", "message"),
    [
        ({"seed": [1, 1]}, 1, "listed twice"),
        ({"seed": ["x"]}, 1, "integers in"),
        ({"seed": [2**64]}, 1, "integers in"),
        ({"seed": [1, 2]}, 2, "leave seeds"),
    ],
)
def test_seed_in_the_grid_is_checked(tmp_path: Path, grid: dict, seeds: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tailcut.sweep(TINY, grid, seeds=seeds, out=tmp_path / "sw")
    assert not (tmp_path / "sw").exists()


def _failing_run(*_args: object, **_kwargs: object) -> None:
    raise tailcut.SimulationError("packet conservation violated (test)")


def test_a_sweep_whose_points_all_fail_fails(
    cli, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(tailcut.runner, "run", _failing_run)
    out = tmp_path / "sw"
    with pytest.raises(tailcut.SimulationError, match="every point of the sweep failed"):
        tailcut.sweep(TINY, {SWEEP_KEY: list(SWEEP_VALUES)}, out=out)
    assert cli("sweep", tiny, "--grid", GRID, "--out", tmp_path / "cli") == 1
    assert "every point of the sweep failed" in capsys.readouterr().err
    for folder in (out, tmp_path / "cli"):
        assert not {"flows.parquet", "summary.parquet", "report.html", "sweep.json"} & {
            p.name for p in folder.iterdir()
        }
        errors = list(folder.glob("points/*/error.txt"))
        assert len(errors) == 2 and all("conservation" in e.read_text() for e in errors)


def test_a_full_disk_leaves_no_empty_error_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tailcut.sweep import Point, run_point

    class Full(io.StringIO):
        def write(self, _text: str) -> int:
            raise OSError(28, "No space left on device")

    def fdopen(fd: int, *_args: object) -> Full:
        os.close(fd)
        return Full()

    monkeypatch.setattr(tailcut.runner, "run", _failing_run)
    monkeypatch.setattr(os, "fdopen", fdopen)
    outcome = run_point({}, Point((), 1), str(tmp_path))
    monkeypatch.undo()
    assert "conservation" in outcome.error and "error.txt not written" in outcome.error
    assert list((tmp_path / "seed=1").iterdir()) == []


def test_a_partly_failed_sweep_still_writes_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tailcut import runner

    real = runner.run

    def flaky(config, seed=None, overrides=None, progress=None):
        if seed == 2:
            raise tailcut.SimulationError("seed 2 breaks (test)")
        return real(config, seed=seed, overrides=overrides, progress=progress)

    monkeypatch.setattr(runner, "run", flaky)
    res = tailcut.sweep(TINY, {"seed": [1, 2]}, out=tmp_path / "sw")
    assert list(res.failed) == ["seed=2"]
    assert set(pd.read_parquet(tmp_path / "sw" / "flows.parquet")["seed"]) == {1}


# --- compare --out ----------------------------------------------------------------------------------------


def test_compare_refuses_a_folder_of_the_users_files(cli, tmp_path: Path, capsys) -> None:
    from test_compare import mini

    suite = tmp_path / "mini.toml"
    suite.write_text(tomli_w.dumps(mini()))
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert cli("compare", suite, "--scale", "ci", "--schemes", "tcp", "--out", out) == 2
    assert "precious.txt" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["precious.txt"]


# --- interruption -----------------------------------------------------------------------------------------

SLOW = ["--set", "workload.0.flows=20000", "--set", "max_time=10s"]


def _children(pid: int) -> set[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_sweep(tmp_path: Path) -> tuple[subprocess.Popen, set[int]]:
    """A --jobs 2 sweep of 8 slow points, once both of its pool workers run."""
    cmd = [sys.executable, "-m", "tailcut", "sweep", str(TINY), "--grid", "seed=1,2,3,4,5,6,7,8"]
    proc = subprocess.Popen(
        [*cmd, "--jobs", "2", *SLOW, "--out", str(tmp_path / "sw")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        workers = {p for p in _children(proc.pid) if _alive(p)}
        if len(workers) >= 2:
            return proc, workers
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the sweep's workers did not start")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_a_sweep_at_once(tmp_path: Path) -> None:
    proc, workers = _start_sweep(tmp_path)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    # The workers exit on their own signal; wait for them (bounded) rather than a fixed half second.
    deadline = time.monotonic() + 60
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers)
    # The queued points never ran (a wall-clock bound would say the same, but flakes on a loaded
    # machine).
    done = list((tmp_path / "sw" / "points").glob("*/flows.parquet"))
    assert len(done) < 8, "waited for the queued points"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_pool_workers_die_with_the_sweep(tmp_path: Path, sig: signal.Signals) -> None:
    proc, workers = _start_sweep(tmp_path)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 60
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "orphaned pool workers keep running points"
    if sig == signal.SIGTERM:
        assert proc.returncode == 130
    # A later run cleans what the killed workers were writing and resumes.
    leftovers = [p for p in (tmp_path / "sw" / "points").iterdir() if p.name.startswith(".")]
    outdir.clean_temps(tmp_path / "sw" / "points")
    assert all(not p.exists() for p in leftovers)
