"""``tailcut testbed run FILE``: an experiment file on real Linux hosts through the emulated fabric.

The work is done by the Rust testbed (``crates/tailcut-testbed``, see ``docs/testbed.md``), which the
extension module carries (``tailcut.native``; a cargo-built binary through ``$TAILCUT_TESTBED_BIN``):
one network namespace per host, TUN NICs, the simulator's ports, routing and faults in real time, and a
workload agent per host. This module runs it into a
temporary folder, and turns it into a result folder with a simulator run's files: ``flows.parquet``
and ``ports.parquet`` with the simulator's column names (columns a kernel cannot report, such as
per-flow timeouts, are left empty), ``summary.json`` computed from the flows exactly as for a
simulator run, ``config.toml`` and ``report.html``. What only a real run has (the namespaces' kernel
counters, the fabric's lateness and TUN drops) is in ``testbed.json``, and ``tailcut report`` shows it
beside the figures, so a simulator folder and a testbed folder of one experiment file compare side by
side. The folder is replaced atomically, like a run's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailcut import _core
from tailcut.outdir import OutputError, atomic_dir, claim, write_marker
from tailcut.paths import input_file
from tailcut.results import FLOW_COLUMNS, PORT_COLUMNS, columns_to_frame

if TYPE_CHECKING:
    import pandas as pd

BINARY = "tailcut-testbed"
# Set to a cargo-built binary's path to use that build instead of the package's.
BINARY_ENV = "TAILCUT_TESTBED_BIN"
# What only a real run has, per scheme, as the binary writes it.
QUALITY_FILE = "testbed.json"
# Exit code of the binary, and of ``tailcut testbed run``, when a scheme's run did not keep its timing
# (fabric lateness or late flow starts past the ``[testbed]`` thresholds; docs/testbed.md, "Timing
# verdict") and ``--allow-invalid-timing`` was not given. The result folder is written all the same.
# The binary's own constant (``tailcut_testbed::timing::EXIT_INVALID_TIMING``).
EXIT_INVALID_TIMING: int = _core.TESTBED_EXIT_INVALID_TIMING


class InvalidTimingError(Exception):
    """A testbed run whose timing was not kept; its folder ``out`` is complete and says so."""

    def __init__(self, out: Path, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.out = out
        self.reasons = reasons


def find_binary() -> list[str]:
    """The command that runs ``tailcut-testbed``: ``$TAILCUT_TESTBED_BIN`` (a cargo-built binary, for
    work on the testbed itself), else this package's own (``python -m tailcut.native testbed``: the same
    code, built into the extension, so that it is always there and of this package's version)."""
    env = os.environ.get(BINARY_ENV)
    if env:
        if not Path(env).is_file():
            raise OutputError(f"{BINARY_ENV}={env}: no such file")
        return [env]
    from tailcut.native import self_command

    return self_command()


def convert_tables(folder: Path, stamp: dict[str, Any] | None = None) -> None:
    """Replace the binary's ``flows.json`` / ``ports.json`` with Parquet files (``stamp``, the
    provenance, in their metadata)."""
    from tailcut.provenance import write_parquet

    for name, expected in (("flows", FLOW_COLUMNS), ("ports", PORT_COLUMNS)):
        source = folder / f"{name}.json"
        columns = json.loads(source.read_text())
        write_parquet(columns_to_frame(columns, expected), folder / f"{name}.parquet", stamp or {})
        source.unlink()


def run_to_dir(
    file: Path,
    out: Path,
    overwrite: bool = False,
    binary: list[str] | None = None,
    allow_invalid_timing: bool = False,
) -> Path:
    """Run ``file`` on the testbed and write the result folder ``out``; returns ``out``.

    A run whose timing was not kept is written completely (its ``testbed.json`` and report say so) and
    then raises :class:`InvalidTimingError`, unless ``allow_invalid_timing``."""
    claim(out, "run", overwrite=overwrite)
    exe = binary or find_binary()
    with atomic_dir(out) as tmp:
        proc = subprocess.run(
            [*exe, "run", str(file), "--out", str(tmp), "--overwrite", "--allow-invalid-timing"],
            capture_output=True,
            text=True,
            check=False,
        )
        # Always allowed in the binary: the verdict is read back from testbed.json below, so that the
        # folder is complete before this front decides what the run is worth.
        if proc.returncode != 0:
            raise OutputError(proc.stderr.strip().removeprefix(f"{BINARY}: ") or f"{BINARY} failed")
        from tailcut.config import load_experiment
        from tailcut.provenance import provenance

        stamp = provenance(load_experiment(file))
        convert_tables(tmp, stamp)
        _write_result_files(file, tmp, stamp)
        write_marker(tmp, "run", source="testbed", **stamp)
    reasons = invalid_timing(out)
    if reasons and not allow_invalid_timing:
        raise InvalidTimingError(out, reasons)
    return out


