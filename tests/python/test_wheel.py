"""The built wheel alone, in a fresh virtualenv outside any clone, gives every tool the README shows
(issue #43): the testbed, the T-RACKs agent, loss injection on the UDP runtime, the papers' experiment
files, ``tailcut doctor``.

The wheel is ``$TAILCUT_WHEEL`` or ``dist/tailcut-*.whl`` (``make test`` builds it there and installs the
same file for every other test). Without one the test skips, unless ``TAILCUT_REQUIRE_REALNET=1`` (CI)
makes that a failure. The venv gets the wheel's dependencies from the package index (pip's cache makes
that quick after ``make test``'s own install). Functional facts only: exit codes, files, counters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRE = os.environ.get("TAILCUT_REQUIRE_REALNET") == "1"


def _wheel() -> Path:
    given = os.environ.get("TAILCUT_WHEEL")
    found = [Path(given)] if given else sorted((ROOT / "dist").glob("tailcut-*.whl"))
    if not found or not found[-1].is_file():
        message = "no built wheel (make test builds dist/tailcut-*.whl; or set TAILCUT_WHEEL)"
        if REQUIRE:
            pytest.fail(f"TAILCUT_REQUIRE_REALNET=1: {message}")
        pytest.skip(message)
    return found[-1]


def _can_run_testbed() -> bool:
    ok = os.geteuid() == 0 and Path("/dev/net/tun").exists()
    if not ok and REQUIRE:
        pytest.fail("TAILCUT_REQUIRE_REALNET=1 but this machine cannot run the testbed (root, /dev/net/tun)")
    return ok


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with only the wheel installed (with its ``plot`` extra, which reports need, as
    the README installs it) and what it depends on."""
    wheel = _wheel()
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    subprocess.run([str(folder / "bin" / "pip"), "install", "-q", f"{wheel}[plot]"], check=True)
    return folder


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command of the venv, as a user's shell with the venv activated runs it: nothing of the clone."""
    clone = {"PYTHONPATH", "VIRTUAL_ENV", "TAILCUT_TESTBED_BIN"}
    env = {k: v for k, v in os.environ.items() if k not in clone}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_the_commands_are_installed(venv: Path, tmp_path: Path) -> None:
    for command in ("tailcut", "tailcut-testbed", "tailcut-tracksd"):
        assert (venv / "bin" / command).is_file(), command
    version = _run(venv, tmp_path, "tailcut", "--version")
    assert version.returncode == 0 and version.stdout.startswith("tailcut "), version
    provenance = _run(venv, tmp_path, "python", "-c", "import tailcut.provenance as p; print(p.commit())")
    assert provenance.returncode == 0 and provenance.stdout.strip() != "None", "the build commit is baked in"


def test_the_tracks_agent_checks_its_shipped_configuration(venv: Path, tmp_path: Path) -> None:
    example = _run(venv, tmp_path, "tailcut-tracksd", "--example-config")
    assert example.returncode == 0 and "[tracks]" in example.stdout
    (tmp_path / "tracksd.toml").write_text(example.stdout)
    check = _run(venv, tmp_path, "tailcut-tracksd", "--check", "tracksd.toml")
    assert check.returncode == 0, check.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text(example.stdout.replace("alpha = 10", "alpha = -1"))
    refused = _run(venv, tmp_path, "tailcut-tracksd", "--check", "bad.toml")
    assert refused.returncode != 0 and "alpha" in refused.stderr, refused.stderr
    unit = _run(venv, tmp_path, "tailcut-tracksd", "--systemd-unit")
    assert f"ExecStart={venv / 'bin' / 'tailcut-tracksd'}" in unit.stdout


def test_a_papers_experiment_reproduces_outside_a_clone(venv: Path, tmp_path: Path) -> None:
    done = _run(venv, tmp_path, "tailcut", "reproduce", "fuso", "net_loss_4", "--seeds", "1", "--out", "r")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "fuso.md").is_file()


def test_doctor_and_a_shipped_testbed_file_run(venv: Path, tmp_path: Path) -> None:
    if not _can_run_testbed():
        pytest.skip("needs root and /dev/net/tun")
    doctor = _run(venv, tmp_path, "tailcut", "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "ok       namespaces + TUN + ip" in doctor.stdout
    # The README's path, resolved to the package's copy: there is no experiments/ folder here.
    assert not (tmp_path / "experiments").exists()
    # Functional facts only: this machine's timing is not the subject (--allow-invalid-timing).
    run = _run(
        venv, tmp_path, "tailcut", "testbed", "run", "experiments/testbed/loss.toml", "--out", "tb",
        "--allow-invalid-timing",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    flows = pd.read_parquet(tmp_path / "tb" / "flows.parquet")
    assert len(flows) == 400 and flows["completed"].all()
    kernel = json.loads((tmp_path / "tb" / "testbed.json").read_text())[0]["kernel"]
    assert kernel["Tcp.RetransSegs"] > 0, "the shipped file's 1% loss reached the kernel's TCP"
