"""The bad-input corpus (tests/bad_inputs/) through the Python boundary and the CLI: every refused case
raises ``tailcut.ConfigError`` with its expected text (never pyo3's PanicException), and the CLI prints
one error line and exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest

import tailcut
from tailcut.config import load_config, resolve

CORPUS = Path(__file__).resolve().parents[1] / "bad_inputs"
# The same fixed limits as the Rust runner, so refusals do not depend on the machine.
LIMITS = {"max_memory": 2_000_000_000, "max_events": 1_000_000_000}


def _cases() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.toml") if not p.name.endswith(".topo.toml"))


def _text(case: Path) -> str:
    """The case with its side files (topology files, CDFs) made absolute: paths are relative to the cwd."""
    text = case.read_text()
    for side in CORPUS.iterdir():
        if side.suffix in (".toml", ".cdf") and side != case:
            text = text.replace(f'"{side.name}"', f'"{side}"')
    return text


def _expected(text: str) -> list[str]:
    return [line.removeprefix("# expect: ") for line in text.splitlines() if line.startswith("# expect: ")]


def test_the_corpus_is_there() -> None:
    assert len([c for c in _cases() if _expected(c.read_text())]) >= 40


@pytest.mark.parametrize("case", [c for c in _cases() if _expected(c.read_text())], ids=lambda c: c.stem)
def test_each_bad_input_is_refused_with_its_error(case: Path) -> None:
    text = _text(case)
    with pytest.raises(tailcut.ConfigError) as info:
        resolve(load_config(text), LIMITS)
    # The field path; the reason may differ from Rust's where JSON carries the value (NaN and inf
    # become JSON's NaN / Infinity, which the core refuses as "expected value").
    for want in _expected(text):
        assert want.split(": ")[0] in str(info.value)


def test_the_cli_prints_one_error_line(cli, capsys, tmp_path: Path) -> None:
    case = tmp_path / "zero.toml"
    case.write_text(_text(CORPUS / "leaf_spine_host_rate_zero.toml"))
    assert cli("validate", case) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "tailcut: error: topology.host_rate: must be > 0 (a link needs a positive rate)"
    ]


def test_a_run_too_big_for_the_limit_is_refused_unless_forced(cli, capsys) -> None:
    quickstart = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.toml"
    assert cli("validate", quickstart, "--max-events", "1000") == 2
    assert "the run needs an estimated" in capsys.readouterr().err
    assert cli("validate", quickstart, "--max-events", "1000", "--force") == 0
    assert cli("validate", quickstart, "--max-memory", "1KB") == 2
    assert "of memory, more than the 1.0 KB allowed" in capsys.readouterr().err