def timing_verdicts(folder: Path) -> list[dict]:
    """Per scheme of a testbed folder, ``{"scheme", "valid", "reasons", ...}`` as the binary judged
    its timing; empty for a simulator folder."""
    path = folder / QUALITY_FILE
    if not path.exists():
        return []
    return [{"scheme": s["scheme"], **s["timing"]} for s in json.loads(path.read_text()) if "timing" in s]


def invalid_timing(folder: Path) -> list[str]:
    """Why a testbed folder's timing was not kept, one line per scheme and bound; empty when kept."""
    return [f"{v['scheme']}: {r}" for v in timing_verdicts(folder) if not v["valid"] for r in v["reasons"]]


def timing_banner_html(folder: Path) -> str:
    """The verdict on a testbed folder's timing, for the top of its report ('' for a simulator folder)."""
    import html

    verdicts = timing_verdicts(folder)
    if not verdicts:
        return ""
    reasons = invalid_timing(folder)
    if not reasons:
        return (
            '<p style="border:2px solid #2a7;padding:.5em"><b>Timing kept.</b> Every scheme\'s fabric '
            "lateness and flow starts were within the [testbed] thresholds "
            '(docs/testbed.md, "Timing verdict").</p>\n'
        )
    items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
    return (
        '<div style="border:3px solid #c22;padding:.5em;background:#fee"><b>TIMING INVALID: this run did not '
        "keep its schedule, and its FCTs measure this machine as much as the network.</b><ul>"
        f"{items}</ul>Rerun on a quieter machine or at lower rates "
        '(docs/testbed.md, "Timing verdict").</div>\n'
    )


def _write_result_files(file: Path, folder: Path, stamp: dict[str, Any] | None = None) -> None:
    """``summary.json``, ``config.toml`` and ``report.html`` as a simulator run writes them, and the
    provenance ``stamp`` in every scheme's entry of ``testbed.json``."""
    from tailcut.config import load_experiment, to_toml
    from tailcut.report import run_report_html
    from tailcut.results import Result, summary_json

    result = Result.load(folder)
    result.config = load_experiment(file)
    (folder / "summary.json").write_text(summary_json(result.summary, stamp))
    quality = folder / QUALITY_FILE
    if quality.exists():
        entries = json.loads(quality.read_text())
        if isinstance(entries, list):
            entries = [{**strict_quality(e), **(stamp or {})} if isinstance(e, dict) else e for e in entries]
            quality.write_text(json.dumps(entries, indent=2) + "\n")
    (folder / "config.toml").write_text(to_toml(result.config))
    page = run_report_html({folder_label(file): result})
    # The verdict goes first, above every figure and table, so that nobody reads the FCTs without it.
    head, sep, rest = page.partition("</h1>\n")
    (folder / "report.html").write_text(head + sep + timing_banner_html(folder) + rest if sep else page)


def strict_quality(entry: dict[str, Any]) -> dict[str, Any]:
    """One scheme's ``testbed.json`` entry without strings for numbers: the binary writes a percentile
    among the unfinished flows as ``"inf"``; here it is ``null``, as in ``summary.json``, and
    ``unfinished`` (flows - completed) counts those flows."""
    out = dict(entry)
    for key in ("fct_p50_ns", "fct_p99_ns"):
        if isinstance(out.get(key), str):
            out[key] = None
    if isinstance(out.get("flows"), int) and isinstance(out.get("completed"), int):
        out.setdefault("unfinished", out["flows"] - out["completed"])
    return out


def folder_label(file: Path) -> str:
    return f"{file.stem} (testbed)"


