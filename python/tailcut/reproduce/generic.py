"""Rows shared by the papers whose pages print ``tailcut-bench``'s figures: per scheme, over all flows,
over small flows (< 100 KB, docs/metrics.md) and per workload component when a file has several."""

from __future__ import annotations

from tailcut.reproduce.measures import fct_figures, schemes_in_order
from tailcut.reproduce.paper import Entry, Metric, Row, RunTables

METRICS = (
    Metric("mean_ms", "mean ms"),
    Metric("p95_ms", "p95 ms"),
    Metric("p99_ms", "p99 ms"),
    Metric("timeout_fraction", "timeout frac", "{:.4f}"),
    Metric("extra_bytes", "extra bytes", "{:.3f}"),
    Metric("unfinished", "unfinished", "{:.0f}"),
)


def bench_rows(tables: RunTables, _entry: Entry) -> list[Row]:
    """``all``, ``small`` and one part per component (when there are several) for every scheme."""
    from tailcut.summary import size_class

    flows = tables.flows
    rows = []
    components = list(dict.fromkeys(flows["component"])) if len(flows) else []
    for scheme in schemes_in_order(tables):
        mine = flows[flows["scheme"] == scheme]
        rows.append(Row(scheme, "all", fct_figures(mine)))
        small = mine[size_class(mine["size_bytes"]) == "small"]
        if 0 < len(small) < len(mine):
            rows.append(Row(scheme, "small", fct_figures(small)))
        if len(components) > 1:
            for component in components:
                part = mine[mine["component"] == component]
                rows.append(Row(scheme, component, fct_figures(part)))
    return rows


def first_scheme(scheme: str, schemes: list[str]) -> str | None:
    """Every scheme against the file's first one (the files list their baseline first)."""
    return schemes[0] if schemes and scheme != schemes[0] else None
