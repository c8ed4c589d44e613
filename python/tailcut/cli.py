"""The ``tailcut`` command: run, sweep, compare, validate, schemes, report, reproduce, trace, crosscheck.

Exit codes: 0 success, 1 a run or sweep point failed, 2 bad input (config, TOML syntax, arguments),
130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tailcut import _core, interrupt, netcmd, testbed
from tailcut.config import (
    MAX_SWEEP_POINTS,
    apply_overrides,
    experiment_name,
    int_arg,
    load_config,
    load_experiment,
    parse_bytes,
    resolve,
)
from tailcut.extras import MissingExtraError
from tailcut.outdir import OutputError
from tailcut.paths import input_file

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# Seeds, flow ids and counts are u64 in the core: range-checked here, never an OverflowError traceback.
SEED = int_arg(0)
AT_LEAST_ONE = int_arg(1)


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=input_file, help="experiment file (TOML)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a config value; list items by index: schemes.0.name=dctcp (repeatable)",
    )


def _add_limit_args(p: argparse.ArgumentParser, each: str = "") -> None:
    per = f" (applies to {each})" if each else ""
    p.add_argument(
        "--max-memory",
        type=parse_bytes,
        metavar="SIZE",
        help=f"refuse a run estimated to need more memory, e.g. 8GB (default: the available memory){per}",
    )
    p.add_argument(
        "--max-events",
        type=AT_LEAST_ONE,
        metavar="N",
        help=f"refuse a run estimated to need more simulator events, all schemes (default 2e10){per}",
    )
    p.add_argument(
        "--force", action="store_true", help="skip the resource estimate and run whatever its size"
    )


def _limits(args: argparse.Namespace) -> dict[str, Any] | None:
    limits = {"max_memory": args.max_memory, "max_events": args.max_events, "force": args.force}
    return limits if args.force or args.max_memory or args.max_events else None


OVERRIDES_HELP = """\
overrides (--set, and --grid values):
  --set topology.leaves=4          nested tables by dotted path
  --set schemes.0.name=dctcp       a list item by index ([[schemes]] entries); index = length appends
  values are TOML when they parse as TOML (4, 0.5, true, "x", [1, 2]), else plain strings (10Gbps, 5ms)