def quality_table(folder: Path) -> pd.DataFrame | None:
    """Per scheme, how far a testbed run can be trusted and what its kernels counted; ``None`` for a
    simulator folder. Lateness is how late the fabric sent packets against the port model's schedule
    (over every port); TUN drops are packets a host's TUN refused, which a real NIC would have held;
    both should be near zero before the run's FCTs are read (docs/testbed.md)."""
    import pandas as pd

    from tailcut import display

    path = folder / QUALITY_FILE
    if not path.exists():
        return None
    rows = []
    for s in json.loads(path.read_text()):
        lateness = s["fabric"]["lateness"]
        timing = s.get("timing")
        row = {
            "scheme": s["scheme"],
            "timing": "n/a" if timing is None else "kept" if timing["valid"] else "INVALID",
            "lateness p50": display.time_ns(lateness["p50_ns"]),
            "lateness p99": display.time_ns(lateness["p99_ns"]),
            "lateness max": display.time_ns(lateness["max_ns"]),
            "TUN drops": s["tun_tx_drops"],
            "fabric drops": s["fabric_drops"],
        }
        if s.get("congestion_control"):
            row["congestion control"] = s["congestion_control"]
        # "TcpExt.TCPTimeouts" reads as "TCPTimeouts": the names are unique without their group.
        row.update({name.rsplit(".", 1)[-1]: value for name, value in s["kernel"].items()})
        # What the scheme's own pieces counted: the BPF DCTCP's windows and reductions, the shims'
        # recoveries and spoofed ACKs.
        row.update({f"dctcp {k}": v for k, v in (s.get("dctcp") or {}).items()})
        row.update({f"shim {k}": v for k, v in (s["fabric"].get("shims") or {}).items()})
        rows.append(row)
    return pd.DataFrame(rows)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``tailcut testbed run FILE --out DIR``."""
    p = sub.add_parser("testbed", help="run an experiment on real Linux hosts through the emulated fabric")
    tsub = p.add_subparsers(dest="testbed_command", required=True)
    r = tsub.add_parser("run", help="run FILE's workload with the kernel's TCP/MPTCP (needs root)")
    r.add_argument("file", type=input_file, help="experiment file (TOML) with an optional [testbed] section")
    r.add_argument("--out", type=Path, help="result folder (default results/testbed-<file stem>)")
    r.add_argument("--overwrite", action="store_true", help="replace an earlier result in --out")
    r.add_argument(
        "--allow-invalid-timing",
        action="store_true",
        help=f"exit 0 even when the run did not keep its timing (otherwise exit {EXIT_INVALID_TIMING}; "
        "the folder is written and marked either way)",
    )


def add_doctor_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``tailcut doctor``."""
    sub.add_parser(
        "doctor",
        help="check what the real-network tools need here (root, namespaces, TUN, BPF, NFQUEUE, clang) "
        "and how to fix each missing piece",
    )


def cmd_doctor(_args: argparse.Namespace) -> int:
    """The testbed's own checks (the ones its runs make), printed one per line; exit 1 when the testbed
    cannot run here."""
    return subprocess.run([*find_binary(), "doctor"], check=False).returncode


def cmd(args: argparse.Namespace) -> int:
    out = args.out or Path("results") / f"testbed-{args.file.stem}"
    try:
        run_to_dir(args.file, out, overwrite=args.overwrite, allow_invalid_timing=args.allow_invalid_timing)
    except InvalidTimingError as exc:
        print(out)
        _warn_timing(exc.reasons, accepted=False)
        return EXIT_INVALID_TIMING
    print(out)
    reasons = invalid_timing(out)
    if reasons:
        _warn_timing(reasons, accepted=True)
    return 0


def _warn_timing(reasons: list[str], accepted: bool) -> None:
    import sys

    for r in reasons:
        print(f"WARNING: TIMING INVALID: {r}", file=sys.stderr)
    print(
        "WARNING: the run did not keep its timing (testbed.json: timing; top of report.html); "
        + (
            "accepted with --allow-invalid-timing"
            if accepted
            else f"exit {EXIT_INVALID_TIMING}: rerun on a quieter machine or at lower rates, or pass "
            "--allow-invalid-timing to accept it"
        ),
        file=sys.stderr,
    )
