"""The comparison's results page: the same tables as Markdown (``compare.md``) and HTML (``report.html``).

Sections: the overall ranking (mean rank, wins, cells with unfinished small flows), with several seeds the
conclusions that flip between them (:mod:`tailcut.compare_seeds`), mean rank by failure, the cells that did
not run and why, failed cells, then one table per scenario ordered by rank. With several seeds figures read
``median [min-max]`` as ``tailcut reproduce`` prints them (:func:`tailcut.seeds.format_spread`).
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
from tailcut.seeds import format_spread


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


def ranking_table(table: pd.DataFrame, per_seed: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per scheme over the scenarios it ran: mean rank, wins, top-3 places, cells with unfinished small
    flows, and the median over scenarios of its p99 relative to the scenario's best p99.

    With ``per_seed`` (several seeds), the mean rank is the median [min-max] over seeds of the scheme's mean
    rank in each seed, and orders the table; the other columns read the cells' medians."""
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
    if per_seed is None:
        return frame.sort_values(["mean rank", "scheme"], kind="stable").reset_index(drop=True)
    from tailcut.compare_seeds import rank_spread

    spreads = rank_spread(per_seed)
    frame["mean rank"] = [spreads[s]["median"] for s in frame["scheme"]]
    frame = frame.sort_values(["mean rank", "scheme"], kind="stable").reset_index(drop=True)
    frame["mean rank"] = [format_spread(spreads[s], _three) for s in frame["scheme"]]
    return frame


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


def _spread(r: pd.Series, column: str, fmt: Any) -> str:
    """A cell's figure as ``median [min-max]`` when the table has its range (several seeds), else as it is."""
    if f"{column}_min" not in r.index:
        return fmt(r[column])

    def known(v: Any) -> float | None:
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    stats = {"median": known(r[column]), "min": known(r[f"{column}_min"]), "max": known(r[f"{column}_max"])}
    return format_spread(stats, fmt)


def _count(value: Any) -> str:
    """A count, or a median of counts over an even number of seeds (``2.5``)."""
    v = float(value)
    return str(int(v)) if v.is_integer() else _num(v, 3)


