"""Shared fixtures: the tiny experiment and helpers to run the CLI in-process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
TINY = DATA / "tiny.toml"

# Schema-dependent knobs, in one place so that integration with the real schema edits only here and in
# test_errors.MALFORMED: a grid axis of tiny.toml with two valid values, and a value that fails validation.
SWEEP_KEY = "topology.leaves"
SWEEP_VALUES = (1, 2)
INVALID_VALUE = 0


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A private copy of the tiny experiment, so tests may edit it and default outputs land in tmp_path."""
    target = tmp_path / "tiny.toml"
    shutil.copy(TINY, target)
    return target


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Run ``tailcut ARGS...`` in-process from tmp_path; returns the exit code."""
    from tailcut.cli import main

    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> int:
        return main([str(a) for a in args])

    return run


@pytest.fixture(scope="session")
def tiny_result(tmp_path_factory: pytest.TempPathFactory):
    """One run of the tiny experiment written to a folder, shared by read-only tests."""
    from tailcut.runner import run_to_dir

    out = tmp_path_factory.mktemp("tiny") / "run"
    result = run_to_dir(TINY, out)
    return out, result


def realnet_or_skip() -> None:
    """Skips a test that needs the testbed (root, /dev/net/tun) where it cannot run, saying why; under
    ``TAILCUT_REQUIRE_REALNET=1`` (CI) that is a failure instead."""
    reason = None
    if os.geteuid() != 0:
        reason = "needs root"
    elif not Path("/dev/net/tun").exists():
        reason = "no /dev/net/tun"
    if reason is None:
        return
    if os.environ.get("TAILCUT_REQUIRE_REALNET") == "1":
        pytest.fail(f"TAILCUT_REQUIRE_REALNET=1 but the testbed cannot run here: {reason}")
    pytest.skip(reason)
