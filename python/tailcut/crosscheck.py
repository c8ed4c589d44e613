"""``tailcut crosscheck FILE --seeds N``: one experiment file in the simulator and on the testbed, and
where the two worlds differ (``docs/crosscheck.md``).

Every seed runs in both worlds into a normal result folder, ``OUT/sim/seed-K`` (``tailcut run``'s) and
``OUT/testbed/seed-K`` (``tailcut testbed run``'s), and the report, ``OUT/crosscheck.md`` and
``OUT/crosscheck.json``, is computed from those folders alone (so ``--from-dirs`` redoes it from folders
that already exist). Per scheme and size class (``tailcut.summary.SIZE_CLASSES``):

- FCT p50 / p99 / p99.9 (``tailcut.summary.summary_stats``: nearest rank, unfinished flows infinitely
  late), timeouts per 100 flows and the share of flows completed, in each world as median [min-max] over
  the seeds (:mod:`tailcut.seeds`);
- the ratio testbed / sim of the medians, flagged when it is outside ``[1 - FLAG, 1 + FLAG]`` (timeouts
  per 100 flows only when the medians also differ by more than ``TIMEOUTS_TOLERANCE``);
- for every pair of schemes (the one listed earlier in the file is the baseline), whether the scheme is
  better, worse or tied (within ``TIE``) on p50 and p99 in each world, per seed too, and whether the
  worlds agree.

A testbed kernel reports no per-flow timeouts: there the count is the namespaces' ``TcpExt.TCPTimeouts``
(``testbed.json``), which covers the whole scheme run, so only rows holding every flow of the scheme get
it; other rows are not measured (``n/m``), never 0.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailcut.seeds import format_spread, spread
from tailcut.summary import SIZE_CLASSES, not_measured, size_class, summary_stats

if TYPE_CHECKING:
    import pandas as pd

SIM, TESTBED = "sim", "testbed"
WORLDS = (SIM, TESTBED)
REPORT_MD = "crosscheck.md"
REPORT_JSON = "crosscheck.json"
# A metric is flagged when testbed / sim of the medians is outside [1 - FLAG, 1 + FLAG].
FLAG = 0.20
# ... and, for timeouts per 100 flows, when the medians also differ by more than this many per 100 flows.
TIMEOUTS_TOLERANCE = 1.0
# A scheme ties with its baseline when their values differ by at most this share of the baseline's.
TIE = 0.05
KERNEL_TIMEOUTS = "TcpExt.TCPTimeouts"
# Where a timeouts-per-100-flows figure comes from.
FROM_FLOWS, FROM_KERNEL, NOT_MEASURED_SOURCE = "flows", "kernel", "n/m"
NOT_MEASURED_TEXT = "n/m"


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    higher_is_better: bool = False
    # Medians closer than this (in the metric's unit) are never flagged.
    tolerance: float = 0.0


METRICS = (
    Metric("mean_ms", "FCT mean (ms)"),
    Metric("p50_ms", "FCT p50 (ms)"),
    Metric("p99_ms", "FCT p99 (ms)"),
    Metric("p999_ms", "FCT p99.9 (ms)"),
    Metric("timeouts_per_100", "timeouts per 100 flows", tolerance=TIMEOUTS_TOLERANCE),
    Metric("completed_pct", "completed (%)", higher_is_better=True),
)
BY_KEY = {m.key: m for m in METRICS}
# The metrics a scheme is compared with its baseline on.
# The mean is DCQUIC's migration headline (Fig. 7: mean task completion time).
DIRECTION_METRICS = ("mean_ms", "p50_ms", "p99_ms")


class CrosscheckError(ValueError):
    """Bad input to the cross-check (a folder set that does not pair up); the message names it."""


# ---------------------------------------------------------------------------------------------------------
# One run's figures.


@dataclass
class SeedRun:
    """One world's run of one seed, as its result folder holds it."""

    flows: pd.DataFrame
    # testbed.json's entry per scheme (empty for a simulator run).
    quality: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The metrics each scheme's engine does not count (tailcut.summary.not_measured).
    unmeasured: dict[str, dict[str, str]] = field(default_factory=dict)
    folder: Path | None = None

    @classmethod
    def load(cls, folder: Path) -> SeedRun:
        import pandas as pd

        from tailcut.config import load_config
        from tailcut.testbed import QUALITY_FILE

        folder = Path(folder)
        if not (folder / "flows.parquet").is_file():
            raise CrosscheckError(f"{folder}: not a tailcut result folder (no flows.parquet)")
        config_file = folder / "config.toml"
        config = load_config(config_file) if config_file.exists() else None
        quality_file = folder / QUALITY_FILE
        quality = (
            {str(e["scheme"]): e for e in json.loads(quality_file.read_text())}
            if quality_file.exists()
            else {}
        )
        return cls(pd.read_parquet(folder / "flows.parquet"), quality, not_measured(config), folder)


