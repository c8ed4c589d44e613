"""The bad-input corpus (tests/bad_inputs/) through the Python boundary and the CLI: every refused case
raises ``tailcut.ConfigError`` with its expected text (never pyo3's PanicException), and the CLI prints
one error line and exits 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tailcut
from tailcut.config import load_config, resolve

CORPUS = Path(__file__).resolve().parents[1] / "bad_inputs"
# The same fixed limits as the Rust runner, so refusals do not depend on the machine.
LIMITS = {"max_memory": 2_000_000_000, "max_events": 1_000_000_000}


def _cases() -> list[Path]:
    """The experiment cases (topology files and suites are cases of `tailcut validate` below)."""
    return sorted(p for p in CORPUS.glob("*.toml") if not p.name.endswith((".topo.toml", ".suite.toml")))


def _validate_cases() -> list[Path]:
    """Topology files and compare suites with expected errors, given to `tailcut validate` as they are."""
    files = sorted([*CORPUS.glob("*.topo.toml"), *CORPUS.glob("*.suite.toml")])
    return [f for f in files if _expected(f.read_text())]


def _text(case: Path) -> str:
    """The case with its side files (topology files, CDFs, flow files) made absolute: TOML text has no
    folder."""
    text = case.read_text()
    for side in CORPUS.iterdir():
        if side.suffix in (".toml", ".cdf", ".cm", ".csv") and side != case:
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


def test_validate_has_topology_and_suite_cases() -> None:
    cases = _validate_cases()
    assert len([c for c in cases if c.name.endswith(".topo.toml")]) >= 8
    assert len([c for c in cases if c.name.endswith(".suite.toml")]) >= 7


@pytest.mark.parametrize("case", _validate_cases(), ids=lambda c: c.name.removesuffix(".toml"))
def test_validate_refuses_each_bad_topology_file_and_suite(cli, capsys, case: Path) -> None:
    # The corpus limits, so that the oversized cell is refused on every machine.
    assert cli("validate", case, "--max-memory", "2GB", "--max-events", "1000000000") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"tailcut: error: {case}: "), err
    for want in _expected(case.read_text()):
        assert want in err


def test_validate_accepts_a_topology_file(cli, capsys, tmp_path: Path) -> None:
    topo = tmp_path / "two.topo.toml"
    topo.write_text(
        "".join(
            f'[[node]]\nname = "{n}"\nkind = "{k}"\n'
            for n, k in [("h0", "host"), ("h1", "host"), ("s0", "switch")]
        )
        + "".join(f'[[link]]\na = "{h}"\nb = "s0"\nrate = "1Gbps"\ndelay = "1us"\n' for h in ("h0", "h1"))
    )
    assert cli("validate", topo) == 0
    out = capsys.readouterr().out
    assert "(topology file)" in out and "2 hosts, 1 switches, 2 links" in out
    # A single host is a valid topology file too (the stand-in workload's complaint is not the file's).
    one = tmp_path / "one.topo.toml"
    one.write_text('[[node]]\nname = "h0"\nkind = "host"\n[[node]]\nname = "s0"\nkind = "switch"\n'
                   '[[link]]\na = "h0"\nb = "s0"\nrate = "1Gbps"\ndelay = "1us"\n')  # fmt: skip
    assert cli("validate", one) == 0


def test_validate_accepts_the_compare_suite_without_pandas(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    suite = Path(__file__).resolve().parents[2] / "experiments" / "compare" / "suite.toml"
    code = (
        "import sys; from tailcut.cli import main; "
        f"rc = main(['validate', {str(suite)!r}, '--scale', 'ci']); "
        "assert rc == 0, rc; assert 'pandas' not in sys.modules, 'pandas imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stderr
    assert "(compare suite)" in done.stdout and "cells" in done.stdout


def test_validate_refuses_set_on_a_suite(cli, capsys) -> None:
    suite = CORPUS / "suite_unknown_key.suite.toml"
    assert cli("validate", suite, "--set", "name=x") == 2
    assert "--set applies to experiment files" in capsys.readouterr().err


def test_sweep_takes_the_limit_flags(cli, capsys, tiny: Path, tmp_path: Path) -> None:
    from conftest import SWEEP_KEY, SWEEP_VALUES

    grid = f"{SWEEP_KEY}={','.join(map(str, SWEEP_VALUES))}"
    assert cli("sweep", tiny, "--grid", grid, "--max-events", "1000", "--out", tmp_path / "s1") == 2
    err = capsys.readouterr().err
    assert "the run needs an estimated" in err
    assert not (tmp_path / "s1" / "points").exists(), "refused before any point ran"
    assert cli("sweep", tiny, "--grid", grid, "--max-memory", "1KB", "--out", tmp_path / "s2") == 2
    assert "more than the 1.0 KB allowed" in capsys.readouterr().err
    # --force reaches every point's run, not only the up-front check.
    assert (
        cli("sweep", tiny, "--grid", grid, "--max-events", "1000", "--force", "--out", tmp_path / "s3") == 0
    )
    assert len(list((tmp_path / "s3" / "points").glob("*/flows.parquet"))) == len(SWEEP_VALUES)


def test_compare_takes_the_limit_flags(cli, capsys, tmp_path: Path) -> None:
    suite = tmp_path / "ok.suite.toml"
    suite.write_text(
        (CORPUS / "suite_unknown_key.suite.toml").read_text().replace("topolgy = ", "topology = ")
    )
    assert cli("compare", suite, "--scale", "ci", "--max-events", "1000", "--out", tmp_path / "c1") == 2
    err = capsys.readouterr().err
    assert "ls/w/none x tcp" in err and "the run needs an estimated" in err
    assert cli("compare", suite, "--max-events", "1000", "--force", "--out", tmp_path / "c2") == 0
    assert len(list((tmp_path / "c2" / "points").glob("*/flows.parquet"))) == 1


def test_sweep_limits_reach_each_point(monkeypatch, tiny: Path, tmp_path: Path) -> None:
    """The Python API: ``limits`` go to the up-front check and to every point's run."""
    import tailcut.runner
    from conftest import SWEEP_KEY, SWEEP_VALUES

    seen = []
    real = tailcut.runner.run

    def spy(*args, **kwargs):
        seen.append(kwargs.get("limits"))
        return real(*args, **kwargs)

    monkeypatch.setattr(tailcut.runner, "run", spy)
    limits = {"max_events": 10**9, "max_memory": 2 * 10**9}
    tailcut.sweep(tiny, {SWEEP_KEY: list(SWEEP_VALUES)}, out=tmp_path / "s", limits=limits)
    assert seen == [limits] * len(SWEEP_VALUES)


