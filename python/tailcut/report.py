"""Self-contained HTML reports: inline SVG figures (matplotlib, Agg, no pyplot state) and summary tables.

One module draws for single runs, sweeps and ``tailcut report`` over several folders, so the figures look
the same everywhere. Series are labelled ``<folder>: <scheme>`` when more than one folder is shown.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from tailcut.extras import MissingExtraError

try:
    import matplotlib
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
except ImportError as exc:
    raise MissingExtraError("plot", "drawing a report", "matplotlib") from exc

from tailcut import display, testbed
from tailcut.provenance import provenance
from tailcut.results import Result
from tailcut.summary import (
    NOT_MEASURED_COLUMNS,
    PERCENTILES,
    SIZE_CLASSES,
    SMALL_MAX_BYTES,
    not_measured,
    percentile,
    size_class,
)

matplotlib.use("Agg")

TITLE_CDF = "FCT CDF of small flows (< 100 KB)"
TITLE_P99 = "p99 FCT by scheme and size class"
TITLE_TIMEOUTS = "Timeout fraction by scheme and size class"
TITLE_FCT_CCDF = "FCT CCDF, all flows (log-log)"
TITLE_SLOWDOWN_CCDF = "Slowdown CCDF, all flows (log-log)"
TITLE_P99_SLOWDOWN = "p99 slowdown by scheme and size class"
TITLE_BY_SIZE = "FCT and slowdown percentiles by flow size"
# The run report's figures, in page order.
RUN_TITLES = (TITLE_FCT_CCDF, TITLE_SLOWDOWN_CCDF, TITLE_CDF, TITLE_P99, TITLE_P99_SLOWDOWN, TITLE_TIMEOUTS)
# What a report prints for a metric the scheme's engine does not count (docs/metrics.md): never 0.
NOT_MEASURED_TEXT = "n/m"

# Tables take the page's width and wrap their headers; one still too wide scrolls inside its own box
# (div.table) instead of being cut at the window's edge.
_STYLE = """
body { font-family: sans-serif; margin: 2em; }
p, ul { max-width: 1100px; }
figure { margin: 1.5em 0; } figcaption { font-weight: bold; margin-bottom: .3em; }
figure svg { max-width: 100%; height: auto; }
div.table { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #f3f3f3; } .error { color: #a00; white-space: pre-wrap; }
.provenance { color: #444; font-size: 0.9em; }
"""


def _svg(fig: Figure) -> str:
    """Render a figure as an inline <svg> element; text stays text so titles are searchable."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tailcut"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})  # reproducible
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure_html(title: str, fig: Figure) -> str:
    return f"<figure><figcaption>{html.escape(title)}</figcaption>\n{_svg(fig)}</figure>\n"


def _log_locator(axis: Axis) -> LogLocator:
    """Ticks of a log axis that do not run into each other: 1, 2 and 5 per decade over a range under 2.5
    decades (so it still has a few), else one per decade (at most seven ticks)."""
    # The axes' limits, autoscaled to the data drawn so far (get_view_interval may still be stale).
    low, high = axis.axes.get_xlim() if axis.axis_name == "x" else axis.axes.get_ylim()
    decades = np.log10(high / low) if low > 0 and high > low else 1.0
    if decades < 2.5:
        return LogLocator(base=10, subs=(1.0, 2.0, 5.0))
    return LogLocator(base=10, subs=(1.0,), numticks=7)


def time_axis(axis: Axis) -> None:
    """Ticks of an axis of nanoseconds read as the tables do ("100 us", "1.00 ms"), not as bare numbers
    under a unit label; on a log axis few enough that the labels never overlap (:func:`_log_locator`).
    Call it after the data is drawn: the ticks depend on the axis' range."""
    if axis.get_scale() == "log":
        axis.set_major_locator(_log_locator(axis))
    else:
        axis.set_major_locator(MaxNLocator(nbins=6))
    axis.set_major_formatter(FuncFormatter(lambda value, _: display.time_ns(value)))
    axis.set_minor_formatter(NullFormatter())


