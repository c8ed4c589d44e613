"""DCQUIC (``docs/results-dcquic.md``): ``experiments/dcquic/``, figures as ``tailcut-bench`` prints them."""

from __future__ import annotations

from tailcut.reproduce.generic import METRICS, bench_rows, first_scheme
from tailcut.reproduce.paper import Entry, Group, Paper


def _entry(stem: str) -> Entry:
    return Entry(stem, f"experiments/dcquic/{stem}.toml")


PAPER = Paper(
    name="dcquic",
    title="DCQUIC (docs/results-dcquic.md)",
    groups=(
        Group("Connection set-up + one RPC (Sec. 4.1)", (_entry("rpc"),)),
        Group("Maximum packet size negotiation (Sec. 4.2)", (_entry("mps"),)),
        Group("Proactive connection migration (Sec. 4.3)", (_entry("migration"),)),
        Group("FEC-protected tails (not in the paper)", (_entry("tail_fec"),)),
    ),
    rows=bench_rows,
    metrics=METRICS,
    main="p99_ms",
    baseline=first_scheme,
)