# Inputs only the Python side reads: files (before the core sees them), TOML nesting, command-line
# numbers. Each is refused with one error naming what is wrong: no traceback, no hang.


def _fifo(tmp_path: Path, name: str) -> Path:
    import os

    path = tmp_path / name
    os.mkfifo(path)
    return path


def _validate_subprocess(tmp_path: Path, *args: str) -> tuple[int, str]:
    """`tailcut validate` in its own process with a timeout: a case that blocks fails, not hangs."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tailcut", "validate", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    return done.returncode, done.stderr


def _fifo_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Experiments naming a FIFO in each file field (and the FIFO as the experiment file itself)."""
    base = (CORPUS.parent / "python" / "data" / "tiny.toml").read_text()
    cases = {"file": (_fifo(tmp_path, "experiment.toml"), "experiment.toml: is not a regular file")}
    edits = {
        "cdf": ('cdf = "websearch"', 'cdf = "{fifo}"', "workload[0].cdf"),
        "topology.path": (None, 'topology = {{ kind = "file", path = "{fifo}" }}', "topology.path"),
        "rates": (None, '[[faults]]\nkind = "random_lossy_links"\nfraction = 0.5\ntiers = [1]\n'
                  'rates = "{fifo}"\n', "faults[1].rates"),
        "pattern.path": (None, None, "workload[0].pattern.path"),
    }  # fmt: skip
    for name, (old, new, field) in edits.items():
        fifo = _fifo(tmp_path, f"{name}.fifo")
        if name == "pattern.path":
            text = _text(CORPUS / "flow_csv_size_zero.toml").replace(
                str(CORPUS / "flow_csv_size_zero.csv"), str(fifo)
            )
        elif name == "topology.path":
            text = re.sub(r"\[topology\][^\[]*", new.format(fifo=fifo) + "\n\n", base, count=1)
        elif old is None:
            text = base + "\n" + new.format(fifo=fifo)
        else:
            text = base.replace(old, new.format(fifo=fifo))
        experiment = tmp_path / f"{name}.toml"
        experiment.write_text(text)
        cases[name] = (experiment, field)
    return cases