def number_axis(axis: Axis) -> None:
    """Ticks of an axis of plain numbers (slowdown, a CCDF's probability): "0.01", "1", "100"."""
    log = axis.get_scale() == "log"
    axis.set_major_locator(_log_locator(axis) if log else MaxNLocator(nbins=6))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def fraction_axis(axis: Axis) -> None:
    """Ticks of an axis of fractions read as percentages, as in the tables."""
    axis.set_major_formatter(FuncFormatter(lambda value, _: display.fraction(value)))


def _series_label(label: str, scheme: object, many: bool) -> str:
    return f"{label}: {scheme}" if many else str(scheme)


def fct_cdf_figure(flows_by_label: Mapping[str, pd.DataFrame]) -> Figure:
    """CDF of completed small flows' FCT, one line per (folder, scheme)."""
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    many = len(flows_by_label) > 1
    for label, flows in flows_by_label.items():
        small = flows[flows["size_bytes"] < SMALL_MAX_BYTES]
        for scheme, group in small.groupby("scheme", sort=True):
            done = group["completed"].astype(bool)
            fct_ns = np.sort(group.loc[done, "fct_ns"].astype(float).dropna().to_numpy())
            if len(fct_ns) == 0:
                continue
            # Normalised by all small flows, so unfinished ones keep the curve below 1 instead of vanishing.
            unfinished = len(group) - len(fct_ns)
            name = _series_label(label, scheme, many) + (f" ({unfinished} unfinished)" if unfinished else "")
            ax.step(fct_ns, np.arange(1, len(fct_ns) + 1) / len(group), where="post", label=name)
    ax.set_xscale("log")
    time_axis(ax.xaxis)
    ax.set_xlabel("FCT")
    ax.set_ylabel("CDF")
    ax.set_title(TITLE_CDF)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def _ccdf_figure(
    flows_by_label: Mapping[str, pd.DataFrame],
    column: str,
    title: str,
    xlabel: str,
    axis: Callable[[Axis], None],
) -> Figure:
    """P(X > x) of ``column`` over all flows on log-log axes, one line per (folder, scheme).

    Normalised by all flows, unfinished ones included, so the curve ends at the unfinished share instead
    of dropping to 0 (which a log axis cannot show anyway): a scheme with unfinished flows keeps a tail.
    """
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    many = len(flows_by_label) > 1
    floor = 1.0
    for label, flows in flows_by_label.items():
        for scheme, group in flows.groupby("scheme", sort=True):
            done = group["completed"].astype(bool)
            values = np.sort(group.loc[done, column].astype(float).dropna().to_numpy())
            values = values[values > 0]
            if len(values) == 0:
                continue
            n = len(group)
            unfinished = n - len(values)
            ccdf = 1.0 - np.arange(1, len(values) + 1) / n
            keep = ccdf > 0
            floor = min(floor, 1.0 / n)
            name = _series_label(label, scheme, many) + (f" ({unfinished} unfinished)" if unfinished else "")
            ax.step(values[keep], ccdf[keep], where="post", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, 1.05)
    axis(ax.xaxis)
    number_axis(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(X > x)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def fct_ccdf_figure(flows_by_label: Mapping[str, pd.DataFrame]) -> Figure:
    """CCDF of every flow's FCT, log-log, as the papers draw tails."""
    return _ccdf_figure(flows_by_label, "fct_ns", TITLE_FCT_CCDF, "FCT", time_axis)


def slowdown_ccdf_figure(flows_by_label: Mapping[str, pd.DataFrame]) -> Figure:
    """CCDF of every flow's slowdown (FCT over the flow's ideal FCT on an empty fabric), log-log."""
    return _ccdf_figure(
        flows_by_label, "slowdown", TITLE_SLOWDOWN_CCDF, "slowdown (FCT / ideal FCT)", number_axis
    )


BY_SIZE_PERCENTILES = ("p50", "p99", "p999")


def by_size_table(flows: pd.DataFrame) -> pd.DataFrame:
    """Per scheme and size class (:data:`tailcut.summary.SIZE_CLASSES`, the summary's bins): flows,
    unfinished, p50 / p99 / p99.9 of FCT and of slowdown, by nearest rank with unfinished flows infinitely
    late (:func:`tailcut.summary.percentile`, as the summary's FCT percentiles)."""
    rows: list[dict[str, object]] = []
    classes = size_class(flows["size_bytes"]) if len(flows) else pd.Series([], dtype=object)
    for scheme, group in flows.groupby("scheme", sort=True):
        for cls in SIZE_CLASSES:
            part = group if cls == "all" else group[classes.loc[group.index] == cls]
            done = part["completed"].astype(bool)
            unfinished = int((~done).sum())
            row: dict[str, object] = {"scheme": scheme, "size_class": cls, "count": len(part)}
            row["unfinished"] = unfinished
            for column, suffix in (("fct_ns", "fct_ns"), ("slowdown", "slowdown")):
                values = (
                    part.loc[done, column].astype(float) if column in part else pd.Series([], dtype=float)
                )
                # A slowdown the engine did not give (NaN for a finished flow) is not measured: no figure.
                measured = np.sort(values.dropna().to_numpy())
                complete = len(measured) == int(done.sum())
                for name in BY_SIZE_PERCENTILES:
                    row[f"{name}_{suffix}"] = (
                        percentile(measured, unfinished, PERCENTILES[name]) if complete else np.nan
                    )
            rows.append(row)
    return pd.DataFrame(rows)


def _unfinished_note(group: pd.DataFrame) -> str:
    """`` (N unfinished)`` for a scheme's summary rows with unfinished flows, else nothing."""
    rows = group[group["size_class"] == "all"] if "size_class" in group else group
    n = int(rows["unfinished"].sum()) if "unfinished" in rows else 0
    return f" ({n} unfinished)" if n else ""


def bars_figure(
    summaries: Mapping[str, pd.DataFrame],
    column: str,
    title: str,
    ylabel: str,
    log: bool = False,
    axis: Callable[[Axis], None] = fraction_axis,
) -> Figure:
    """Grouped bars: one group per size class, one bar per (folder, scheme); ``axis`` formats the values'
    ticks (:func:`time_axis` for nanoseconds, :func:`fraction_axis` for fractions)."""
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    many = len(summaries) > 1
    series = [
        (
            _series_label(label, scheme, many) + _unfinished_note(group),
            group.set_index("size_class")[column],
            group.set_index("size_class")["count"] if "count" in group else pd.Series(dtype=float),
        )
        for label, summary in summaries.items()
        for scheme, group in summary.groupby("scheme", sort=True)
    ]
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(SIZE_CLASSES))
    for i, (name, values, sizes) in enumerate(series):
        heights = np.array([float(values.get(cls, np.nan)) for cls in SIZE_CLASSES])
        xs = x + i * width - 0.4 + width / 2
        ax.bar(xs, np.where(np.isfinite(heights), heights, 0), width, label=name)
        # A tail among unfinished flows is infinite (docs/metrics.md): marked, not drawn off the axis.
        for at in xs[np.isinf(heights)]:
            ax.text(at, 0.01, "inf", transform=ax.get_xaxis_transform(), ha="center", fontsize="x-small")
        # No figure for flows that exist: the engine does not count it (n/m), which must not read as 0.
        counts = np.array([float(sizes.get(cls, 0)) for cls in SIZE_CLASSES])
        for at in xs[np.isnan(heights) & (counts > 0)]:
            ax.text(
                at, 0.01, NOT_MEASURED_TEXT, transform=ax.get_xaxis_transform(), ha="center",
                fontsize="x-small", rotation=90,
            )  # fmt: skip
    ax.set_xticks(x, list(SIZE_CLASSES))
    positive = [float(v) for _, values, _ in series for v in values if 0 < v < np.inf]
    if log and positive and max(positive) / min(positive) > 20:
        # Tails span orders of magnitude across size classes; the floor keeps the bars' lengths meaningful.
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(positive) / 3)
    else:
        # All-zero bars (no timeout anywhere) would otherwise centre the axis on 0, ticks below it.
        ax.set_ylim(bottom=0)
    axis(ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    if series:
        ax.legend(fontsize="small")
    return fig


# Column headers of the summary tables and how their values read (docs/metrics.md defines them).
_DISPLAY_COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "mean_fct_ns": ("mean FCT", display.time_ns),
    "p50_fct_ns": ("p50 FCT", display.time_ns),
    "p95_fct_ns": ("p95 FCT", display.time_ns),
    "p99_fct_ns": ("p99 FCT", display.time_ns),
    "p999_fct_ns": ("p99.9 FCT", display.time_ns),
    "timeout_fraction": ("flows with a timeout", display.fraction),
    "extra_bytes_ratio": ("extra bytes", display.fraction),
    "redundant_bytes_ratio": ("redundant bytes", display.fraction),
}

