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
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
except ImportError as exc:
    raise MissingExtraError("plot", "drawing a report", "matplotlib") from exc

from tailcut import display, testbed
from tailcut.results import Result
from tailcut.summary import SIZE_CLASSES, SMALL_MAX_BYTES

matplotlib.use("Agg")

TITLE_CDF = "FCT CDF of small flows (< 100 KB)"
TITLE_P99 = "p99 FCT by scheme and size class"
TITLE_TIMEOUTS = "Timeout fraction by scheme and size class"

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1100px; }
figure { margin: 1.5em 0; } figcaption { font-weight: bold; margin-bottom: .3em; }
table { border-collapse: collapse; font-size: 0.85em; display: block; overflow-x: auto; }
td, th { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #f3f3f3; } .error { color: #a00; white-space: pre-wrap; }
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


def time_axis(axis: Axis) -> None:
    """Ticks of an axis of nanoseconds read as the tables do ("100 us", "1.00 ms"), not as bare numbers
    under a unit label; on a log axis at 1, 2 and 5 per decade, so a range under a decade still has ticks."""
    if axis.get_scale() == "log":
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: display.time_ns(value)))
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
        (_series_label(label, scheme, many) + _unfinished_note(group), group.set_index("size_class")[column])
        for label, summary in summaries.items()
        for scheme, group in summary.groupby("scheme", sort=True)
    ]
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(SIZE_CLASSES))
    for i, (name, values) in enumerate(series):
        heights = np.array([float(values.get(cls, np.nan)) for cls in SIZE_CLASSES])
        xs = x + i * width - 0.4 + width / 2
        ax.bar(xs, np.where(np.isfinite(heights), heights, 0), width, label=name)
        # A tail among unfinished flows is infinite (docs/metrics.md): marked, not drawn off the axis.
        for at in xs[np.isinf(heights)]:
            ax.text(at, 0.01, "inf", transform=ax.get_xaxis_transform(), ha="center", fontsize="x-small")
    ax.set_xticks(x, list(SIZE_CLASSES))
    positive = [float(v) for _, values in series for v in values if 0 < v < np.inf]
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
    "bytes: copies, coded packets and replicas over the same payload. The full definitions are in "
    "docs/metrics.md; the Parquet and JSON outputs hold the raw values (ns, ratios).</p>\n"
)


TESTBED_HTML = (
    "<p class='metrics'>A testbed run: real Linux hosts through the emulated fabric (docs/testbed.md). "
    "Lateness is how late the fabric sent packets against the port model's schedule, and TUN drops are "
    "packets a host's TUN refused; read the FCTs only where both are small. A kernel reports no "
    "per-flow timeouts, so the flows-with-a-timeout bars are empty for it; its namespaces' counters "
    "(TCPTimeouts and the rest, summed over hosts) are below.</p>\n"
)