"""


EXECUTOR_HELP = "where the runs go: local processes (--jobs of them) or a Ray cluster (default local)"
RAY_ADDRESS_HELP = (
    "HOST:PORT of a running Ray cluster's head (ray start --head --port PORT), run from one of its nodes; "
    "the points' files are sent to the workers (docs/python.md). Default: start a local Ray"
)


def _add_out_args(p: argparse.ArgumentParser, default: str, resumes: bool) -> None:
    p.add_argument(
        "--out",
        type=Path,
        help=f"output folder (default: {default}); must be new, empty, or tailcut's own: files tailcut "
        "did not write are never removed",
    )
    again = "start afresh instead of resuming a" if resumes else "replace a"
    p.add_argument("--overwrite", action="store_true", help=f"{again} result already in --out")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(
        prog="tailcut",
        description=__doc__.splitlines()[0].replace("``", ""),
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tailcut {_core.version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "run",
        help="run one experiment",
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_config_args(p)
    _add_out_args(p, "results/<experiment name>", resumes=False)
    p.add_argument("--seed", type=SEED, help="replace the config's seed")
    p.add_argument(
        "--jobs",
        type=AT_LEAST_ONE,
        default=1,
        help="run the schemes in this many processes at once; the results are the same (default 1)",
    )
    _add_limit_args(p)

    p = sub.add_parser(
        "sweep",
        help="run a grid of experiments in parallel",
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_config_args(p)
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY.PATH=V1,V2",
        help="a grid axis (repeatable; the first one is the x axis of the report)",
    )
    p.add_argument(
        "--seeds",
        type=int_arg(1, MAX_SWEEP_POINTS),
        default=1,
        help=f"seeds per grid point (default 1, at most {MAX_SWEEP_POINTS})",
    )
    p.add_argument(
        "--jobs", type=AT_LEAST_ONE, default=1, help="parallel points on the local executor (default 1)"
    )
    p.add_argument("--executor", choices=["local", "ray"], default="local", help=EXECUTOR_HELP)
    p.add_argument("--ray-address", help=RAY_ADDRESS_HELP)
    _add_out_args(p, "results/<experiment name>-sweep", resumes=True)
    _add_limit_args(p, "every point")

    p = sub.add_parser(
        "compare",
        help="run every scheme of a suite on every scenario and write the comparison page",
        description="Cross a suite's topologies, workloads, failures and schemes (experiments/compare/), "
        "run every cell through the sweep executors (resumable: cells already in OUT are skipped) and "
        "write compare.parquet, compare.md and report.html.",
    )
    p.add_argument("suite", type=input_file, help="suite file (TOML), e.g. experiments/compare/suite.toml")
    p.add_argument(
        "--scale",
        choices=["ci", "small", "full"],
        default="small",
        help="which of the suite's [scales] to run: ci (seconds per cell), small or full (default small)",
    )
    p.add_argument(
        "--jobs", type=AT_LEAST_ONE, default=1, help="parallel cells on the local executor (default 1)"
    )
    p.add_argument("--executor", choices=["local", "ray"], default="local", help=EXECUTOR_HELP)
    p.add_argument("--ray-address", help=RAY_ADDRESS_HELP)
    p.add_argument("--schemes", help="only these schemes (comma-separated names from the suite)")
    p.add_argument("--scenarios", help="only scenarios matching this glob over topology/workload/failure")
    p.add_argument(
        "--seeds",
        type=AT_LEAST_ONE,
        default=1,
        metavar="N",
        help="run every cell with N seeds, the suite's seed upward (default 1); tables give the median "
        "[min-max] over seeds and compare.md flags rankings and winners that flip between seeds",
    )
    _add_out_args(p, "results/<suite name>-<scale>", resumes=True)
    _add_limit_args(p, "every cell")

    p = sub.add_parser(
        "validate",
        help="check an experiment file, compare suite or topology file without running it",
        description="Check a file as the command that reads it would, before anything runs: an experiment "
        "(as tailcut run), a compare suite (as tailcut compare: the suite and every cell's experiment) "
        'or a topology file ([[node]] and [[link]] tables, as topology = { kind = "file" } loads '
        "it). The kind is told from the file's top-level keys.",
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_config_args(p)
    _add_limit_args(p)
    p.add_argument(
        "--scale",
        choices=["ci", "small", "full"],
        help="compare suites only: check this scale's cells (default: every scale the suite defines)",
    )

    p = sub.add_parser(
        "schemes",
        help="list the schemes and host shims; with names or --all, their parameters and defaults",
        description="Without arguments, one line per scheme and host shim. With NAME..., or --all for "
        "every one, each scheme's parameters with their defaults and documentation.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="show these schemes in full")
    p.add_argument(
        "--all",
        "--long",
        dest="all",
        action="store_true",
        help="show every scheme in full (parameters, defaults, documentation)",
    )

    p = sub.add_parser(
        "reproduce",
        help="re-run a paper's experiments over seeds and write its tables (median [min-max])",
        description="Run a paper's checked-in experiment files (from the repository's experiments/) with N "
        "seeds each, resumably, and write OUT/PAPER.md and OUT/PAPER.json: every figure as median "
        "[min-max] over the seeds, conclusions that flip between seeds flagged.",
    )
    p.add_argument(
        "paper",
        nargs="?",
        help="fuso, tracks, cloudburst, cp, dcquic, baselines, or all (--list: default all)",
    )
    p.add_argument(
        "experiments", nargs="*", help="only these entries (labels, file stems or globs; see --list)"
    )
    p.add_argument("--seeds", type=AT_LEAST_ONE, default=5, help="seeds per experiment file (default 5)")
    p.add_argument(
        "--jobs", type=AT_LEAST_ONE, default=1, help="parallel runs on the local executor (default 1)"
    )
    p.add_argument("--executor", choices=["local", "ray"], default="local", help=EXECUTOR_HELP)
    p.add_argument("--ray-address", help=RAY_ADDRESS_HELP)
    p.add_argument("--out", type=Path, default=Path("results/reproduce"), help="default: results/reproduce")
    p.add_argument("--list", action="store_true", help="list the entries and seconds per seed, run nothing")

    p = sub.add_parser(
        "trace",
        help="re-run one scheme and record every event of chosen flows (table, plot, pcap)",
        description="Re-run one scheme of an experiment deterministically (same seed and flows) and record "
        "every event of the chosen flows: packets sent, queued/marked/trimmed/dropped at each port and "
        "why, received, timers, congestion window and RTO. Writes events.parquet/.csv, a time-sequence "
        "plot per flow, and trace.pcap for Wireshark/tshark. See docs/trace.md.",
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_config_args(p)
    pick = p.add_mutually_exclusive_group(required=True)
    pick.add_argument(
        "--flow", type=SEED, action="append", metavar="ID", help="a flow id to trace (repeatable)"
    )
    pick.add_argument(
        "--where",
        metavar="QUERY",
        help='a pandas query on the flow table picking the flows, e.g. "timeouts > 0"',
    )
    p.add_argument("--limit", type=SEED, default=5, help="at most this many flows from --where (default 5)")
    p.add_argument("--scheme", help="the scheme to trace (needed when the experiment has several)")
    p.add_argument("--seed", type=SEED, help="replace the config's seed")
    p.add_argument(
        "--max-trace-events",
        type=SEED,  # 0 reaches the core, which names the field (max_events: must be at least 1)
        default=500_000,
        metavar="N",
        help="stop recording after N events (default 500000, about 100 MB)",
    )
    _add_out_args(p, "results/<experiment name>-trace", resumes=False)
    _add_limit_args(p)

    testbed.add_parser(sub)
    testbed.add_doctor_parser(sub)

    p = sub.add_parser(
        "crosscheck",
        help="run an experiment over seeds in the simulator and on the testbed and report where they differ",
        description="Run FILE with N seeds in the simulator (--jobs seeds at once) and then on the testbed "
        "(one at a time; needs root), into OUT/sim/seed-K and OUT/testbed/seed-K, and write "
        "OUT/crosscheck.md and OUT/crosscheck.json: per scheme and size class, FCT p50/p99/p99.9, timeouts "
        "per 100 flows and completion in both worlds (median [min-max] over seeds), their ratio, a flag "
        "where they differ by more than 20%, and whether each scheme beats its baseline in both worlds. "
        "A rerun with the same experiment resumes. See docs/crosscheck.md.",
        epilog=OVERRIDES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", type=input_file, help="experiment file (TOML)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a config value in both worlds (repeatable)",
    )
    p.add_argument(
        "--seeds",
        type=int_arg(1, MAX_SWEEP_POINTS),
        default=5,
        metavar="N",
        help="seeds per world, the file's seed upward (default 5)",
    )
    p.add_argument(
        "--jobs",
        type=AT_LEAST_ONE,
        default=1,
        help="simulator seeds run at once (default 1; the testbed side always runs one at a time)",
    )
    _add_out_args(p, "results/crosscheck-<experiment name>", resumes=True)
    p.add_argument(
        "--allow-invalid-timing",
        action="store_true",
        help=f"exit 0 even when a testbed run did not keep its timing (otherwise exit "
        f"{testbed.EXIT_INVALID_TIMING}; the runs are kept and marked in the report either way)",
    )
    p.add_argument(
        "--from-dirs",
        nargs=2,
        type=Path,
        metavar=("SIMDIR", "TBDIR"),
        help="run nothing: the report of existing folders (each a result folder or a folder of seed-K "
        "ones, e.g. an earlier cross-check's sim/ and testbed/), written to --out (required)",
    )
    netcmd.add_parser(sub)

    p = sub.add_parser("report", help="redraw the report of one or several result folders side by side")
    p.add_argument("dirs", nargs="+", type=Path, help="result folders of tailcut run, sweep or compare")
    p.add_argument(
        "--out",
        type=Path,
        help="output HTML file (default: report.html in the only folder, or ./report.html for several)",
    )
    return parser


def _error(message: str) -> None:
    print(f"tailcut: error: {message}", file=sys.stderr)


def _load(args: argparse.Namespace) -> dict[str, Any]:
    raw = load_experiment(args.file)
    # A result folder's config.toml written by another tailcut version: say what may have changed.
    from tailcut.provenance import folder_config_warnings

    for line in folder_config_warnings(args.file, raw):
        print(line, file=sys.stderr)
    return apply_overrides(raw, args.overrides)


# Top-level keys that tell a compare suite and a topology file from an experiment.
_SUITE_MARKERS = {"topologies", "workloads", "failures", "scales"}
_TOPOLOGY_FILE_KEYS = {"node", "link"}


def file_kind(raw: dict[str, Any]) -> str:
    """``suite``, ``topology`` or ``experiment``, from a parsed file's top-level keys."""
    if _SUITE_MARKERS & set(raw):
        return "suite"
    if raw and set(raw) <= _TOPOLOGY_FILE_KEYS:
        return "topology"
    return "experiment"