METRICS_HTML = (
    "<p class='metrics'>Size classes: small &lt; 100 KB &le; medium &lt; 1 MB &le; large (KB = 1000 B). "
    "FCT percentiles by nearest rank over all flows of a class, unfinished flows counted as infinitely "
    "late (a percentile among them reads <i>inf (unfinished)</i>); the mean is over completed flows. "
    "Flows with a timeout: share of all flows with at least one retransmission timeout (SYN timeouts "
    "included). Extra bytes: bytes sent beyond the completed flows' payload, over that payload; redundant "
    "bytes: copies, coded packets and replicas over the same payload. Slowdown: a flow's FCT over its "
    "ideal FCT alone on the empty fabric; its percentiles by size class count unfinished flows as "
    "infinitely late too. The CCDFs show P(X &gt; x) over all flows of a scheme, unfinished ones included, "
    "so a curve ends at the unfinished share. <i>n/m</i>: not measured, the scheme's engine does not count "
    "the figure (it is not 0). The full definitions are in "
    "docs/metrics.md; the Parquet and JSON outputs hold the raw values (ns, ratios).</p>\n"
)


TESTBED_HTML = (
    "<p class='metrics'>A testbed run: real Linux hosts through the emulated fabric (docs/testbed.md). "
    "Lateness is how late the fabric sent packets against the port model's schedule, and TUN drops are "
    "packets a host's TUN refused; read the FCTs only where both are small. A kernel reports no "
    "per-flow timeouts, so its flows-with-a-timeout figures read n/m; its namespaces' counters "
    "(TCPTimeouts and the rest, summed over hosts) are below.</p>\n"
)


