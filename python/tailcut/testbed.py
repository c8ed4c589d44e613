"""``tailcut testbed run FILE``: an experiment file on real Linux hosts through the emulated fabric.

The work is done by the Rust binary ``tailcut-testbed`` (``crates/tailcut-testbed``, see
``docs/testbed.md``): one network namespace per host, TUN NICs, the simulator's ports, routing and
faults in real time, and a workload agent per host. This module finds that binary, runs it into a
temporary folder, and turns its column-oriented tables into ``flows.parquet`` and ``ports.parquet``
with the simulator's column names (columns a kernel cannot report, such as per-flow timeouts, are
left empty; kernel counters are in ``summary.json``). The folder is replaced atomically, like a run's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

from tailcut.outdir import OutputError, atomic_dir, claim, write_marker
from tailcut.results import FLOW_COLUMNS, PORT_COLUMNS, columns_to_frame

BINARY = "tailcut-testbed"
# Set to the binary's path to use a particular build.
BINARY_ENV = "TAILCUT_TESTBED_BIN"


def find_binary() -> Path:
    """The ``tailcut-testbed`` binary: ``$TAILCUT_TESTBED_BIN``, then ``PATH``, then the current checkout's
    ``target/release`` (where ``cargo build --release -p tailcut-testbed`` puts it)."""
    env = os.environ.get(BINARY_ENV)
    if env:
        if not Path(env).is_file():
            raise OutputError(f"{BINARY_ENV}={env}: no such file")
        return Path(env)
    found = shutil.which(BINARY)
    if found:
        return Path(found)
    local = Path.cwd() / "target" / "release" / BINARY
    if local.is_file():
        return local
    raise OutputError(
        f"{BINARY} not found (looked at ${BINARY_ENV}, PATH and {local}); build it with "
        "`cargo build --release -p tailcut-testbed`"
    )


def convert_tables(folder: Path) -> None:
    """Replace the binary's ``flows.json`` / ``ports.json`` with Parquet files."""
    for name, expected in (("flows", FLOW_COLUMNS), ("ports", PORT_COLUMNS)):
        source = folder / f"{name}.json"
        columns = json.loads(source.read_text())
        columns_to_frame(columns, expected).to_parquet(folder / f"{name}.parquet", index=False)
        source.unlink()


def run_to_dir(file: Path, out: Path, overwrite: bool = False, binary: Path | None = None) -> Path:
    """Run ``file`` on the testbed and write the result folder ``out``; returns ``out``."""
    claim(out, "run", overwrite=overwrite)
    exe = binary or find_binary()
    with atomic_dir(out) as tmp:
        proc = subprocess.run(
            [str(exe), "run", str(file), "--out", str(tmp), "--overwrite"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise OutputError(proc.stderr.strip().removeprefix(f"{BINARY}: ") or f"{BINARY} failed")
        convert_tables(tmp)
        write_marker(tmp, "run", source="testbed")
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``tailcut testbed run FILE --out DIR``."""
    p = sub.add_parser("testbed", help="run an experiment on real Linux hosts through the emulated fabric")
    tsub = p.add_subparsers(dest="testbed_command", required=True)
    r = tsub.add_parser("run", help="run FILE's workload with the kernel's TCP/MPTCP (needs root)")
    r.add_argument("file", type=Path, help="experiment file (TOML) with an optional [testbed] section")
    r.add_argument("--out", type=Path, help="result folder (default results/testbed-<file stem>)")
    r.add_argument("--overwrite", action="store_true", help="replace an earlier result in --out")


def cmd(args: argparse.Namespace) -> int:
    out = args.out or Path("results") / f"testbed-{args.file.stem}"
    run_to_dir(args.file, out, overwrite=args.overwrite)
    print(out)
    return 0