def scheme_order(run: SeedRun) -> list[str]:
    """The schemes as the flows table first lists them (the file's order)."""
    return [str(s) for s in dict.fromkeys(run.flows["scheme"].tolist())]


def timeouts_per_100(
    group: pd.DataFrame, whole_scheme: bool, quality: Mapping[str, Any] | None, unmeasured: Mapping[str, str]
) -> tuple[float, str]:
    """Timeouts per 100 flows of ``group`` and where the count comes from: the flows' own ``timeouts``
    column when every flow of the group has it (the simulator; the testbed's runtime, for one-way
    flows), else, for a scheme Linux ran (``testbed.json``'s ``stack`` is ``kernel``; a kernel counts
    none per flow), the scheme run's ``TcpExt.TCPTimeouts`` when ``group`` holds every flow of the
    scheme (``whole_scheme``), else not measured (NaN). A runtime scheme's timeouts are never the
    kernel's: its TCP runs in user space, over UDP."""
    import pandas as pd

    if len(group) == 0:
        return math.nan, "-"
    if "timeout_fraction" in unmeasured:
        return math.nan, NOT_MEASURED_SOURCE
    counts = pd.to_numeric(group["timeouts"], errors="coerce") if "timeouts" in group else None
    if counts is not None and counts.notna().all():
        return 100 * float(counts.sum()) / len(group), FROM_FLOWS
    kernel = (quality or {}).get("kernel") or {}
    linux = (quality or {}).get("stack", "kernel") == "kernel"
    if linux and whole_scheme and isinstance(kernel.get(KERNEL_TIMEOUTS), int | float):
        return 100 * float(kernel[KERNEL_TIMEOUTS]) / len(group), FROM_KERNEL
    return math.nan, NOT_MEASURED_SOURCE


def run_figures(run: SeedRun) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (scheme, size class): ``flows`` and every metric of :data:`METRICS` (NaN when a class has no
    flow or the metric is not measured), and ``timeouts_source``."""
    flows = run.flows
    classes = size_class(flows["size_bytes"])
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for scheme in scheme_order(run):
        mine = flows[flows["scheme"] == scheme]
        for cls in SIZE_CLASSES:
            group = mine if cls == "all" else mine[classes.loc[mine.index] == cls]
            stats = summary_stats(group)
            per100, source = timeouts_per_100(
                group, len(group) == len(mine), run.quality.get(scheme), run.unmeasured.get(scheme, {})
            )
            n = int(stats["count"])
            out[(scheme, cls)] = {
                "flows": n,
                "mean_ms": stats["mean_fct_ns"] / 1e6,
                "p50_ms": stats["p50_fct_ns"] / 1e6,
                "p99_ms": stats["p99_fct_ns"] / 1e6,
                "p999_ms": stats["p999_fct_ns"] / 1e6,
                "timeouts_per_100": per100,
                "completed_pct": 100 * int(stats["completed"]) / n if n else math.nan,
                "timeouts_source": source,
            }
    return out


# ---------------------------------------------------------------------------------------------------------
# The rules: ratio, flag, direction.


def ratio(testbed: float | None, sim: float | None) -> float:
    """testbed / sim; 1 when both are equal (0 and 0, inf and inf), inf when only the simulator's is 0 or
    only the testbed's infinite; NaN when either is missing."""
    if testbed is None or sim is None or math.isnan(testbed) or math.isnan(sim):
        return math.nan
    if testbed == sim:
        return 1.0
    if sim == 0 or math.isinf(testbed):
        return math.inf
    if math.isinf(sim):
        return 0.0
    return testbed / sim