def mask_not_measured(summary: pd.DataFrame, unmeasured: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
    """``summary`` with the columns each scheme's engine does not count (``unmeasured``, by scheme, as
    :func:`tailcut.summary.not_measured` gives it) set to NaN: a figure, not a zero."""
    if not unmeasured or "scheme" not in summary:
        return summary
    masked = summary.copy()
    for scheme, metrics in unmeasured.items():
        rows = masked["scheme"] == scheme
        for metric in metrics:
            for column in NOT_MEASURED_COLUMNS.get(metric, ()):
                if column in masked:
                    masked.loc[rows, column] = np.nan
    return masked


def _not_measured_cells(
    frame: pd.DataFrame, unmeasured: Mapping[str, Mapping[str, str]]
) -> dict[str, pd.Series]:
    """Per column, the rows to print ``n/m``: what a scheme's engine does not count, and a timeout fraction
    that is NaN over flows that exist (a testbed kernel reports no per-flow timeouts)."""
    cells: dict[str, pd.Series] = {}
    schemes = frame["scheme"] if "scheme" in frame else pd.Series([None] * len(frame), index=frame.index)
    for metric, columns in NOT_MEASURED_COLUMNS.items():
        declared = schemes.map(lambda s, m=metric: m in unmeasured.get(s, {}))  # type: ignore[misc]
        for column in columns:
            if column in frame:
                cells[column] = declared.astype(bool)
    if "timeout_fraction" in frame and "count" in frame:
        nan_over_flows = frame["timeout_fraction"].isna() & (frame["count"] > 0)
        cells["timeout_fraction"] = cells.get("timeout_fraction", nan_over_flows) | nan_over_flows
    return cells


def display_table(
    frame: pd.DataFrame, unmeasured: Mapping[str, Mapping[str, str]] | None = None
) -> pd.DataFrame:
    """The summary as a reader sees it: units and three significant digits, columns named in words,
    ``n/m`` where the engine does not count the figure (``unmeasured`` by scheme; never 0)."""
    shown = frame.copy()
    marks = _not_measured_cells(frame, unmeasured or {})
    for column, (_, fmt) in _DISPLAY_COLUMNS.items():
        if column in shown.columns:
            values = [fmt(v) for v in shown[column]]
            if column in marks:
                values = [NOT_MEASURED_TEXT if m else v for v, m in zip(values, marks[column], strict=True)]
            shown[column] = values
    return shown.rename(columns={c: header for c, (header, _) in _DISPLAY_COLUMNS.items()})


def table_html(frame: pd.DataFrame, index: bool = False) -> str:
    """A table as every page shows it: in a box of its own that scrolls if the table is wider than the
    page, never cut at the window's edge. ``frame`` holds what to print (formatted by the caller)."""
    text = frame.to_html(index=index, na_rep="-", border=0)
    return f"<div class='table'>{text}</div>"


def _table_html(frame: pd.DataFrame, unmeasured: Mapping[str, Mapping[str, str]] | None = None) -> str:
    return table_html(display_table(frame, unmeasured))


def _by_size_html(flows: pd.DataFrame) -> str:
    """The by-size table in units: FCTs as times, slowdowns with three significant digits."""
    frame = by_size_table(flows)
    shown = frame.copy()
    headers = {"p50": "p50", "p99": "p99", "p999": "p99.9"}
    rename = {"size_class": "size class", "count": "flows"}
    for name in BY_SIZE_PERCENTILES:
        if f"{name}_fct_ns" in shown:
            shown[f"{name}_fct_ns"] = [display.time_ns(v) for v in shown[f"{name}_fct_ns"]]
            shown[f"{name}_slowdown"] = [display.ratio(v) for v in shown[f"{name}_slowdown"]]
        rename[f"{name}_fct_ns"] = f"{headers[name]} FCT"
        rename[f"{name}_slowdown"] = f"{headers[name]} slowdown"
    order = ["scheme", "size_class", "count", "unfinished"]
    order += [f"{n}_fct_ns" for n in BY_SIZE_PERCENTILES] + [f"{n}_slowdown" for n in BY_SIZE_PERCENTILES]
    shown = shown[[c for c in order if c in shown]]
    return table_html(shown.rename(columns=rename))


def provenance_html(entries: Mapping[str, Mapping[str, object]]) -> str:
    """What made the page, one line per folder shown: seed(s), config digest, tailcut version and commit
    (:func:`tailcut.provenance.provenance`; a build that does not know its commit says "unknown")."""
    lines = []
    for label, p in entries.items():
        seeds = p.get("seeds")
        seed_text = ", ".join(str(s) for s in seeds) if isinstance(seeds, list | tuple) else str(seeds)
        parts = [
            f"seed{'s' if isinstance(seeds, list | tuple) and len(seeds) > 1 else ''} {seed_text or '-'}",
            f"config digest {p.get('config_digest') or 'unknown'}",
            f"tailcut {p.get('tailcut_version') or 'unknown'}",
            f"commit {p.get('tailcut_commit') or 'unknown'}",
        ]
        who = f"{html.escape(label)}: " if len(entries) > 1 else ""
        lines.append(f"{who}{html.escape(' · '.join(parts))}")
    return "<p class='provenance'>" + "<br>".join(lines) + "</p>\n"


def run_provenance(result: Result) -> dict[str, object]:
    """The provenance line of one run: its config's digest and seed, the version and commit drawing it."""
    config = result.config or None
    entry: dict[str, object] = dict(provenance(config))
    entry["seeds"] = [config.get("seed", "-")] if config else []
    return entry


def _page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )


def run_figures_html(results: Mapping[str, Result]) -> str:
    """The run figures (CDF of small flows, CCDFs of FCT and slowdown, p99 FCT and slowdown and timeout
    fraction by size class) plus the by-size and summary tables, for one or several results side by side."""
    unmeasured = {label: not_measured(r.config) for label, r in results.items()}
    summaries = {label: mask_not_measured(r.summary, unmeasured[label]) for label, r in results.items()}
    flows = {label: r.flows for label, r in results.items()}
    by_size = {label: by_size_table(f) for label, f in flows.items()}
    parts = [
        provenance_html({label: run_provenance(r) for label, r in results.items()}),
        _figure_html(TITLE_FCT_CCDF, fct_ccdf_figure(flows)),
        _figure_html(TITLE_SLOWDOWN_CCDF, slowdown_ccdf_figure(flows)),
        _figure_html(TITLE_CDF, fct_cdf_figure(flows)),
        _figure_html(
            TITLE_P99, bars_figure(summaries, "p99_fct_ns", TITLE_P99, "p99 FCT", log=True, axis=time_axis)
        ),
        _figure_html(
            TITLE_P99_SLOWDOWN,
            bars_figure(
                by_size, "p99_slowdown", TITLE_P99_SLOWDOWN, "p99 slowdown", log=True, axis=number_axis
            ),
        ),
        _figure_html(
            TITLE_TIMEOUTS, bars_figure(summaries, "timeout_fraction", TITLE_TIMEOUTS, "flows with timeouts")
        ),
    ]
    for label, f in flows.items():
        parts.append(f"<h2>{html.escape(TITLE_BY_SIZE)}: {html.escape(label)}</h2>\n{_by_size_html(f)}\n")
    for label, summary in summaries.items():
        parts.append(f"<h2>Summary: {html.escape(label)}</h2>\n{_table_html(summary, unmeasured[label])}\n")
    notes = [
        f"{scheme}: {metric} {NOT_MEASURED_TEXT}, {why}"
        for label in results
        for scheme, metrics in unmeasured[label].items()
        for metric, why in metrics.items()
    ]
    if notes:
        parts.append(
            "<p class='metrics'>Not measured (n/m): "
            + html.escape("; ".join(dict.fromkeys(notes)))
            + ".</p>\n"
        )
    for label, r in results.items():
        quality = testbed.quality_table(r.path) if r.path is not None else None
        if quality is not None:
            parts.append(
                f"<h2>Real-time quality and kernel counters: {html.escape(label)}</h2>\n{TESTBED_HTML}"
                f"{table_html(quality)}\n"
            )
    parts.append(METRICS_HTML)
    return "".join(parts)


