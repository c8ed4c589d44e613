"""The comparison's results page: the same tables as Markdown (``compare.md``) and HTML (``report.html``).

Sections: the overall ranking (mean rank, wins, cells with unfinished small flows), mean rank by failure,
the cells that did not run and why, failed cells, then one table per scenario ordered by rank.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tailcut.extras import MissingExtraError

try:
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
except ImportError as exc:
    raise MissingExtraError("plot", "drawing the comparison page", "matplotlib") from exc

from tailcut import display
from tailcut.compare import FAILED, NOT_APPLICABLE, OK, PENDING
from tailcut.report import _figure_html, _page, provenance_html, table_html


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, int | np.integer):
        return str(int(value))
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 10 ** (digits - 1):
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def _time_us(value: Any) -> str:
    """A percentile the suite table holds in us, as every report prints times: unit and three digits."""
    return display.time_ns(None if value is None else float(value) * 1e3)


def ranking_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per scheme over the scenarios it ran: mean rank, wins, top-3 places, cells with unfinished small
    flows, and the median over scenarios of its p99 relative to the scenario's best p99."""
    ok = table[table["status"] == OK].copy()
    best = ok.groupby("scenario")["p99_us"].transform("min")
    ok["p99_vs_best"] = ok["p99_us"] / best
    rows = []
    for scheme, g in ok.groupby("scheme", sort=False):
        rows.append(
            {
                "scheme": scheme,
                "scenarios": len(g),
                "mean rank": g["rank"].mean(),
                "wins": int((g["rank"] == 1).sum()),
                "top 3": int((g["rank"] <= 3).sum()),
                "with unfinished small flows": int((g["small_unfinished"] > 0).sum()),
                "median p99 / best p99": g["p99_vs_best"].median(),
            }
        )
    frame = pd.DataFrame(rows, columns=["scheme", "scenarios", "mean rank", "wins", "top 3",
                                        "with unfinished small flows", "median p99 / best p99"])  # fmt: skip
    return frame.sort_values(["mean rank", "scheme"], kind="stable").reset_index(drop=True)


def rank_by(table: pd.DataFrame, axis: str) -> pd.DataFrame:
    """Mean rank of each scheme per value of ``axis`` (failure, workload or topology)."""
    ok = table[table["status"] == OK]
    if ok.empty:
        return pd.DataFrame(columns=["scheme"])
    pivot = ok.pivot_table(index="scheme", columns=axis, values="rank", aggfunc="mean", sort=False)
    order = list(dict.fromkeys(table[axis]))
    pivot = pivot[[c for c in order if c in pivot.columns]]
    pivot = pivot.loc[[s for s in dict.fromkeys(table["scheme"]) if s in pivot.index]]
    # The axis' name would sit over an empty header cell of its own: the section's title says it.
    pivot.columns.name = None
    return pivot.reset_index()


def not_run_table(table: pd.DataFrame) -> pd.DataFrame:
    """Cells marked n/a or pending, grouped by scheme, status and reason."""
    rest = table[table["status"].isin([NOT_APPLICABLE, PENDING])]
    rows = [
        {"scheme": scheme, "status": status, "cells": len(g), "reason": reason}
        for (scheme, status, reason), g in rest.groupby(["scheme", "status", "reason"], sort=False)
    ]
    return pd.DataFrame(rows, columns=["scheme", "status", "cells", "reason"])


def not_measured_table(table: pd.DataFrame) -> pd.DataFrame:
    """The metrics schemes declare they do not measure (``not_measured`` in the suite), and why."""
    rows: list[dict[str, str]] = []
    if "not_measured" not in table.columns:
        return pd.DataFrame(rows, columns=["scheme", "metric", "why"])
    for scheme, notes in table.dropna(subset=["not_measured"]).groupby("scheme", sort=False)["not_measured"]:
        for note in dict.fromkeys(n for v in notes if v for n in str(v).split("; ")):
            metric, _, why = note.partition(": ")
            rows.append({"scheme": scheme, "metric": metric, "why": why})
    return pd.DataFrame(rows, columns=["scheme", "metric", "why"])


def _measured(r: pd.Series, metric: str, column: str) -> str:
    """A fraction as a percentage with three significant digits, as the run report prints it; ``n/m``
    for a metric the scheme's engine does not count (never 0)."""
    notes = r.get("not_measured")
    if isinstance(notes, str) and f"{metric}: " in notes:
        return "n/m"
    return display.fraction(None if r[column] is None else float(r[column]))


