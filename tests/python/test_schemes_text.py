"""`tailcut schemes NAME`: filtering, wrapping to the terminal, plain text; every CLI option has help."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

import tailcut
from tailcut.schemes_text import format_schemes, plain, select

LONG = {
    "name": "s",
    "kind": "transport",
    "description": "a scheme whose description is long enough to need wrapping " * 3,
    "params": [{"name": "p", "default": 1, "doc": "see [`TcpConfig`] and `min_rto` (**RFC 6298**)"}],
}


def test_plain_removes_markdown_and_rustdoc_links() -> None:
    assert plain("see [`TcpConfig`] and `min_rto` (**RFC 6298**)") == "see TcpConfig and min_rto (RFC 6298)"
    assert plain("[the docs](docs/tcp.md), `x`") == "the docs, x"


def test_every_line_fits_the_width_and_no_word_is_cut() -> None:
    text = format_schemes([LONG], width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert text.count("wrapping") == 3 and "`" not in text and "**" not in text


def test_select_keeps_the_asked_order_and_names_unknown_schemes() -> None:
    schemes = [{"name": "a"}, {"name": "b"}]
    assert select(schemes, ["b", "a"]) == [{"name": "b"}, {"name": "a"}]
    assert select(schemes, []) == schemes
    with pytest.raises(ValueError, match=r"unknown scheme zz \(known: a, b\)"):
        select(schemes, ["zz"])


def test_schemes_name_shows_only_that_scheme(cli, capsys) -> None:
    from tailcut import _core

    assert cli("schemes", "fuso") == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith(" ")]
    assert rows == ["fuso"]
    fuso = next(s for s in json.loads(_core.schemes()) if s["name"] == "fuso")
    assert all(f" {p['name']} " in out for p in fuso["params"])
    assert cli("schemes", "nosuch") == 2
    assert "unknown scheme nosuch" in capsys.readouterr().err


def test_the_real_registry_prints_plain_and_within_80_columns(cli, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli("schemes", "--all") == 0
    out = capsys.readouterr().out
    assert "`" not in out
    # The parameter and default columns are as wide as their longest entry; only descriptions wrap.
    head = out.splitlines()[0]
    if head.index("DESCRIPTION") <= 80 - 30:
        assert all(len(line) <= 80 for line in out.splitlines())


def _actions(parser: argparse.ArgumentParser, where: str = "tailcut"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield f"{where} {choice.dest}", choice
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{where} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield f"{where} {'/'.join(action.option_strings) or action.dest}", action


def test_every_option_and_command_is_documented_without_markup() -> None:
    from tailcut.cli import build_parser

    actions = list(_actions(build_parser()))
    assert len(actions) > 40
    for where, action in actions:
        assert action.help, f"{where} has no help"
        assert "`" not in action.help and "**" not in action.help, f"{where}: {action.help}"


def test_descriptions_and_epilogs_have_no_markup() -> None:
    from tailcut.cli import build_parser

    parsers = [build_parser()]
    for parser in parsers:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
        for text in (parser.description or "", parser.epilog or ""):
            assert "`" not in text, f"{parser.prog}: {text}"


def test_schemes_default_is_a_short_list_and_all_gives_every_parameter(cli, capsys, monkeypatch) -> None:
    from tailcut import _core

    monkeypatch.setenv("COLUMNS", "100")
    listed = json.loads(_core.schemes())
    assert cli("schemes") == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(listed) + 2, "one line per scheme, then how to see the parameters"
    assert [line.split()[0] for line in out[: len(listed)]] == [s["name"] for s in listed]
    assert all(len(line) <= 100 for line in out)
    assert "--all" in out[-1]
    for flag in ("--all", "--long"):
        assert cli("schemes", flag) == 0
        full = capsys.readouterr().out
        assert full.splitlines()[0].split() == ["SCHEME", "PARAMETER", "DEFAULT", "DESCRIPTION"]
        assert all(f" {p['name']} " in full for s in listed for p in s["params"])


# --all writes ~90 KB, more than a pipe holds: the write itself meets the closed pipe.
@pytest.mark.parametrize("args", [["schemes"], ["schemes", "--all"]])
def test_a_closed_pipe_ends_the_output_quietly(args: list[str]) -> None:
    """`tailcut schemes | head -1`: exit 0, no traceback, nothing on stderr."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(tailcut.__file__).parent.parent)}
    cmd = [sys.executable, "-m", "tailcut", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""