def run_report_html(results: Mapping[str, Result]) -> str:
    """A complete HTML page for one or several single-run results."""
    return _page("tailcut report: " + ", ".join(results), run_figures_html(results))


# --- sweeps -------------------------------------------------------------------------------------------------


SWEEP_BAND = "min to max over the seeds"


def seeds_per_point(sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]]) -> int:
    """The most seeds any grid point of the sweeps ran (1 without a ``seed`` column)."""
    counts = [1]
    for summary, keys in sweeps.values():
        point = [k for k in keys if k != "seed" and k in summary]
        if "seed" in summary and not summary.empty:
            counts.append(
                int(summary.groupby([*point, "scheme", "size_class"], dropna=False)["seed"].nunique().max())
            )
    return max(counts)


def sweep_caption(title: str, seeds: int) -> str:
    """A sweep figure's caption says what its line and band are."""
    if seeds > 1:
        return f"{title}: median over {seeds} seeds per point, shaded band {SWEEP_BAND}"
    return f"{title} (one seed per point)"


def sweep_titles(first_key: str) -> tuple[str, str]:
    """Titles of the two sweep figures, shared with the tests."""
    return f"p99 FCT of small flows vs {first_key}", f"Timeout fraction vs {first_key}"


def _x_axis(values: Sequence[object]) -> tuple[dict[object, float], bool]:
    """Map grid values to x positions: numbers on a numeric axis, anything else ("10Gbps") by grid order.

    Returns the mapping and whether the axis is categorical (then every value gets a labelled tick).
    """
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return {v: float(v) for v in values}, False  # type: ignore[arg-type]
    return {v: float(i) for i, v in enumerate(values)}, True