def scenario_table(group: pd.DataFrame) -> pd.DataFrame:
    """One scenario: schemes that ran by rank, then the others with their status."""
    ran = group[group["status"] == OK].sort_values(["rank", "scheme"], kind="stable")
    rest = group[group["status"] != OK]
    rows = []
    for _, r in ran.iterrows():
        rows.append(
            {
                "rank": _num(r["rank"], 3),
                "scheme": r["scheme"],
                "p50": _time_us(r["p50_us"]),
                "p99": _time_us(r["p99_us"]),
                "p99.9": _time_us(r["p999_us"]),
                "unfinished / small": f"{int(r['small_unfinished'])} / {int(r['small_flows'])}",
                "timeout frac": _measured(r, "timeout_fraction", "timeout_fraction"),
                "extra bytes small": _measured(r, "extra_bytes", "extra_bytes_small"),
                "extra bytes all": _measured(r, "extra_bytes", "extra_bytes_all"),
                "large tput (Gbps)": _three(r["large_tput_gbps"]),
                "large unfinished": f"{int(r['large_unfinished'])} / {int(r['large_flows'])}",
            }
        )
    for _, r in rest.iterrows():
        # Pending reasons carry the build's validation error: in full once, under "Not run".
        why = "see Not run" if r["status"] == PENDING else r["reason"]
        rows.append({"rank": "-", "scheme": r["scheme"], "p50": f"{r['status']}: {why}"})
    return pd.DataFrame(rows).fillna("")