def display_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The summary as a reader sees it: units and three significant digits, columns named in words."""
    shown = frame.copy()
    for column, (_, fmt) in _DISPLAY_COLUMNS.items():
        if column in shown.columns:
            shown[column] = [fmt(v) for v in shown[column]]
    return shown.rename(columns={c: header for c, (header, _) in _DISPLAY_COLUMNS.items()})


def _table_html(frame: pd.DataFrame) -> str:
    return display_table(frame).to_html(index=False, na_rep="-", border=0)


def _page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )


def run_figures_html(results: Mapping[str, Result]) -> str:
    """The three run figures plus the summary tables, for one or several results side by side."""
    summaries = {label: r.summary for label, r in results.items()}
    parts = [
        _figure_html(TITLE_CDF, fct_cdf_figure({label: r.flows for label, r in results.items()})),
        _figure_html(
            TITLE_P99, bars_figure(summaries, "p99_fct_ns", TITLE_P99, "p99 FCT", log=True, axis=time_axis)
        ),
        _figure_html(
            TITLE_TIMEOUTS, bars_figure(summaries, "timeout_fraction", TITLE_TIMEOUTS, "flows with timeouts")
        ),
    ]
    for label, summary in summaries.items():
        parts.append(f"<h2>Summary: {html.escape(label)}</h2>\n{_table_html(summary)}\n")
    for label, r in results.items():
        quality = testbed.quality_table(r.path) if r.path is not None else None
        if quality is not None:
            parts.append(
                f"<h2>Real-time quality and kernel counters: {html.escape(label)}</h2>\n{TESTBED_HTML}"
                f"{quality.to_html(index=False, na_rep='-', border=0)}\n"
            )
    parts.append(METRICS_HTML)
    return "".join(parts)


def run_report_html(results: Mapping[str, Result]) -> str:
    """A complete HTML page for one or several single-run results."""
    return _page("tailcut report: " + ", ".join(results), run_figures_html(results))


# --- sweeps -------------------------------------------------------------------------------------------------


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

    Seeds are averaged: the line is the mean over seeds of the per-seed statistic.
    """
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    many = len(sweeps) > 1
    usable = {label: (s, keys) for label, (s, keys) in sweeps.items() if keys and not s.empty}
    order = list(dict.fromkeys(v for s, keys in usable.values() for v in s[keys[0]]))
    position, categorical = _x_axis(order)
    for label, (summary, grid_keys) in usable.items():
        first, rest = grid_keys[0], list(grid_keys[1:])
        part = summary[summary["size_class"] == size_cls]
        for key, group in part.groupby(["scheme", *rest], sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            means = group.groupby(first, sort=False)[column].mean()
            xs = sorted(means.index, key=lambda v: position[v])
            extra = ", ".join(f"{k}={v}" for k, v in zip(rest, key[1:], strict=True))
            unfinished = int(group["unfinished"].sum()) if "unfinished" in group else 0
            name = (
                _series_label(label, key[0], many)
                + (f" ({extra})" if extra else "")
                + (f" ({unfinished} unfinished)" if unfinished else "")
            )
            (line,) = ax.plot([position[v] for v in xs], [means[v] for v in xs], marker="o", label=name)
            # An infinite point (the percentile fell among unfinished flows) would vanish from the line and
            # leave the scheme looking good: it is marked at the top of the axes instead.
            for v in xs:
                if np.isinf(means[v]):
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
    if categorical or all(isinstance(v, int) for v in order):
        ax.set_xticks([position[v] for v in order], [str(v) for v in order])
    axis(ax.yaxis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def sweep_figures_html(
    sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]], errors: Mapping[str, str] | None = None
) -> str:
    """The two sweep figures, failed points and summary tables, for one or several sweeps."""
    first_keys = {keys[0] for _, keys in sweeps.values() if keys}
    first = " / ".join(sorted(first_keys)) or "grid"
    title_p99, title_to = sweep_titles(first)
    parts = [
        _figure_html(
            title_p99,
            sweep_figure(sweeps, "p99_fct_ns", "small", title_p99, "p99 FCT, small flows", time_axis),
        ),
        _figure_html(
            title_to, sweep_figure(sweeps, "timeout_fraction", "all", title_to, "flows with timeouts")
        ),
    ]
    if errors:
        items = "".join(
            f"<li><b>{html.escape(k)}</b>: <span class='error'>{html.escape(v)}</span></li>"
            for k, v in errors.items()
        )
        parts.append(f"<h2>Failed points</h2><ul>{items}</ul>\n")
    for label, (summary, _) in sweeps.items():
        parts.append(f"<h2>Summary: {html.escape(label)}</h2>\n{_table_html(summary)}\n")
    parts.append(METRICS_HTML)
    return "".join(parts)


def sweep_report_html(
    sweeps: Mapping[str, tuple[pd.DataFrame, list[str]]], errors: Mapping[str, str] | None = None
) -> str:
    """A complete HTML page for one or several sweeps."""
    return _page("tailcut sweep report: " + ", ".join(sweeps), sweep_figures_html(sweeps, errors))


# --- several folders ----------------------------------------------------------------------------------------


def is_sweep_dir(path: Path) -> bool:
    """A sweep folder has summary.parquet and points/; a run folder has summary.json."""
    return (path / "summary.parquet").exists()


def sweep_grid_keys(path: Path) -> list[str]:
    """The grid keys a sweep folder recorded in sweep.json."""
    import json

    meta = path / "sweep.json"
    return list(json.loads(meta.read_text()).get("grid", {})) if meta.exists() else []


def report_dirs(dirs: Sequence[str | Path]) -> str:
    """Redraw the report for result folders side by side: runs as runs, sweeps as sweeps."""
    runs: dict[str, Result] = {}
    sweeps: dict[str, tuple[pd.DataFrame, list[str]]] = {}
    for d in dirs:
        path = Path(d)
        label = path.resolve().name
        if is_sweep_dir(path):
            sweeps[label] = (pd.read_parquet(path / "summary.parquet"), sweep_grid_keys(path))
        elif (path / "flows.parquet").exists():
            runs[label] = Result.load(path)
        else:
            raise FileNotFoundError(f"{path}: not a tailcut result folder (no flows.parquet)")
    body = ""
    if runs:
        body += "<h2>Runs</h2>\n" + run_figures_html(runs)
    if sweeps:
        body += "<h2>Sweeps</h2>\n" + sweep_figures_html(sweeps)
    return _page("tailcut report: " + ", ".join([*runs, *sweeps]), body)
