"""Figures of a group of flows in the units the results pages print (ms), from the one metric
definition (:func:`tailcut.summary.summary_stats`, ``docs/metrics.md``); nothing is redefined here."""

from __future__ import annotations

from typing import Any

NS_PER_MS = 1e6


def fct_figures(flows: Any) -> dict[str, float]:
    """Count, completed, mean and percentiles of completion time (ms), timeout fraction and byte ratios.

    An unfinished flow makes a percentile that falls among the unfinished ``inf``, as the metric says.
    """
    from tailcut.summary import summary_stats

    stats = summary_stats(flows)
    return {
        "flows": float(stats["count"]),
        "completed": float(stats["completed"]),
        "unfinished": float(stats["unfinished"]),
        "mean_ms": stats["mean_fct_ns"] / NS_PER_MS,
        "p50_ms": stats["p50_fct_ns"] / NS_PER_MS,
        "p95_ms": stats["p95_fct_ns"] / NS_PER_MS,
        "p99_ms": stats["p99_fct_ns"] / NS_PER_MS,
        "p999_ms": stats["p999_fct_ns"] / NS_PER_MS,
        "timeout_fraction": float(stats["timeout_fraction"]),
        "extra_bytes": float(stats["extra_bytes_ratio"]),
        "redundant_bytes": float(stats["redundant_bytes_ratio"]),
    }


def schemes_in_order(tables: Any) -> list[str]:
    """The schemes of a run in the config's order (the order the results pages list them)."""
    named = [s.get("name") for s in tables.config.get("schemes", []) if isinstance(s, dict)]
    present = set(tables.flows["scheme"].unique()) if len(tables.flows) else set()
    ordered = [s for s in named if s in present]
    return ordered + sorted(present - set(ordered))