def scenario_table(group: pd.DataFrame) -> pd.DataFrame:
    """One scenario: schemes that ran by rank, then the others with their status; with several seeds
    rank, p50, p99 and p99.9 as median [min-max]."""
    ran = group[group["status"] == OK].sort_values(["rank", "scheme"], kind="stable")
    rest = group[group["status"] != OK]
    rows = []
    for _, r in ran.iterrows():
        rows.append(
            {
                "rank": _spread(r, "rank", lambda v: _num(v, 3)),
                "scheme": r["scheme"],
                "p50": _spread(r, "p50_us", _time_us),
                "p99": _spread(r, "p99_us", _time_us),
                "p99.9": _spread(r, "p999_us", _time_us),
                "unfinished / small": f"{_count(r['small_unfinished'])} / {_count(r['small_flows'])}",
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
    """One paragraph: what ran, at which scale and seeds, how long it took."""
    c = _counts(table)
    seeds = list(meta.get("seeds") or [])
    if len(seeds) > 1:
        return (
            f"Scale `{meta.get('scale')}`, {len(seeds)} seeds ({', '.join(map(str, seeds))}): {len(table)} "
            f"cells ({table['scenario'].nunique()} scenarios x {table['scheme'].nunique()} schemes): "
            f"{c[OK]} with results in at least one seed, {c[FAILED]} failed in every seed, "
            f"{c[NOT_APPLICABLE]} n/a, {c[PENDING]} pending. The invocation that wrote this page ran "
            f"{meta.get('ran')} runs (one per cell and seed) in {meta.get('wall_seconds')} s "
            f"({meta.get('executor')} executor, --jobs {meta.get('jobs')}) and reused {meta.get('skipped')} "
            "runs already done."
        )
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


_SEEDS_NOTE = (
    " Over several seeds every cell runs once per seed and is ranked within its scenario in each seed; a "
    "cell's figures are its medians over the seeds it ran in (ranges in compare.parquet's `_min` / `_max` "
    "columns, each seed's table in compare_seeds.parquet) and its rank the median of its per-seed ranks. "
    "Mean rank: median [min-max] over the seeds of the scheme's mean rank in each seed; wins, top 3 and "
    "the other columns count the cells' medians."
)

Section = tuple[int, str, pd.DataFrame | None, str]


def _flip_sections(table: pd.DataFrame, per_seed: pd.DataFrame) -> list[Section]:
    """The conclusions that do not hold in every seed: neighbours of the overall ranking that swap, and
    scenario winners that change (:mod:`tailcut.compare_seeds`)."""
    from tailcut.compare_seeds import adjacent_flips, winner_flips

    order = list(ranking_table(table, per_seed)["scheme"])
    pairs = adjacent_flips(per_seed, order)
    winners = winner_flips(per_seed)
    scenarios = table.loc[table["status"] == OK, "scenario"].nunique()
    text = (
        f"{len(pairs)} of the {max(len(order) - 1, 0)} neighbouring pairs of the overall ranking swap "
        f"order in some seed (each is better on mean rank in one seed and worse in another; per seed: "
        f"`a 1.5 < b 2`, a ranks better); the winner (rank 1, ties joined by =) of {len(winners)} of the "
        f"{scenarios} scenarios changes with the seed."
    )
    out: list[Section] = [(2, "Conclusions that flip between seeds", None, text)]
    seeds = sorted(per_seed["seed"].unique())
    if pairs:
        frame = pd.DataFrame(
            [{"pair": f["pair"], **{f"seed {s}": f["orders"].get(int(s), "-") for s in seeds}} for f in pairs]
        )
        out.append((3, "Neighbours in the overall ranking that swap", frame, ""))
    if winners:
        frame = pd.DataFrame(
            [{"scenario": f["scenario"], **{f"seed {s}": f["winners"].get(int(s), "-") for s in seeds}}
             for f in winners]
        )  # fmt: skip
        out.append((3, "Scenario winners that change with the seed", frame, ""))
    return out


def _failed(table: pd.DataFrame, per_seed: pd.DataFrame | None) -> pd.DataFrame:
    """The runs that failed: per cell, or with several seeds per cell and seed (a cell may fail in one)."""
    if per_seed is None:
        return table[table["status"] == FAILED][["scenario", "scheme", "reason"]].reset_index(drop=True)
    failed = per_seed[per_seed["status"] == FAILED]
    return failed[["scenario", "scheme", "seed", "reason"]].reset_index(drop=True)


def _sections(table: pd.DataFrame, per_seed: pd.DataFrame | None = None) -> list[Section]:
    """(heading level, title, table or None, text) in page order; ``per_seed`` adds what several seeds
    show."""
    note = _METRICS_NOTE + (_SEEDS_NOTE if per_seed is not None else "")
    out: list[Section] = [(2, "Overall ranking", ranking_table(table, per_seed), note)]
    if per_seed is not None:
        out += _flip_sections(table, per_seed)
    out += [
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
    failed = _failed(table, per_seed)
    if not failed.empty:
        out.append((2, "Failed cells", failed, ""))
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
    table: pd.DataFrame,
    meta: Mapping[str, Any],
    provenance: Mapping[str, Any] | None = None,
    per_seed: pd.DataFrame | None = None,
) -> str:
    """compare.md: what made it (as :func:`compare_html`), then every section as a Markdown table;
    ``per_seed``: each seed's table, for a comparison over several seeds."""
    title = f"# tailcut compare: {meta.get('suite')}"
    parts = [f"{title}\n\n{provenance_line(provenance)}\n\n{headline(table, meta)}\n"]
    for level, title, frame, text in _sections(table, per_seed):
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
    table: pd.DataFrame,
    meta: Mapping[str, Any],
    provenance: Mapping[str, Any] | None = None,
    per_seed: pd.DataFrame | None = None,
) -> str:
    """report.html: what made it (``provenance``: seeds, config digest, version, commit), the heat map and
    every section as an HTML table, numbers with three significant digits or units."""
    title = f"p99 small-flow FCT relative to the best scheme, per scenario ({meta.get('scale')} scale)"
    parts = [
        provenance_html({str(meta.get("suite")): provenance or {}}),
        f"<p>{html.escape(headline(table, meta))}</p>\n",
        _figure_html(title, heatmap_figure(table)),
    ]
    for level, heading, frame, text in _sections(table, per_seed):
        parts.append(f"<h{level}>{html.escape(heading)}</h{level}>\n")
        if text:
            parts.append(f"<p>{html.escape(text)}</p>\n")
        if frame is not None:
            parts.append(table_html(_formatted(frame)) + "\n")
    return _page(f"tailcut compare: {meta.get('suite')}", "".join(parts))