def test_a_fifo_in_any_file_field_is_refused_without_blocking(tmp_path: Path) -> None:
    for name, (path, want) in _fifo_cases(tmp_path).items():
        code, err = _validate_subprocess(tmp_path, str(path))
        assert code == 2, (name, err)
        assert len(err.strip().splitlines()) == 1, (name, err)
        assert want in err and "regular file" in err, (name, err)


def test_a_non_utf8_file_is_a_config_error(tmp_path: Path, cli, capsys) -> None:
    bad = tmp_path / "latin1.toml"
    bad.write_bytes((CORPUS.parent / "python" / "data" / "tiny.toml").read_bytes() + b"# caf\xe9\n")
    with pytest.raises(tailcut.ConfigError, match="not UTF-8"):
        load_config(bad)
    with pytest.raises(tailcut.ConfigError, match=r"latin1\.toml: not UTF-8"):
        tailcut.run(bad)
    assert cli("validate", bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tailcut: error: {bad}: not UTF-8 text (byte "), err


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_toml_nested_too_deeply_is_a_config_error(tmp_path: Path, cli, capsys, depth: int) -> None:
    text = "x = " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(tailcut.ConfigError, match="nested too deeply"):
        load_config(text)
    deep = tmp_path / "deep.toml"
    deep.write_text(text)
    assert cli("validate", deep) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tailcut: error: {deep}: arrays or tables nested too deeply"]
    # A dict nested as deeply (built in code) fails in the JSON for the core, also as a ConfigError.
    nested: list = []
    for _ in range(depth):
        nested = [nested]
    with pytest.raises(tailcut.ConfigError, match="nested too deeply"):
        resolve({"name": "x", "deep": nested})


def test_deep_override_values_stay_strings_for_the_core_to_refuse() -> None:
    from tailcut.config import parse_value

    assert parse_value("[" * 5_000 + "]" * 5_000) == "[" * 5_000 + "]" * 5_000


def _integer_options() -> list[tuple[list[str], str]]:
    """Every option of the `tailcut` parser with its subcommand path, and the type it parses with."""
    import argparse

    from tailcut.cli import build_parser

    found = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
            elif action.option_strings and action.type is not None:
                found.append(([*path, action.option_strings[-1]], action.type))

    walk(build_parser(), [])
    return found


def test_no_option_parses_an_unchecked_number() -> None:
    """A bare ``int`` or ``float`` type lets -1, 2^64 or NaN through to the core (an OverflowError
    traceback, a silent serial sweep, a server that never stops): every numeric option has a range."""
    bare = [" ".join(path) for path, kind in _integer_options() if kind in (int, float)]
    assert not bare, f"options with an unchecked numeric type: {bare}"


BAD_ARGUMENTS = [
    pytest.param(["run", "{tiny}", "--seed", "-5"], "--seed", id="seed-negative"),
    pytest.param(["run", "{tiny}", "--seed", str(2**64)], "--seed", id="seed-2^64"),
    pytest.param(["trace", "{tiny}", "--flow", "-1"], "--flow", id="flow-negative"),
    pytest.param(
        ["trace", "{tiny}", "--flow", "0", "--max-trace-events", "-1"],
        "--max-trace-events",
        id="trace-events-negative",
    ),
    pytest.param(["validate", "{tiny}", "--max-events", "-1"], "--max-events", id="max-events-negative"),
    pytest.param(["sweep", "{tiny}", "--grid", "seed=1,2", "--jobs", "-1"], "--jobs", id="jobs-negative"),
    pytest.param(["sweep", "{tiny}", "--grid", "seed=1,2", "--seeds", "0"], "--seeds", id="seeds-zero"),
    pytest.param(["sweep", "{tiny}", "--grid", "seed=1,2", "--seeds", "100000"], "--seeds", id="seeds-1e5"),
    pytest.param(["compare", "{tiny}", "--jobs", "0"], "--jobs", id="compare-jobs-zero"),
    pytest.param(["compare", "{tiny}", "--seeds", "0"], "--seeds", id="compare-seeds-zero"),
    pytest.param(["reproduce", "fuso", "--jobs", "-1"], "--jobs", id="reproduce-jobs-negative"),
    pytest.param(["net", "serve", "--seconds", "nan"], "--seconds", id="serve-seconds-nan"),
    pytest.param(["net", "serve", "--seconds", "-1"], "--seconds", id="serve-seconds-negative"),
    pytest.param(["net", "serve", "--seconds", "inf"], "--seconds", id="serve-seconds-inf"),
    pytest.param(["net", "bench", "--seed", "-1"], "--seed", id="bench-seed-negative"),
    pytest.param(["net", "bench", "--rate", "nan"], "--rate", id="bench-rate-nan"),
]


@pytest.mark.parametrize(("args", "option"), BAD_ARGUMENTS)
def test_bad_numbers_on_the_command_line_are_refused_before_anything_runs(
    cli, capsys, tiny: Path, args: list[str], option: str
) -> None:
    with pytest.raises(SystemExit) as info:
        cli(*[a.format(tiny=tiny) for a in args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "Traceback" not in err, err
    assert not (tiny.parent / "results").exists(), "nothing was written"


def test_the_api_checks_seeds_flows_and_limits(tmp_path: Path) -> None:
    from conftest import TINY

    for seed in (-5, 2**64):
        with pytest.raises(tailcut.ConfigError, match=r"^seed: must be in 0\.\."):
            tailcut.run(TINY, seed=seed)
    with pytest.raises(tailcut.ConfigError, match=r"^limits.max_events: must be in 1\.\."):
        tailcut.run(TINY, limits={"max_events": -1})
    with pytest.raises(tailcut.ConfigError, match=r"limits\.max_event: unknown limit"):
        resolve(load_config(TINY), {"max_event": 10})
    with pytest.raises(ValueError, match="jobs: must be an integer >= 1, got -1"):
        tailcut.sweep(TINY, {"seed": [1, 2]}, jobs=-1, out=tmp_path / "s")
    assert not (tmp_path / "s").exists()


# Resources: what is too big for this process is refused before it is allocated, naming the field, and
# `validate` says what `run` would.

STAR_1E6 = """name = "star"
max_time = "1s"
[topology]
kind = "star"
hosts = 1000000
[[workload]]
name = "w"
pattern = { kind = "all_to_all" }
fixed = "10KB"
load = 0.1
flows = 20
[[schemes]]
name = "tcp"
transport = "tcp"
"""


def _limited(tmp_path: Path, address_space: int, *args: str) -> tuple[int, str]:
    """`tailcut ARGS` in its own process under an address-space limit (`ulimit -v`)."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    done = subprocess.run(
        [sys.executable, "-m", "tailcut", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        preexec_fn=limit,
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_estimate_honours_the_process_address_space_limit(tmp_path: Path, command: str) -> None:
    # 1e6 hosts need ~4 GB: within this machine's memory, not within a 3 GB `ulimit -v`.
    star = tmp_path / "star.toml"
    star.write_text(STAR_1E6)
    code, err = _limited(tmp_path, 3_000_000_000, command, str(star))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("tailcut: error: topology.hosts: the topology would need an estimated"), err
    assert "ulimit -v" in err and "Traceback" not in err and "memory allocation" not in err, err
    # Nothing written (the lock needs the parent of the default --out, results/, which stays empty).
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_huge_topology_file_is_refused_before_it_is_parsed(cli, capsys, tmp_path: Path) -> None:
    topo = tmp_path / "big.topo.toml"
    hosts = 20_000
    topo.write_text(
        '[[node]]\nname = "s"\nkind = "switch"\n'
        + "".join(f'[[node]]\nname = "h{i}"\nkind = "host"\n' for i in range(hosts))
        + "".join(f'[[link]]\na = "h{i}"\nb = "s"\nrate = "1Gbps"\ndelay = "1us"\n' for i in range(hosts))
    )
    exp = tmp_path / "exp.toml"
    exp.write_text(STAR_1E6.replace('kind = "star"\nhosts = 1000000', f'kind = "file"\npath = "{topo}"'))
    for command in ("validate", "run"):
        assert cli(command, exp, "--max-memory", "50MB") == 2
        err = capsys.readouterr().err
        assert "topology.path: the topology file would need an estimated" in err, err
    assert cli("validate", exp) == 0


def test_schemes_sweeps_and_cdfs_too_big_are_refused_before_work(
    cli, capsys, tiny: Path, tmp_path: Path
) -> None:
    text = tiny.read_text().split("[[schemes]]")[0]
    many = tmp_path / "schemes.toml"
    many.write_text(
        text + "".join(f'[[schemes]]\nname = "t{i}"\ntransport = "tcp"\n' for i in range(100_000))
    )
    assert cli("validate", many) == 2
    assert "schemes: 100000 schemes, more than the 1000" in capsys.readouterr().err
    # A million-point grid: refused from the product of its sizes, before any point is checked.
    values = ",".join(str(v) for v in range(1000))
    assert (
        cli("sweep", tiny, "--grid", f"seed={values}", "--grid", f"x={values}", "--out", tmp_path / "s") == 2
    )
    assert "grid: 1000000 points" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
    with pytest.raises(tailcut.ConfigError, match=r"^seeds: 100000 seeds"):
        tailcut.sweep(tiny, {"x": [1]}, seeds=100_000, out=tmp_path / "s2")
    # A CDF of more points than any real distribution needs.
    n = 100_001
    cdf = tmp_path / "fine.cdf"
    cdf.write_text("".join(f"{i} {i / n}\n" for i in range(1, n + 1)))
    fine = tmp_path / "fine.toml"
    fine.write_text(tiny.read_text().replace('cdf = "websearch"', f'cdf = "{cdf}"'))
    assert cli("validate", fine) == 2
    err = capsys.readouterr().err
    assert "workload[0].cdf" in err and "more than 100000 points" in err, err


def test_bench_against_a_dead_port_fails(cli, capsys) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["net", "bench", "--server", f"127.0.0.1:{port}", "--scheme", "tcp", "--count", "2"]
    assert cli(*args, "--concurrency", "2", "--warmup", "0") == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port} did not answer: all 2 calls timed out" in err, err


def test_bench_with_an_untrusted_certificate_names_the_handshake_error(cli, capsys, tmp_path) -> None:
    from tailcut import net

    # Another throwaway CA than the local server's: the handshake fails at once, with rustls's
    # reason, not as a call timeout seconds later.
    with net.Server(scheme="dcquic") as other:
        ca = tmp_path / "other-ca.pem"
        ca.write_text(other.ca_pem)
    args = ["net", "bench", "--scheme", "dcquic", "--ca", str(ca), "--count", "2", "--warmup", "1"]
    assert cli(*args) == 1
    err = capsys.readouterr().err
    assert "the connection ended" in err and "certificate" in err.lower(), err
