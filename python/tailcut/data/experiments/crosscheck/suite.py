"""The cross-check suite: every paper's headline in the simulator and on real hosts, one command.

Runs ``tailcut crosscheck`` on each file of this folder (resuming what an earlier run already has), then
writes the suite's table: per paper, its headline comparison (a scheme against its baseline on one
metric), the direction in each world as median over seeds with the per-seed count, and whether the
headline holds in both worlds, only in the simulator, only on the testbed, or in neither. Each file's
full report (every figure side by side, the 20% flags, the timing of every testbed run) stays in
OUT/NAME/crosscheck.md. As root, from the repository's root:

    python experiments/crosscheck/suite.py [--seeds 5] [--out results/crosscheck-suite] [--write-docs]

``--write-docs`` puts the table into docs/crosscheck.md and README.md between their suite markers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The repository's root: the experiments live in the package's data (python/tailcut/data/experiments).
ROOT = next((p for p in HERE.parents if (p / "README.md").exists() and (p / "docs").is_dir()), Path.cwd())
BEGIN, END = "<!-- crosscheck-suite:begin -->", "<!-- crosscheck-suite:end -->"

# (file, paper, scheme, baseline, size class, metric, what the paper claims)
HEADLINES: list[tuple[str, str, str, str, str, str, str]] = [
    ("fuso", "FUSO", "fuso", "tcp", "all", "p99_ms", "FUSO cuts TCP's tail with one lossy path of three"),
    ("fuso", "FUSO", "fuso", "mptcp", "all", "p99_ms", "and MPTCP's"),
    (
        "tracks",
        "T-RACKs",
        "tcp+tracks",
        "tcp",
        "all",
        "p99_ms",
        "the shim cuts NewReno's incast tail (CASE 1)",
    ),
    (
        "cloudburst",
        "CloudBurst",
        "cloudburst",
        "dctcp",
        "all",
        "p99_ms",
        "CloudBurst cuts DCTCP's tail, one lossy path of four",
    ),
    ("cp", "CP", "cp", "tcp", "all", "p99_ms", "CP cuts TCP's incast tail"),
    ("cp", "CP", "cp", "tailcut-tcp", "all", "p99_ms", "also against tailcut's own TCP on the same hosts"),
    (
        "dcquic",
        "DCQUIC",
        "dcquic",
        "tcp_tls13",
        "small",
        "p50_ms",
        "a fresh DCQUIC call beats a fresh TCP + TLS 1.3 one",
    ),
    (
        "dcquic_migration",
        "DCQUIC",
        "dcquic",
        "dctcp_reconnect",
        "all",
        "mean_ms",
        "migration beats reconnecting from the other NIC through a delay and a black hole (Sec. 4.3, Fig. 7: mean TCT 67.92% lower)",
    ),
    (
        "dcquic_migration",
        "DCQUIC",
        "dcquic",
        "dctcp",
        "all",
        "p99_ms",
        "and DCTCP, which waits for the path",
    ),
]
METRIC_NAMES = {"mean_ms": "FCT mean", "p50_ms": "FCT p50", "p99_ms": "FCT p99", "p999_ms": "FCT p99.9"}


def run_file(name: str, seeds: int, out: Path) -> int:
    """``tailcut crosscheck`` on one file of the suite; its exit code (3: some testbed timing not kept)."""
    cmd = [
        sys.executable, "-m", "tailcut", "crosscheck", str(HERE / f"{name}.toml"),
        "--seeds", str(seeds), "--jobs", "2", "--out", str(out / name), "--allow-invalid-timing",
    ]  # fmt: skip
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=False).returncode


def direction_cell(world: dict[str, Any]) -> str:
    per_seed = world.get("per_seed", {})
    counts: dict[str, int] = {}
    for d in per_seed.values():
        counts[d] = counts.get(d, 0) + 1
    spread = ", ".join(f"{d} {n}" for d, n in sorted(counts.items()))
    flips = " **FLIPS**" if world.get("flips") else ""
    return f"{world.get('direction', '-')} ({spread}){flips}"


def holds(sim: str, testbed: str) -> str:
    return {
        (True, True): "both",
        (True, False): "simulator only",
        (False, True): "testbed only",
        (False, False): "neither",
    }[(sim == "better", testbed == "better")]


def table(out: Path) -> str:
    lines = [
        "| paper | headline | metric | simulator | testbed | holds in | figures >20% | testbed runs with timing kept |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, paper, scheme, baseline, cls, metric, claim in HEADLINES:
        path = out / name / "crosscheck.json"
        if not path.exists():
            lines.append(f"| {paper} | {claim} | {METRIC_NAMES[metric]} | not run | not run | - | - | - |")
            continue
        doc = json.loads(path.read_text())
        comp = next(
            (
                c
                for c in doc["comparisons"]
                if c["scheme"] == scheme and c["baseline"] == baseline and c["size_class"] == cls
            ),
            None,
        )
        flagged = sum(
            1
            for r in doc["rows"]
            for m in r.get("metrics", {}).values()
            if isinstance(m, dict) and m.get("flagged")
        )
        kept = sum(1 for t in doc["timing"] if t.get("valid"))
        if comp is None:
            lines.append(
                f"| {paper} | {claim} | {METRIC_NAMES[metric]} | no such comparison | | - | {flagged} | |"
            )
            continue
        m = comp["metrics"][metric]
        lines.append(
            f"| {paper} | {scheme} vs {baseline} ({cls}): {claim} | {METRIC_NAMES[metric]} | "
            f"{direction_cell(m['sim'])} | {direction_cell(m['testbed'])} | "
            f"{holds(m['sim']['direction'], m['testbed']['direction'])} | {flagged} | "
            f"{kept} of {len(doc['timing'])} |"
        )
    seeds = "over the seeds each file's report lists"
    return (
        f"Generated by `python experiments/crosscheck/suite.py` {seeds}; each row's full report is "
        "`OUT/<file>/crosscheck.md`. Direction: the scheme's median against the baseline's (better / worse "
        "by more than 5%, else tie), per seed in brackets.\n\n" + "\n".join(lines) + "\n"
    )


def write_between_markers(path: Path, text: str) -> None:
    page = path.read_text()
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("results/crosscheck-suite"))
    parser.add_argument("--report-only", action="store_true", help="run nothing; tabulate what OUT has")
    parser.add_argument(
        "--write-docs", action="store_true", help="write the table into docs/crosscheck.md and README.md"
    )
    args = parser.parse_args(argv)
    failed = []
    if not args.report_only:
        for name in dict.fromkeys(h[0] for h in HEADLINES):
            if run_file(name, args.seeds, args.out) not in (0, 3):
                failed.append(name)
    text = table(args.out)
    print(text)
    if args.write_docs:
        for page in (ROOT / "docs" / "crosscheck.md", ROOT / "README.md"):
            write_between_markers(page, text)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