def flagged(metric: Metric, sim: float | None, testbed: float | None) -> bool:
    """True when the worlds' medians differ by more than :data:`FLAG` (testbed / sim outside
    ``[1 - FLAG, 1 + FLAG]``) and, for a metric with a tolerance, by more than it in absolute terms.
    Never for a missing figure."""
    r = ratio(testbed, sim)
    if math.isnan(r) or abs(r - 1) <= FLAG:
        return False
    # Both finite here unless one is infinite, which is always a difference.
    return not (metric.tolerance and abs(testbed - sim) <= metric.tolerance)  # type: ignore[operator]


def direction(value: float | None, baseline: float | None, higher_is_better: bool = False) -> str | None:
    """``better``, ``worse`` or ``tie`` (within :data:`TIE` of the baseline's value) of ``value`` against
    ``baseline``; infinite (unfinished) is the worst and ties with itself; None when either is missing."""
    if value is None or baseline is None or math.isnan(value) or math.isnan(baseline):
        return None
    if value == baseline:
        return "tie"
    if not (math.isinf(value) or math.isinf(baseline)) and abs(value - baseline) <= TIE * abs(baseline):
        return "tie"
    return "better" if (value > baseline) == higher_is_better else "worse"


# ---------------------------------------------------------------------------------------------------------
# The report document.


