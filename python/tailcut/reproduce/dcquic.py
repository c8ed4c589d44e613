"""DCQUIC (``docs/results-dcquic.md``): ``experiments/dcquic/``, figures as ``tailcut-bench`` prints them,
and for the paper's own MPS setting (``mps_paper``) one part per task size as well, since Fig. 4 reads
the MPS gain per size."""

from __future__ import annotations

from tailcut.reproduce.generic import METRICS, bench_rows, first_scheme
from tailcut.reproduce.measures import fct_figures, schemes_in_order
from tailcut.reproduce.paper import Entry, Group, Paper, Row, RunTables

# Entries whose task component draws from a few fixed sizes (``choices``), read per size.
BY_SIZE = frozenset({"mps_paper"})


def _entry(stem: str) -> Entry:
    return Entry(stem, f"experiments/dcquic/{stem}.toml")


def _size(size_bytes: int) -> str:
    if size_bytes >= 1_000_000 and size_bytes % 1_000_000 == 0:
        return f"{size_bytes // 1_000_000}MB"
    return f"{size_bytes // 1000}KB" if size_bytes % 1000 == 0 else f"{size_bytes}B"


def rows(tables: RunTables, entry: Entry) -> list[Row]:
    out = bench_rows(tables, entry)
    if entry.label not in BY_SIZE:
        return out
    flows = tables.flows
    for scheme in schemes_in_order(tables):
        mine = flows[flows["scheme"] == scheme]
        for component in dict.fromkeys(mine["component"]):
            part = mine[mine["component"] == component]
            sizes = sorted(part["size_bytes"].unique())
            if len(sizes) < 2:
                continue
            for size in sizes:
                figures = fct_figures(part[part["size_bytes"] == size])
                out.append(Row(scheme, f"{component} {_size(int(size))}", figures))
    return out


PAPER = Paper(
    name="dcquic",
    title="DCQUIC (docs/results-dcquic.md)",
    groups=(
        Group("Connection set-up + one RPC (Sec. 4.1)", (_entry("rpc"),)),
        Group("Maximum packet size negotiation (Sec. 4.2)", (_entry("mps"),)),
        # The paper's MPS claim (Fig. 4) is on the mean task completion time, per size.
        Group(
            "Maximum packet size in the paper's setting (Sec. 4.2, Fig. 4)",
            (_entry("mps_paper"),),
            main="mean_ms",
        ),
        Group("Proactive connection migration (Sec. 4.3)", (_entry("migration"),)),
        Group("FEC-protected tails (not in the paper)", (_entry("tail_fec"),)),
    ),
    rows=rows,
    metrics=METRICS,
    main="p99_ms",
    baseline=first_scheme,
)