def sweep_figure(
    sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]],
    column: str,
    size_cls: str,
    title: str,
    ylabel: str,
    axis: Callable[[Axis], None] = fraction_axis,
) -> Figure:
    """``column`` of ``size_cls`` vs the first grid key, one line per (folder, scheme, other grid values);
    ``axis`` formats the values' ticks as in :func:`bars_figure`.

    With several seeds per point the line is the median over the seeds of the per-seed statistic and a
    shaded band spans their min to max (:data:`SWEEP_BAND`); with one seed it is that seed's value.
    """
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    many = len(sweeps) > 1
    usable = {label: (s, keys) for label, (s, keys) in sweeps.items() if keys and not s.empty}
    order = list(dict.fromkeys(v for s, keys in usable.values() for v in s[keys[0]]))
    position, categorical = _x_axis(order)
    for label, (summary, grid_keys) in usable.items():
        first, rest = grid_keys[0], [k for k in grid_keys[1:] if k != "seed"]
        part = summary[summary["size_class"] == size_cls]
        for key, group in part.groupby(["scheme", *rest], sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            per_point = group.groupby(first, sort=False)[column]
            medians = per_point.median()
            lows, highs = per_point.min(), per_point.max()
            xs = sorted(medians.index, key=lambda v: position[v])
            extra = ", ".join(f"{k}={v}" for k, v in zip(rest, key[1:], strict=True))
            unfinished = int(group["unfinished"].sum()) if "unfinished" in group else 0
            # Every value NaN over flows that exist: the engine does not count it (n/m), not a zero.
            unmeasured = bool(group[column].isna().all() and group.get("count", pd.Series([1])).sum() > 0)
            name = (
                _series_label(label, key[0], many)
                + (f" ({extra})" if extra else "")
                + (f" ({unfinished} unfinished)" if unfinished else "")
                + (f" ({NOT_MEASURED_TEXT})" if unmeasured else "")
            )
            at = np.array([position[v] for v in xs])
            (line,) = ax.plot(at, [medians[v] for v in xs], marker="o", label=name)
            low = np.array([lows[v] for v in xs], dtype=float)
            high = np.array([highs[v] for v in xs], dtype=float)
            finite = np.isfinite(low) & np.isfinite(high)
            if (low[finite] != high[finite]).any():
                ax.fill_between(at, low, high, where=finite, color=line.get_color(), alpha=0.2, linewidth=0)
            # An infinite point (the percentile fell among unfinished flows) would vanish from the line and
            # leave the scheme looking good: it is marked at the top of the axes instead.
            for v in xs:
                if np.isinf(medians[v]):
                    ax.plot(
                        position[v],
                        0.97,
                        marker="^",
                        color=line.get_color(),
                        transform=ax.get_xaxis_transform(),
                        clip_on=False,
                    )
                    ax.text(
                        position[v],
                        0.99,
                        "inf",
                        transform=ax.get_xaxis_transform(),
                        ha="center",
                        va="bottom",
                        fontsize="x-small",
                        color=line.get_color(),
                    )
        ax.set_xlabel(first)
    # A tick at every grid value when there are few, not at round numbers between them.
    if categorical or all(isinstance(v, int) for v in order) or len(order) <= 8:
        ax.set_xticks([position[v] for v in order], [str(v) for v in order])
    axis(ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def _sweep_provenance(
    sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]], provenances: Mapping[str, Mapping[str, object]]
) -> dict[str, dict[str, object]]:
    """Each sweep's provenance line: its seeds from the table, digest and version as given (the version
    drawing the page when not)."""
    out: dict[str, dict[str, object]] = {}
    for label, (summary, _) in sweeps.items():
        entry: dict[str, object] = {**provenance(), **provenances.get(label, {})}
        seeds = sorted(summary["seed"].dropna().unique().tolist()) if "seed" in summary else []
        entry["seeds"] = [int(s) for s in seeds]
        out[label] = entry
    return out


def sweep_figures_html(
    sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]],
    errors: Mapping[str, str] | None = None,
    provenances: Mapping[str, Mapping[str, object]] | None = None,
    unmeasured: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
) -> str:
    """The two sweep figures, failed points and summary tables, for one or several sweeps. By label:
    ``provenances`` the digest (:func:`tailcut.provenance.provenance`), ``unmeasured`` what each scheme's
    engine does not count (:func:`tailcut.summary.not_measured`)."""
    unmeasured = unmeasured or {}
    sweeps = {
        label: (mask_not_measured(summary, unmeasured.get(label, {})), keys)
        for label, (summary, keys) in sweeps.items()
    }
    first_keys = {keys[0] for _, keys in sweeps.values() if keys}
    first = " / ".join(sorted(first_keys)) or "grid"
    title_p99, title_to = sweep_titles(first)
    seeds = seeds_per_point(sweeps)
    parts = [
        provenance_html(_sweep_provenance(sweeps, provenances or {})),
        _figure_html(
            sweep_caption(title_p99, seeds),
            sweep_figure(sweeps, "p99_fct_ns", "small", title_p99, "p99 FCT, small flows", time_axis),
        ),
        _figure_html(
            sweep_caption(title_to, seeds),
            sweep_figure(sweeps, "timeout_fraction", "all", title_to, "flows with timeouts"),
        ),
    ]
    if errors:
        items = "".join(
            f"<li><b>{html.escape(k)}</b>: <span class='error'>{html.escape(v)}</span></li>"
            for k, v in errors.items()
        )
        parts.append(f"<h2>Failed points</h2><ul>{items}</ul>\n")
    for label, (summary, _) in sweeps.items():
        table = _table_html(summary, unmeasured.get(label, {}))
        parts.append(f"<h2>Summary: {html.escape(label)}</h2>\n{table}\n")
    parts.append(METRICS_HTML)
    return "".join(parts)