def _number(value: Any) -> Any:
    """JSON has neither NaN nor infinity: NaN (missing, not measured) is null, +inf is ``"inf"``."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return _number(value.item() if hasattr(value, "item") else value)


def build(
    runs: Mapping[str, Mapping[int, SeedRun]],
    invalid: Mapping[int, list[str]] | None = None,
    failed: Mapping[str, Mapping[int, str]] | None = None,
) -> dict[str, Any]:
    """The report's numbers from each world's runs by seed (``runs[world][seed]``). ``invalid`` holds the
    testbed seeds whose timing was not kept (kept in every figure, marked); ``failed`` the runs that did
    not produce a folder, left out. Figures are plain floats (NaN, inf) until :func:`to_json`."""
    figures = {w: {seed: run_figures(run) for seed, run in sorted(runs.get(w, {}).items())} for w in WORLDS}
    order: list[str] = []
    for w in WORLDS:
        for run in runs.get(w, {}).values():
            order += [s for s in scheme_order(run) if s not in order]
    rows = []
    for scheme in order:
        for cls in SIZE_CLASSES:
            rows.append(_row(scheme, cls, figures))
    comparisons = []
    for i, scheme in enumerate(order):
        for baseline in order[:i]:
            for cls in SIZE_CLASSES:
                if any(f.get((scheme, cls), {}).get("flows") for w in WORLDS for f in figures[w].values()):
                    comparisons.append(_comparison(scheme, baseline, cls, figures))
    timing = []
    for seed, run in sorted(runs.get(TESTBED, {}).items()):
        for scheme, entry in run.quality.items():
            verdict = entry.get("timing") or {}
            lateness = (entry.get("fabric") or {}).get("lateness") or {}
            timing.append(
                {
                    "seed": seed,
                    "scheme": scheme,
                    # Linux's own stack, or tailcut's engines over UDP (docs/testbed.md).
                    "stack": entry.get("stack", "kernel"),
                    "valid": verdict.get("valid"),
                    "reasons": list(verdict.get("reasons") or []),
                    "lateness_p99_ns": lateness.get("p99_ns", math.nan),
                    "start_late_p50_ns": verdict.get("start_late_p50_ns", math.nan),
                    "tun_tx_drops": entry.get("tun_tx_drops"),
                    "fabric_drops": entry.get("fabric_drops"),
                    "folder": str(run.folder) if run.folder else None,
                }
            )
    return {
        "seeds": {w: sorted(runs.get(w, {})) for w in WORLDS},
        "folders": {
            w: {seed: str(run.folder) for seed, run in sorted(runs.get(w, {}).items()) if run.folder}
            for w in WORLDS
        },
        "schemes": order,
        "rules": {"flag": FLAG, "timeouts_tolerance": TIMEOUTS_TOLERANCE, "tie": TIE},
        "rows": rows,
        "comparisons": comparisons,
        "timing": timing,
        "invalid_timing": {seed: list(r) for seed, r in sorted((invalid or {}).items())},
        "failed": {w: dict(sorted((failed or {}).get(w, {}).items())) for w in WORLDS},
    }


def _row(scheme: str, cls: str, figures: Mapping[str, Mapping[int, Mapping]]) -> dict[str, Any]:
    per_world = {w: {seed: f.get((scheme, cls)) for seed, f in figures[w].items()} for w in WORLDS}
    row: dict[str, Any] = {
        "scheme": scheme,
        "size_class": cls,
        "flows": {w: {seed: (v or {}).get("flows", 0) for seed, v in per_world[w].items()} for w in WORLDS},
        "timeouts_source": {
            w: sorted({v["timeouts_source"] for v in per_world[w].values() if v and v["flows"]})
            for w in WORLDS
        },
        "metrics": {},
    }
    for metric in METRICS:
        stats = {
            w: spread([(v or {}).get(metric.key, math.nan) for v in per_world[w].values()]) for w in WORLDS
        }
        sim, tb = stats[SIM]["median"], stats[TESTBED]["median"]
        row["metrics"][metric.key] = {
            **stats,
            "ratio": ratio(tb, sim),
            "flagged": flagged(metric, sim, tb),
        }
    return row


def _comparison(
    scheme: str, baseline: str, cls: str, figures: Mapping[str, Mapping[int, Mapping]]
) -> dict[str, Any]:
    out: dict[str, Any] = {"scheme": scheme, "baseline": baseline, "size_class": cls, "metrics": {}}
    for key in DIRECTION_METRICS:
        metric = BY_KEY[key]
        entry: dict[str, Any] = {}
        for w in WORLDS:
            mine = [(seed, f.get((scheme, cls), {}).get(key, math.nan)) for seed, f in figures[w].items()]
            base = [(seed, f.get((baseline, cls), {}).get(key, math.nan)) for seed, f in figures[w].items()]
            med, base_med = spread([v for _, v in mine])["median"], spread([v for _, v in base])["median"]
            per_seed = {
                seed: direction(v, b, metric.higher_is_better)
                for (seed, v), (_, b) in zip(mine, base, strict=True)
            }
            seen = set(per_seed.values())
            entry[w] = {
                "direction": direction(med, base_med, metric.higher_is_better),
                "value": med,
                "baseline": base_med,
                "per_seed": per_seed,
                "flips": {"better", "worse"} <= seen,
            }
        dirs = [entry[w]["direction"] for w in WORLDS]
        entry["agree"] = None if None in dirs else dirs[0] == dirs[1]
        out["metrics"][key] = entry
    return out


def to_json(document: Mapping[str, Any]) -> str:
    return json.dumps(_plain(document), indent=2) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Markdown.


def _value(v: float) -> str:
    from tailcut.display import ratio as three_digits

    return "inf" if math.isinf(v) else three_digits(v)


def cell(stats: Mapping[str, Any] | None) -> str:
    """``median [min-max]`` over the seeds (one number when they agree), ``inf`` for a figure among
    unfinished flows, ``-`` without any."""
    return format_spread(stats, _value)


def ratio_text(r: float) -> str:
    if math.isnan(r):
        return "-"
    return _value(r)


def _direction_text(entry: Mapping[str, Any]) -> str:
    d = entry["direction"]
    if d is None:
        return "-"
    value, base = entry["value"], entry["baseline"]
    if d != "tie" and math.isfinite(value) and math.isfinite(base) and base:
        return f"{d} ({100 * (value - base) / base:+.0f}%)"
    return d


def _seed_directions(entry: Mapping[str, Any]) -> str:
    counts: dict[str, int] = {}
    for d in entry["per_seed"].values():
        counts[d or "-"] = counts.get(d or "-", 0) + 1
    text = ", ".join(f"{d} {n}" for d, n in sorted(counts.items()))
    return f"**FLIPS** ({text})" if entry["flips"] else text or "-"


def _same_flows(rows: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> str | None:
    """For an ``all`` row whose flows are all in one size class (in every seed and world), that class:
    its figures are the same by construction, and the page says so instead of repeating them."""
    if row["size_class"] != "all":
        return None
    for other in rows:
        if (
            other["scheme"] == row["scheme"]
            and other["size_class"] != "all"
            and other["flows"] == row["flows"]
        ):
            return str(other["size_class"])
    return None


def _flows_text(counts: Mapping[int, int]) -> str:
    values = sorted(set(counts.values()))
    return "-" if not values else str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def _metric_cell(row: Mapping[str, Any], metric: Metric, world: str) -> str:
    stats = row["metrics"][metric.key][world]
    sources = row["timeouts_source"][world]
    if metric.key == "timeouts_per_100" and stats["median"] is None and NOT_MEASURED_SOURCE in sources:
        return NOT_MEASURED_TEXT
    text = cell(stats)
    if metric.key == "timeouts_per_100" and stats["median"] is not None:
        text += f" ({', '.join(s for s in sources if s != NOT_MEASURED_SOURCE)})"
    return text


def markdown(document: Mapping[str, Any], title: str = "Cross-check", command: str = "") -> str:
    """The page: one table of every scheme x size class x metric in both worlds, one of the comparisons
    between schemes, one of the testbed's timing per seed."""
    seeds = document["seeds"]
    lines = [f"# {title}", ""]
    if command:
        lines += [f"Generated by `{command}`.", ""]
    lines += [
        f"Seeds: simulator {', '.join(map(str, seeds[SIM])) or 'none'}; testbed "
        f"{', '.join(map(str, seeds[TESTBED])) or 'none'}. Every figure is the median [min-max] over the "
        "seeds (one number when they agree). FCT percentiles by nearest rank over all flows, unfinished "
        "flows infinitely late (`inf`). testbed/sim is the ratio of the medians; "
        f"**>{FLAG:.0%}** marks a ratio outside [{1 - FLAG:.2f}, {1 + FLAG:.2f}] (timeouts per 100 flows: "
        f"and medians more than {TIMEOUTS_TOLERANCE:g} apart). Timeouts say where they were counted: "
        f"`flows` (each flow's own count), `kernel` (the namespaces' `{KERNEL_TIMEOUTS}`, whole scheme "
        f"runs only), `{NOT_MEASURED_TEXT}` (not measured). Definitions: docs/crosscheck.md.",
        "",
    ]
    folders = {w: sorted({str(Path(f).parent) for f in document["folders"][w].values()}) for w in WORLDS}
    if any(folders.values()):
        lines += [
            f"Runs: {', '.join(f'`{f}/seed-K`' for w in WORLDS for f in folders[w])}, normal result folders "
            "(`tailcut report SIMDIR TBDIR` draws two side by side).",
            "",
        ]
    stacks = {t["scheme"]: t.get("stack", "kernel") for t in document["timing"]}
    if stacks:
        named = {"kernel": "Linux's own stack", "runtime": "tailcut's engines over UDP in the hosts"}
        lines += [
            "On the testbed: "
            + "; ".join(f"`{scheme}` on {named.get(stack, stack)}" for scheme, stack in stacks.items())
            + ' (docs/testbed.md, "Schemes on tailcut\'s engines").',
            "",
        ]
    invalid = document["invalid_timing"]
    if invalid:
        lines += [
            f"**TIMING INVALID on the testbed in seed(s) {', '.join(map(str, invalid))}**: those runs are "
            "kept in every figure below; their FCTs measure this machine as much as the network (see "
            "Testbed timing).",
            "",
        ]
    for world, failed in document["failed"].items():
        for seed, error in failed.items():
            lines.append(f"**FAILED** {world} seed {seed} (left out): {error}")
    if any(document["failed"].values()):
        lines.append("")
    lines += [
        "## Simulator against testbed",
        "",
        "| scheme | size class | flows (sim / testbed) | metric | sim | testbed | testbed/sim | |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in document["rows"]:
        flows = f"{_flows_text(row['flows'][SIM])} / {_flows_text(row['flows'][TESTBED])}"
        if not any(row["flows"][SIM].values()) and not any(row["flows"][TESTBED].values()):
            lines.append(f"| {row['scheme']} | {row['size_class']} | 0 / 0 | (no flows) | - | - | - | |")
            continue
        if (same := _same_flows(document["rows"], row)) is not None:
            lines.append(
                f"| {row['scheme']} | {row['size_class']} | {flows} | (the {same} flows: the same figures) "
                "| | | | |"
            )
            continue
        for i, metric in enumerate(METRICS):
            m = row["metrics"][metric.key]
            head = f"| {row['scheme']} | {row['size_class']} | {flows} |" if i == 0 else "| | | |"
            flag = f"**>{FLAG:.0%}**" if m["flagged"] else ""
            lines.append(
                f"{head} {metric.label} | {_metric_cell(row, metric, SIM)} | "
                f"{_metric_cell(row, metric, TESTBED)} | {ratio_text(m['ratio'])} | {flag} |"
            )
    lines += ["", "## Schemes against their baseline", ""]
    if not document["comparisons"]:
        lines += ["One scheme: nothing to compare.", ""]
    else:
        lines += [
            f"Each scheme against every scheme listed before it in the file (the baseline). Better / worse: "
            f"lower / higher, by more than {TIE:.0%} of the baseline's value (else tie), on the medians "
            "(the percentage is scheme / baseline - 1); per seed, on that seed's two runs. **FLIPS**: "
            "better in some seeds and worse in others. Agree: the same direction in both worlds.",
            "",
            "| scheme vs baseline | size class | metric | sim | testbed | agree | sim per seed | "
            "testbed per seed |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in document["comparisons"]:
            scheme_row = next(
                r
                for r in document["rows"]
                if (r["scheme"], r["size_class"]) == (c["scheme"], c["size_class"])
            )
            base_row = next(
                r
                for r in document["rows"]
                if (r["scheme"], r["size_class"]) == (c["baseline"], c["size_class"])
            )
            if _same_flows(document["rows"], scheme_row) and _same_flows(document["rows"], base_row):
                continue  # "all" of two schemes whose flows are all in one class: that class's rows say it
            for key in DIRECTION_METRICS:
                e = c["metrics"][key]
                agree = "-" if e["agree"] is None else "yes" if e["agree"] else "**NO**"
                lines.append(
                    f"| {c['scheme']} vs {c['baseline']} | {c['size_class']} | {BY_KEY[key].label} | "
                    f"{_direction_text(e[SIM])} | {_direction_text(e[TESTBED])} | {agree} | "
                    f"{_seed_directions(e[SIM])} | {_seed_directions(e[TESTBED])} |"
                )
        lines.append("")
    lines += ["## Testbed timing", ""]
    if not document["timing"]:
        lines += ["No testbed run.", ""]
    else:
        lines += [
            'Per seed and scheme, as `testbed.json` judged it (docs/testbed.md, "Timing verdict").',
            "",
            "| seed | scheme | timing | fabric lateness p99 (us) | agent start late p50 (us) | TUN drops "
            "| fabric drops | folder |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for t in document["timing"]:
            verdict = (
                "n/a"
                if t["valid"] is None
                else "kept"
                if t["valid"]
                else "**INVALID**: " + "; ".join(t["reasons"])
            )
            lines.append(
                f"| {t['seed']} | {t['scheme']} | {verdict} | {_micros(t['lateness_p99_ns'])} | "
                f"{_micros(t['start_late_p50_ns'])} | {_count(t['tun_tx_drops'])} | "
                f"{_count(t['fabric_drops'])} | {t['folder'] or '-'} |"
            )
        lines.append("")
    return "\n".join(lines)


def _count(value: Any) -> str:
    return "-" if value is None else str(value)


def _micros(ns: Any) -> str:
    return "-" if not isinstance(ns, int | float) or math.isnan(ns) else _value(ns / 1e3)


# ---------------------------------------------------------------------------------------------------------
# Folders: running the seeds, reading them back, writing the report.


@dataclass(frozen=True)
class SeedPoint:
    """One seed of the simulator side, as :func:`tailcut.sweep.run_tasks` runs it: ``sim/seed-K``."""

    seed: int
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def slug(self) -> str:
        return seed_folder(self.seed)


def seed_folder(seed: int) -> str:
    return f"seed-{seed}"


_SEED_DIR = re.compile(r"^seed-(\d+)$")


def seed_folders(path: Path) -> dict[int, Path]:
    """A world's runs by seed: ``path`` itself when it is one result folder (its seed from its
    ``config.toml``), else its ``seed-K`` result folders."""
    path = Path(path)
    if (path / "flows.parquet").is_file():
        from tailcut.config import load_config

        config = load_config(path / "config.toml") if (path / "config.toml").exists() else {}
        return {int(config.get("seed", 0)): path}
    found = {
        int(m.group(1)): p
        for p in sorted(path.iterdir() if path.is_dir() else [])
        if (m := _SEED_DIR.match(p.name)) and (p / "flows.parquet").is_file()
    }
    if not found:
        raise CrosscheckError(f"{path}: neither a result folder nor a folder of seed-K result folders")
    return found


def _done(folder: Path, world: str) -> bool:
    """A seed folder a resumed cross-check keeps: complete, not a failure, and of its world."""
    from tailcut.outdir import read_marker
    from tailcut.testbed import QUALITY_FILE

    marker = read_marker(folder)
    if marker is None or marker.get("failed") or not (folder / "flows.parquet").is_file():
        return False
    return (marker.get("source") == "testbed") == (world == TESTBED) and (
        world != TESTBED or (folder / QUALITY_FILE).is_file()
    )


def write_report(out: Path, document: Mapping[str, Any], title: str, command: str) -> None:
    from tailcut.outdir import write_text_atomic

    umask = os.umask(0)
    os.umask(umask)
    for name, text in (
        (REPORT_JSON, to_json({"command": command, "title": title, **document})),
        (REPORT_MD, markdown(document, title, command) + "\n"),
    ):
        write_text_atomic(out / name, text)
        (out / name).chmod(0o666 & ~umask)  # a temporary file is private; a report is not


@dataclass
class Outcome:
    document: dict[str, Any]
    invalid: dict[int, list[str]]
    failed: dict[str, dict[int, str]]


def crosscheck(
    config: dict[str, Any],
    out: Path,
    seeds: Sequence[int],
    jobs: int = 1,
    overwrite: bool = False,
    name: str = "experiment",
    command: str = "",
    file_stem: str = "experiment",
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> Outcome:
    """Run ``config`` (an experiment as loaded, overrides applied) for each of ``seeds`` in the simulator
    (``jobs`` seeds at once) and then on the testbed (one at a time), into ``out``, and write the report.

    ``out`` is claimed as a ``crosscheck`` folder: a rerun with the same experiment resumes (seed folders
    already complete are kept), another experiment is refused unless ``overwrite``. Each seed folder is
    written atomically. A testbed run whose timing was not kept is kept and listed in ``invalid``."""
    from tailcut import testbed
    from tailcut.config import apply_overrides, resolve, to_toml
    from tailcut.outdir import claim, config_hash, release, released
    from tailcut.sweep import run_point, run_tasks

    resolve(config)  # a bad field is reported before anything runs or is written
    resume = claim(out, "crosscheck", overwrite=overwrite, experiment=name, digest=config_hash(config))
    failed: dict[str, dict[int, str]] = {SIM: {}, TESTBED: {}}
    with released(out):
        sim_dir, tb_dir = out / SIM, out / TESTBED
        todo = [s for s in seeds if not (resume and _done(sim_dir / seed_folder(s), SIM))]
        for s in sorted(set(seeds) - set(todo)):
            log(f"sim seed {s}: already in {sim_dir / seed_folder(s)}")

        def sim_done(outcome: Any) -> None:
            log(f"sim {outcome.slug}: " + ("done" if outcome.error is None else f"FAILED: {outcome.error}"))
            if outcome.error is not None:
                failed[SIM][int(outcome.slug.rsplit("-", 1)[1])] = outcome.error

        sim_dir.mkdir(parents=True, exist_ok=True)
        run_tasks([(config, SeedPoint(s)) for s in todo], sim_dir, jobs, "local", None, sim_done, run_point)
        for s in seeds:
            folder = tb_dir / seed_folder(s)
            if resume and _done(folder, TESTBED):
                log(f"testbed seed {s}: already in {folder}")
                continue
            log(f"testbed seed {s}: running")
            with tempfile.TemporaryDirectory() as tmp:
                # The testbed takes a file; paths in the config are absolute already (load_experiment).
                exp = Path(tmp) / f"{file_stem}.toml"
                exp.write_text(to_toml(apply_overrides(config, {"seed": s})))
                try:
                    # Invalid timing is judged below from every seed's folder, resumed ones too.
                    testbed.run_to_dir(exp, folder, overwrite=True, allow_invalid_timing=True)
                finally:
                    release(folder)
        runs = {
            SIM: {s: SeedRun.load(sim_dir / seed_folder(s)) for s in seeds if s not in failed[SIM]},
            TESTBED: {s: SeedRun.load(tb_dir / seed_folder(s)) for s in seeds},
        }
        invalid = {s: r for s in seeds if (r := testbed.invalid_timing(tb_dir / seed_folder(s)))}
        document = build(runs, invalid, failed)
        write_report(out, document, f"Cross-check: {name}", command)
    return Outcome(document, invalid, failed)


def from_dirs(sim: Path, testbed_dir: Path, out: Path, overwrite: bool = False, command: str = "") -> Outcome:
    """The report of runs that already exist: ``sim`` and ``testbed_dir`` each one result folder or a
    folder of ``seed-K`` ones (a cross-check's ``sim/`` and ``testbed/``); seeds pair by number. ``out``
    receives only the report, so it may not be a cross-check's own folder (whose runs it would replace)."""
    from tailcut import testbed
    from tailcut.config import experiment_name, load_config
    from tailcut.outdir import claim, released

    sims, tbs = seed_folders(sim), seed_folders(testbed_dir)
    if set(sims) != set(tbs):
        raise CrosscheckError(
            f"--from-dirs: the seeds differ: {sim} has {sorted(sims)}, {testbed_dir} has {sorted(tbs)}"
        )
    for seed, folder in tbs.items():
        if not (folder / testbed.QUALITY_FILE).is_file():
            raise CrosscheckError(
                f"--from-dirs: {folder} (seed {seed}) is not a testbed folder (no {testbed.QUALITY_FILE})"
            )
    for seed, folder in sims.items():
        if (folder / testbed.QUALITY_FILE).is_file():
            raise CrosscheckError(
                f"--from-dirs: {folder} (seed {seed}) is a testbed folder, not a simulator one"
            )
    if any((Path(out) / w).exists() for w in WORLDS):
        raise CrosscheckError(
            f"out: {out} holds a cross-check's runs; give --from-dirs a new folder for its report"
        )
    runs = {
        SIM: {s: SeedRun.load(p) for s, p in sims.items()},
        TESTBED: {s: SeedRun.load(p) for s, p in tbs.items()},
    }
    invalid = {s: r for s, p in tbs.items() if (r := testbed.invalid_timing(p))}
    document = build(runs, invalid)
    first = sims[min(sims)] / "config.toml"
    name = experiment_name(load_config(first) if first.exists() else {}, Path(sim).name)
    claim(out, "crosscheck", overwrite=overwrite, experiment=name, digest="from-dirs")
    with released(out):
        write_report(out, document, f"Cross-check: {name}", command)
    return Outcome(document, invalid, {SIM: {}, TESTBED: {}})