def _validate_suite(args: argparse.Namespace) -> int:
    from tailcut.compare import check_suite

    counts = check_suite(args.file, args.scale, _limits(args))
    print(f"OK: {args.file} (compare suite)")
    for scale, per in counts.items():
        print(f"  {scale}: {sum(per.values())} cells, " + ", ".join(f"{n} {st}" for st, n in per.items()))
    return 0


def _validate_topology(args: argparse.Namespace, raw: dict[str, Any]) -> int:
    """A topology file is checked by the core exactly as an experiment naming it loads it (connectivity
    included), with a stand-in workload that the topology check precedes."""
    path = args.file.resolve()
    workload = {"name": "probe", "pattern": {"kind": "all_to_all"}, "fixed": "1KB", "flows": 1, "load": 0.01}
    probe = {
        "name": args.file.stem or "topology",
        "max_time": "1s",
        "topology": {"kind": "file", "path": str(path)},
        "workload": [workload],
        "schemes": [{"name": "probe", "transport": "tcp"}],
    }
    try:
        resolve(probe, _limits(args))
    except _core.ConfigError as exc:
        # An error outside `topology` comes from the stand-in workload after the topology loaded (e.g. a
        # single host), so the file itself is fine.
        if str(getattr(exc, "path", "topology")).startswith("topology"):
            # "topology.path: topology file '/abs/x.topo.toml': node[0] ..." -> "x.topo.toml: node[0] ..."
            reason = str(getattr(exc, "reason", exc)).split(f"topology file '{path}': ", 1)[-1]
            raise _core.ConfigError(f"{args.file}: {reason}") from None
    nodes = raw.get("node", [])
    kinds = [n.get("kind") for n in nodes if isinstance(n, dict)]
    print(f"OK: {args.file} (topology file)")
    print(
        f"  {kinds.count('host')} hosts, {kinds.count('switch')} switches, {len(raw.get('link', []))} links"
    )
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Print OK and a short summary of the resolved config (or suite, or topology file)."""
    raw = load_config(args.file)
    kind = file_kind(raw)
    if kind != "experiment" and args.overrides:
        raise ValueError(f"--set applies to experiment files, not to a {kind} file")
    if kind == "suite":
        return _validate_suite(args)
    if kind == "topology":
        return _validate_topology(args, raw)
    written = _load(args)
    resolved = resolve(written, _limits(args))
    schemes = resolved.get("schemes")
    names = [s.get("name", "?") for s in schemes] if isinstance(schemes, list) else []
    print(f"OK: {args.file}")
    print(f"  name: {experiment_name(resolved, args.file.stem)}")
    if names:
        print(f"  schemes: {', '.join(map(str, names))}")
    for key in ("seed", "duration"):
        if key in resolved:
            print(f"  {key}: {resolved[key]}")
    for key, value in resolved.items():
        if isinstance(value, dict):
            kind = value.get("kind") or value.get("type")
            print(f"  {key}: " + (f"{kind}, " if kind else "") + f"{len(value)} settings")
    from tailcut.fair_settings import format_settings, scheme_settings

    print(format_settings(scheme_settings(written, resolved, json.loads(_core.schemes()))))
    return 0


def cmd_schemes(args: argparse.Namespace) -> int:
    from tailcut.schemes_text import format_schemes, format_short, select

    listed = select(json.loads(_core.schemes()), args.names)
    print(format_schemes(listed) if args.names or args.all else format_short(listed))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from tailcut.outdir import claim
    from tailcut.progress import bar as progress_bar
    from tailcut.progress import run_stage
    from tailcut.runner import run_to_dir

    config = _load(args)
    out = args.out or Path("results") / experiment_name(config, args.file.stem)
    claim(out, "run", overwrite=args.overwrite)  # before the progress bar: a refusal is all that prints
    schemes = [str(s.get("name", "?")) for s in config.get("schemes", []) if isinstance(s, dict)]
    bar_format = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}"
    with progress_bar(
        total=100, file=sys.stderr, desc="checking and generating flows", bar_format=bar_format, percent=True
    ) as bar:

        def progress(fraction: float) -> bool:
            stage = run_stage(schemes, fraction) if args.jobs == 1 or fraction >= 1 else "simulating"
            bar.set_description_str(stage, refresh=False)
            bar.update(max(0.0, round(fraction * 100, 1) - bar.n))
            return True

        result = run_to_dir(
            config,
            out,
            seed=args.seed,
            progress=progress,
            overwrite=args.overwrite,
            limits=_limits(args),
            csv=True,
            jobs=args.jobs,
        )
    from tailcut import display
    from tailcut.summary import not_measured, stall_warnings, unfinished_warnings

    overall = result.summary[result.summary["size_class"] == "all"]
    uncounted = not_measured(result.config)
    for _, row in overall.iterrows():
        # A timeout fraction the engine does not count reads n/m, as on the report, never 0%.
        counted = "timeout_fraction" not in uncounted.get(row["scheme"], {})
        timeouts = display.fraction(row["timeout_fraction"]) if counted else "n/m"
        print(
            f"  {row['scheme']}: {row['count']} flows, {row['unfinished']} unfinished, "
            f"p99 FCT {display.time_ns(row['p99_fct_ns'])}, flows with a timeout {timeouts}"
        )
    for line in unfinished_warnings(result.summary):
        print(line, file=sys.stderr)
    for line in stall_warnings(result.runs):
        print(line, file=sys.stderr)
    print(f"results: {out}")
    print(f"report: {out / 'report.html'}")
    return 0


# Share of the sweep's simulated time done (every point counts its schemes x max_time; tailcut.progress).
SIM_BAR = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}"


def cmd_sweep(args: argparse.Namespace) -> int:
    from tailcut.progress import bar as progress_bar
    from tailcut.sweep import check_size, parse_grid_option, sweep
    from tailcut.sweep import points as grid_points

    grid = dict(parse_grid_option(g) for g in args.grid)
    if not grid:
        raise ValueError("give at least one --grid key=v1,v2")
    check_size(grid, args.seeds)  # before the points are listed for the progress bar
    config = _load(args)
    out = args.out or Path("results") / f"{experiment_name(config, args.file.stem)}-sweep"
    total = len(grid_points(grid, range(args.seeds)))
    with _progress("point", total) as (_, point_done):
        # Points finish rarely; the simulated time of the running ones moves at every core tick.
        sim_bar = progress_bar(
            total=100, file=sys.stderr, desc="simulated time", bar_format=SIM_BAR, percent=True
        )

        def simulated(fraction: float) -> None:
            sim_bar.update(max(0.0, round(fraction * 100, 1) - sim_bar.n))

        result = sweep(
            config,
            grid,
            seeds=args.seeds,
            jobs=args.jobs,
            executor=args.executor,
            out=out,
            ray_address=args.ray_address,
            on_done=point_done,
            overwrite=args.overwrite,
            limits=_limits(args),
            progress=simulated,
        )
        sim_bar.close()
    ran = sum(1 for o in result.outcomes if not o.skipped and o.error is None)
    skipped = sum(1 for o in result.outcomes if o.skipped)
    print(f"{len(result.outcomes)} points: {ran} ran, {skipped} already done, {len(result.failed)} failed")
    for slug, error in result.failed.items():
        print(f"  FAILED {slug}: {error}")
    from tailcut.summary import stall_warnings, unfinished_warnings

    for line in unfinished_warnings(result.summary):
        print(line, file=sys.stderr)
    for o in result.outcomes:
        runs = out / "points" / o.slug / "runs.json"
        if o.error is None and runs.exists():
            for line in stall_warnings(json.loads(runs.read_text()), o.slug):
                print(line, file=sys.stderr)
    print(f"results: {out}")
    print(f"report: {out / 'report.html'}")
    return EXIT_FAILED if result.failed else 0


@contextlib.contextmanager
def _progress(unit: str, total: int) -> Iterator[tuple[Any, Callable[[Any], None]]]:
    """A progress bar on stderr and the callback that advances it, printing failed points above it."""
    from tailcut.progress import bar as progress_bar

    with progress_bar(total=total, file=sys.stderr, unit=unit) as bar:

        def done(outcome: Any) -> None:
            if outcome.error is not None:
                bar.write(f"FAILED {outcome.slug}: {outcome.error}", file=sys.stderr)
            bar.update(1)

        yield bar, done


def cmd_compare(args: argparse.Namespace) -> int:
    from tailcut.compare import compare, load_suite

    suite = load_suite(args.suite)
    out = args.out or Path("results") / f"{suite.name}-{args.scale}"
    schemes = [s.strip() for s in args.schemes.split(",")] if args.schemes else None
    with _progress("cell", 0) as (bar, cell_done):

        def planned(n: int) -> None:
            bar.total = n
            bar.refresh()

        result = compare(
            suite,
            out,
            scale=args.scale,
            jobs=args.jobs,
            executor=args.executor,
            ray_address=args.ray_address,
            schemes=schemes,
            scenarios=args.scenarios,
            on_done=cell_done,
            on_plan=planned,
            overwrite=args.overwrite,
            limits=_limits(args),
            seeds=args.seeds,
        )
    status = result.table["status"].value_counts()
    print(", ".join(f"{n} {s}" for s, n in status.items()) + f" ({result.meta['wall_seconds']} s)")
    for slug, error in result.failed.items():
        print(f"  FAILED {slug}: {error}")
    print(f"results: {out / 'compare.md'}")
    print(f"report: {out / 'report.html'}")
    return EXIT_FAILED if result.failed else 0


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from tailcut import crosscheck
    from tailcut.seeds import seed_range

    if args.from_dirs:
        if args.file is not None or args.overrides:
            raise ValueError("--from-dirs reads existing folders: give it without FILE and --set")
        if args.out is None:
            raise ValueError("--from-dirs needs --out DIR, the folder for the report")
        sim, tb = args.from_dirs
        outcome = crosscheck.from_dirs(
            sim, tb, args.out, overwrite=args.overwrite, command=f"tailcut crosscheck --from-dirs {sim} {tb}"
        )
        out = args.out
    else:
        if args.file is None:
            raise ValueError("crosscheck needs an experiment FILE (or --from-dirs SIMDIR TBDIR)")
        config = _load(args)
        name = experiment_name(config, args.file.stem)
        out = args.out or Path("results") / f"crosscheck-{name}"
        seeds = seed_range(int(resolve(config)["seed"]), args.seeds)
        sets = "".join(f" --set {o}" for o in args.overrides)
        outcome = crosscheck.crosscheck(
            config,
            out,
            seeds,
            jobs=args.jobs,
            overwrite=args.overwrite,
            name=name,
            command=f"tailcut crosscheck {args.file} --seeds {args.seeds}{sets}",
            file_stem=args.file.stem,
        )
    flagged = sum(m["flagged"] for r in outcome.document["rows"] for m in r["metrics"].values())
    disagree = sum(
        e["agree"] is False for c in outcome.document["comparisons"] for e in c["metrics"].values()
    )
    print(f"{flagged} figure(s) differ by more than 20%, {disagree} comparison(s) disagree between worlds")
    print(f"report: {out / crosscheck.REPORT_MD}")
    failed = [f"{w} seed {s}" for w, f in outcome.failed.items() for s in f]
    if failed:
        print(f"FAILED (left out of the report): {', '.join(failed)}", file=sys.stderr)
    if outcome.invalid:
        for seed, reasons in outcome.invalid.items():
            for r in reasons:
                print(f"WARNING: TIMING INVALID: testbed seed {seed}: {r}", file=sys.stderr)
        if not args.allow_invalid_timing:
            print(
                f"WARNING: testbed run(s) did not keep their timing (kept and marked in the report); exit "
                f"{testbed.EXIT_INVALID_TIMING}: rerun on a quieter machine or pass --allow-invalid-timing "
                "to accept them",
                file=sys.stderr,
            )
            return EXIT_FAILED if failed else testbed.EXIT_INVALID_TIMING
        print("WARNING: invalid timing accepted with --allow-invalid-timing", file=sys.stderr)
    return EXIT_FAILED if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from tailcut.report import report_dirs

    out = args.out or (args.dirs[0] / "report.html" if len(args.dirs) == 1 else Path("report.html"))
    text = report_dirs(args.dirs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"report: {out}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from tailcut.reproduce import listing, reproduce

    if args.list:
        print(listing(args.paper or "all", args.out))
        return 0
    if args.paper is None:
        # Optional only so that `tailcut reproduce --list` alone shows what exists.
        _error("reproduce needs a paper (fuso, tracks, cloudburst, cp, dcquic, baselines or all; see --list)")
        return 2
    command = " ".join(["tailcut reproduce", args.paper, *args.experiments, "--seeds", str(args.seeds)])
    with _progress("run", 0) as (bar, run_done):

        def planned(n: int) -> None:
            bar.total = n
            bar.refresh()

        documents = reproduce(
            args.paper,
            args.experiments,
            seeds=args.seeds,
            jobs=args.jobs,
            out=args.out,
            executor=args.executor,
            ray_address=args.ray_address,
            command=command,
            on_plan=planned,
            on_done=run_done,
        )
    failed = sum(len(e["failed"]) for d in documents.values() for g in d["groups"] for e in g["entries"])
    for name in documents:
        print(f"{name}: {args.out / (name + '.md')}")
    if failed:
        print(f"{failed} run(s) failed; their seeds are left out (listed on the pages)")
    return EXIT_FAILED if failed else 0


def cmd_trace(args: argparse.Namespace) -> int:
    from tailcut.outdir import claim
    from tailcut.trace import trace, write_trace

    config = _load(args)
    out = args.out or Path("results") / f"{experiment_name(config, args.file.stem)}-trace"
    claim(out, "trace", overwrite=args.overwrite)
    result = trace(
        config,
        flows=args.flow,
        where=args.where,
        limit=args.limit,
        scheme=args.scheme,
        seed=args.seed,
        max_events=args.max_trace_events,
        limits=_limits(args),
    )
    write_trace(result, out, overwrite=args.overwrite)
    for line in result.warnings():
        print(line, file=sys.stderr)
    kinds = result.events["kind"].value_counts()
    flows = ", ".join(map(str, result.flow_ids))
    print(f"traced scheme {result.scheme}, flows {flows}: {len(result.events)} events")
    print("  " + ", ".join(f"{n} {k}" for k, n in kinds.items()))
    print(f"results: {out} (events.parquet, trace.pcap, plots/)")
    return 0


COMMANDS = {
    "run": cmd_run,
    "sweep": cmd_sweep,
    "compare": cmd_compare,
    "validate": cmd_validate,
    "schemes": cmd_schemes,
    "report": cmd_report,
    "reproduce": cmd_reproduce,
    "testbed": testbed.cmd,
    "crosscheck": cmd_crosscheck,
    "doctor": testbed.cmd_doctor,
    "net": netcmd.cmd,
    "trace": cmd_trace,
}


def _terminated(signum: int, _frame: Any) -> None:
    # SIGTERM unwinds like Ctrl-C, so that temporary folders are removed and pool workers stopped.
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of what the closed pipe refused
    does not print a second error at exit."""
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        with interrupt.installed():
            code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
        return code
    except (OutputError, MissingExtraError) as exc:
        _error(str(exc))
        return EXIT_BAD_INPUT
    except _core.ConfigError as exc:
        _error(str(exc))
        return EXIT_BAD_INPUT
    except _core.SimulationError as exc:
        _error(f"run failed: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error("interrupted; no partial result was left (a sweep's finished points are kept for a rerun)")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`tailcut schemes | head -1`): stop quietly, as other Unix tools do.
        _quiet_stdout()
        return 0
    except (OSError, ValueError) as exc:
        # TOML syntax errors (tomllib.TOMLDecodeError is a ValueError), bad --set/--grid, missing files.
        name = getattr(args, "file", None) or getattr(args, "suite", None)
        _error(f"{name}: {exc}" if name is not None and not isinstance(exc, OSError) else str(exc))
        return EXIT_BAD_INPUT
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