def sweep_report_html(
    sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]],
    errors: Mapping[str, str] | None = None,
    provenances: Mapping[str, Mapping[str, object]] | None = None,
    unmeasured: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
) -> str:
    """A complete HTML page for one or several sweeps (arguments as :func:`sweep_figures_html`)."""
    body = sweep_figures_html(sweeps, errors, provenances, unmeasured)
    return _page("tailcut sweep report: " + ", ".join(sweeps), body)


# --- several folders ----------------------------------------------------------------------------------------


def is_sweep_dir(path: Path) -> bool:
    """A sweep folder has summary.parquet and points/; a run folder has summary.json."""
    return (path / "summary.parquet").exists()


def sweep_grid_keys(path: Path) -> list[str]:
    """The grid keys a sweep folder recorded in sweep.json."""
    import json

    meta = path / "sweep.json"
    return list(json.loads(meta.read_text()).get("grid", {})) if meta.exists() else []


def _sweep_dir_provenance(path: Path) -> tuple[dict[str, object], dict[str, dict[str, str]]]:
    """A sweep folder's config digest (the one its marker resumes by) and what its schemes' engines do not
    count (from a point's config)."""
    import json

    from tailcut.config import load_config
    from tailcut.outdir import MARKER

    marker = path / MARKER
    digest = json.loads(marker.read_text()).get("config_hash") if marker.exists() else None
    point = next(iter(sorted((path / "points").glob("*/config.toml"))), None)
    return {"config_digest": digest}, not_measured(load_config(point) if point else None)


def folder_labels(dirs: Sequence[str | Path]) -> list[str]:
    """Each folder's label on a side-by-side page: its name, or as many of its last path parts as make it
    unique among ``dirs`` (``sim/seed-1`` beside ``testbed/seed-1``: one label must not hide the other)."""
    parts = [Path(d).resolve().parts for d in dirs]
    depth = [1] * len(parts)
    while True:
        labels = ["/".join(p[-k:]) for p, k in zip(parts, depth, strict=True)]
        clashes = {
            i for i, label in enumerate(labels) if labels.count(label) > 1 and depth[i] < len(parts[i])
        }
        if not clashes:
            return labels
        for i in clashes:
            depth[i] += 1


def report_dirs(dirs: Sequence[str | Path]) -> str:
    """Redraw the report for result folders side by side: runs as runs, sweeps as sweeps."""
    runs: dict[str, Result] = {}
    sweeps: dict[str, tuple[pd.DataFrame, list[str]]] = {}
    sweep_provenance: dict[str, dict[str, object]] = {}
    sweep_unmeasured: dict[str, dict[str, dict[str, str]]] = {}
    for d, label in zip(dirs, folder_labels(dirs), strict=True):
        path = Path(d)
        if is_sweep_dir(path):
            sweeps[label] = (pd.read_parquet(path / "summary.parquet"), sweep_grid_keys(path))
            sweep_provenance[label], sweep_unmeasured[label] = _sweep_dir_provenance(path)
        elif (path / "flows.parquet").exists():
            runs[label] = Result.load(path)
        else:
            raise FileNotFoundError(f"{path}: not a tailcut result folder (no flows.parquet)")
    body = ""
    if runs:
        body += "<h2>Runs</h2>\n" + run_figures_html(runs)
    if sweeps:
        body += "<h2>Sweeps</h2>\n" + sweep_figures_html(sweeps, None, sweep_provenance, sweep_unmeasured)
    return _page("tailcut report: " + ", ".join([*runs, *sweeps]), body)