def _three(value: Any) -> str:
    """A cell as every page prints numbers: integers as they are, other numbers with three significant
    digits (``1.33``, ``1.50``), no exponent; text unchanged."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return str(bool(value)).lower()
    if isinstance(value, int | np.integer):
        return str(int(value))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    v = float(value)
    return "inf" if math.isinf(v) else display.ratio(v)


def _formatted(frame: pd.DataFrame) -> pd.DataFrame:
    """Every cell as :func:`_three` prints it: the page never shows a raw float."""
    return frame.apply(lambda column: column.map(_three)) if len(frame) else frame


def _markdown_table(frame: pd.DataFrame) -> str:
    def cell(v: Any) -> str:
        return _three(v).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def _counts(table: pd.DataFrame) -> dict[str, int]:
    return {s: int((table["status"] == s).sum()) for s in (OK, FAILED, NOT_APPLICABLE, PENDING)}


def headline(table: pd.DataFrame, meta: Mapping[str, Any]) -> str:
    """One paragraph: what ran, at which scale, how long it took."""
    c = _counts(table)
    return (
        f"Scale `{meta.get('scale')}`: {len(table)} cells ({table['scenario'].nunique()} scenarios x "
        f"{table['scheme'].nunique()} schemes): {c[OK]} with results, {c[FAILED]} failed, "
        f"{c[NOT_APPLICABLE]} n/a, {c[PENDING]} pending. The invocation that wrote this page ran "
        f"{meta.get('ran')} cells in {meta.get('wall_seconds')} s ({meta.get('executor')} executor, "
        f"--jobs {meta.get('jobs')}) and reused {meta.get('skipped')} cells already done."
    )


_METRICS_NOTE = (
    "As docs/metrics.md defines them. Small flows: < 100 KB; FCT percentiles by nearest rank over all small "
    "flows with unfinished ones infinitely late (inf), their number beside them; timeout frac: small flows "
    "with at least one retransmission timeout; extra bytes: bytes sent by every flow beyond the payload of "
    "the completed flows, over that payload; large tput: mean throughput of completed flows >= 1 MB. Rank: "
    "p99 of small flows, then fewer unfinished small flows, then p99.9, then p50."
)


def _sections(table: pd.DataFrame) -> list[tuple[int, str, pd.DataFrame | None, str]]:
    """(heading level, title, table or None, text) in page order."""
    out: list[tuple[int, str, pd.DataFrame | None, str]] = [
        (2, "Overall ranking", ranking_table(table), _METRICS_NOTE),
        (2, "Mean rank by failure", rank_by(table, "failure"), ""),
        (2, "Mean rank by workload", rank_by(table, "workload"), ""),
        (2, "Mean rank by topology", rank_by(table, "topology"), ""),
    ]
    not_measured = not_measured_table(table)
    if not not_measured.empty:
        out.append((2, "Not measured (n/m)", not_measured, ""))
    not_run = not_run_table(table)
    if not not_run.empty:
        out.append((2, "Not run: not applicable or pending", not_run, ""))
    failed = table[table["status"] == FAILED][["scenario", "scheme", "reason"]]
    if not failed.empty:
        out.append((2, "Failed cells", failed.reset_index(drop=True), ""))
    out.append((2, "Scenarios", None, ""))
    for scenario, group in table.groupby("scenario", sort=False):
        out.append((3, str(scenario), scenario_table(group), ""))
    return out


def provenance_line(provenance: Mapping[str, Any] | None) -> str:
    """What made the page, as the HTML pages print it: seed(s), config digest, tailcut version, commit."""
    p = provenance or {}
    seeds = p.get("seeds") or []
    return (
        f"Seed{'s' if len(seeds) > 1 else ''} {', '.join(str(s) for s in seeds) or '-'} · config digest "
        f"`{p.get('config_digest') or 'unknown'}` · tailcut {p.get('tailcut_version') or 'unknown'} · "
        f"commit {p.get('tailcut_commit') or 'unknown'}"
    )


def compare_markdown(
    table: pd.DataFrame, meta: Mapping[str, Any], provenance: Mapping[str, Any] | None = None
) -> str:
    """compare.md: what made it (as :func:`compare_html`), then every section as a Markdown table."""
    title = f"# tailcut compare: {meta.get('suite')}"
    parts = [f"{title}\n\n{provenance_line(provenance)}\n\n{headline(table, meta)}\n"]
    for level, title, frame, text in _sections(table):
        parts.append(f"\n{'#' * level} {title}\n")
        if text:
            parts.append(f"\n{text}\n")
        if frame is not None:
            parts.append("\n" + _markdown_table(frame))
    return "".join(parts)


def heatmap_figure(table: pd.DataFrame) -> Figure:
    """Schemes x scenarios: p99 small-flow FCT over the scenario's best (unfinished flows count as late)."""
    ok = table[table["status"] == OK].copy()
    scenarios = list(dict.fromkeys(ok["scenario"]))
    schemes = list(dict.fromkeys(table["scheme"]))
    best = ok.groupby("scenario")["p99_us"].transform("min")
    ok["ratio"] = ok["p99_us"] / best
    grid = np.full((len(schemes), max(len(scenarios), 1)), np.nan)
    for _, r in ok.iterrows():
        grid[schemes.index(r["scheme"]), scenarios.index(r["scenario"])] = r["ratio"]
    finite = grid[np.isfinite(grid)]
    top = max(float(finite.max()) if finite.size else 2.0, 2.0)
    grid = np.where(np.isinf(grid), top, grid)  # a scheme with unfinished tails shows as the worst colour
    fig = Figure(figsize=(max(6, 0.22 * len(scenarios) + 3), max(3, 0.3 * len(schemes) + 1.5)))
    ax = fig.add_subplot()
    image = ax.imshow(grid, aspect="auto", cmap="viridis_r", norm=LogNorm(vmin=1, vmax=top))
    ax.set_yticks(range(len(schemes)), schemes, fontsize="small")
    ax.set_xticks(range(len(scenarios)), scenarios, rotation=90, fontsize="x-small")
    ax.set_title("p99 FCT of small flows / best p99 in the scenario (blank: not run)")
    fig.colorbar(image, ax=ax, label="x best")
    return fig


def compare_html(
    table: pd.DataFrame, meta: Mapping[str, Any], provenance: Mapping[str, Any] | None = None
) -> str:
    """report.html: what made it (``provenance``: seeds, config digest, version, commit), the heat map and
    every section as an HTML table, numbers with three significant digits or units."""
    title = f"p99 small-flow FCT relative to the best scheme, per scenario ({meta.get('scale')} scale)"
    parts = [
        provenance_html({str(meta.get("suite")): provenance or {}}),
        f"<p>{html.escape(headline(table, meta))}</p>\n",
        _figure_html(title, heatmap_figure(table)),
    ]
    for level, heading, frame, text in _sections(table):
        parts.append(f"<h{level}>{html.escape(heading)}</h{level}>\n")
        if text:
            parts.append(f"<p>{html.escape(text)}</p>\n")
        if frame is not None:
            parts.append(table_html(_formatted(frame)) + "\n")
    return _page(f"tailcut compare: {meta.get('suite')}", "".join(parts))
