"""T-RACKs (``docs/results-tracks.md``): per AQM, small flows (< 100 KB) without and with the shim: p95
and mean completion time, timeout fraction, the p95 ratio without / with T-RACKs (on the ``+tracks``
row), the mean over all flows, and the shim's counters (recoveries, spoofed ACKs, gave up, spurious)."""

from __future__ import annotations

import math

from tailcut.reproduce.measures import fct_figures, schemes_in_order
from tailcut.reproduce.paper import Entry, Group, Metric, Paper, Row, RunTables

SHIM = "+tracks"
COUNTERS = {
    "recoveries": "tracks_recoveries",
    "spoofed": "tracks_spoofed_acks",
    "gave_up": "tracks_gave_up",
    "spurious": "tracks_spurious_recoveries",
}


def _entry(stem: str) -> Entry:
    return Entry(stem, f"experiments/tracks/{stem}.toml")


def rows(tables: RunTables, _entry: Entry) -> list[Row]:
    from tailcut.summary import size_class

    flows = tables.flows
    counters = {r.get("scheme"): r.get("shim_counters") or {} for r in tables.runs}
    figures: dict[str, dict[str, float]] = {}
    for scheme in schemes_in_order(tables):
        mine = flows[flows["scheme"] == scheme]
        values = fct_figures(mine[size_class(mine["size_bytes"]) == "small"])
        values["all_mean_ms"] = fct_figures(mine)["mean_ms"]
        for key, counter in COUNTERS.items():
            values[key] = float(counters.get(scheme, {}).get(counter, math.nan))
        figures[scheme] = values
    for scheme, values in figures.items():
        without = figures.get(scheme.removesuffix(SHIM)) if scheme.endswith(SHIM) else None
        ratio = math.nan
        if without is not None and values["p95_ms"] > 0:
            ratio = without["p95_ms"] / values["p95_ms"]
        values["p95_ratio"] = ratio
    return [Row(scheme, "small", values) for scheme, values in figures.items()]


def baseline(scheme: str, schemes: list[str]) -> str | None:
    """Each AQM with the shim against the same AQM without it."""
    plain = scheme.removesuffix(SHIM)
    return plain if scheme.endswith(SHIM) and plain in schemes else None


PAPER = Paper(
    name="tracks",
    title="T-RACKs (docs/results-tracks.md)",
    groups=(
        Group(
            "Dumbbell incast (Sec. V-A)",
            tuple(
                _entry(f"case{c}_{n}{v}")
                for c in (1, 2)
                for n in (20, 80)
                for v in ("", "_sack", *(("_sack_gammainf",) if c == 2 else ()))
            ),
        ),
        Group("alpha sensitivity", tuple(_entry(f"alpha_{a}") for a in (1, 5, 10, 50, 100))),
        Group("Spine-leaf, web search", tuple(_entry(f"spine_leaf_{x}") for x in (30, 50, 70, 90))),
        Group("Spine-leaf, data mining", tuple(_entry(f"spine_leaf_dm_{x}") for x in (30, 50, 70, 90))),
        Group("Spine-leaf, SACK", tuple(_entry(f"spine_leaf_sack_{x}") for x in (30, 70))),
    ),
    rows=rows,
    metrics=(
        Metric("p95_ms", "p95 ms"),
        Metric("p95_ratio", "p95 ratio", "{:.1f}x"),
        Metric("mean_ms", "mean ms"),
        Metric("all_mean_ms", "mean ms (all flows)"),
        Metric("timeout_fraction", "timeout frac", "{:.3f}"),
        Metric("unfinished", "unfinished", "{:.0f}"),
        Metric("recoveries", "recoveries", "{:.0f}"),
        Metric("spoofed", "spoofed", "{:.0f}"),
        Metric("gave_up", "gave up", "{:.0f}"),
        Metric("spurious", "spurious", "{:.0f}"),
    ),
    main="p95_ms",
    baseline=baseline,
)
