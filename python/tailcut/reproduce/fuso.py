"""FUSO (``docs/results-fuso.md``), per scheme: the query flows (small flows of the ``query`` component,
every flow when there is none), their mean / p99 completion time, timeout fraction and redundant bytes
over delivered ("extra load"), and for incast files the round completion time (a round is the flows that
start together; it ends with its last flow)."""

from __future__ import annotations

import math

from tailcut.reproduce.measures import NS_PER_MS, fct_figures, schemes_in_order
from tailcut.reproduce.paper import Entry, Group, Metric, Paper, Row, RunTables

RATES = ("0p125", "0p25", "0p5", "1", "2", "4")
LOADS = (10, 30, 50, 70, 90)
FANOUTS = (5, 10, 20, 30, 40, 50, 60, 70)
BUFFERS_KB = (128, 256, 512, 1024)
BUFFER_FANOUTS = (10, 40, 70)


def _entry(stem: str) -> Entry:
    return Entry(stem, f"experiments/fuso/{stem}.toml")


def _rounds(flows) -> dict[str, float]:
    """Mean and worst round completion (ms) over the rounds all of whose flows finished, and how many
    rounds did not finish."""
    finish = flows["finish_ns"].where(flows["completed"].astype(bool))
    per_round = (
        (finish - flows["start_ns"])
        .groupby(flows["start_ns"])
        .agg(lambda x: math.nan if x.isna().any() else float(x.max()))
    )
    done = per_round.dropna()
    return {
        "round_mean_ms": float(done.mean()) / NS_PER_MS if len(done) else math.nan,
        "round_max_ms": float(done.max()) / NS_PER_MS if len(done) else math.nan,
        "rounds_unfinished": float(len(per_round) - len(done)),
    }


def rows(tables: RunTables, _entry: Entry) -> list[Row]:
    from tailcut.summary import size_class

    flows = tables.flows
    components = set(flows["component"]) if len(flows) else set()
    out = []
    for scheme in schemes_in_order(tables):
        mine = flows[flows["scheme"] == scheme]
        if "query" in components:
            mine = mine[(mine["component"] == "query") & (size_class(mine["size_bytes"]) == "small")]
        values = fct_figures(mine)
        if "incast" in components:
            values.update(_rounds(mine))
        out.append(Row(scheme, "queries", values))
    return out


def baseline(scheme: str, schemes: list[str]) -> str | None:
    """FUSO's claim is against TCP; the sub-flow file compares FUSO with MPTCP of the same sub-flows."""
    if scheme.startswith("fuso_") and f"mptcp_{scheme[5:]}" in schemes:
        return f"mptcp_{scheme[5:]}"
    if scheme.startswith("fuso") and "tcp" in schemes:
        return "tcp"
    return None


PAPER = Paper(
    name="fuso",
    title="FUSO (docs/results-fuso.md)",
    groups=(
        Group("Network loss (P1)", tuple(_entry(f"net_loss_{r}") for r in RATES)),
        Group("Edge loss (H4-H6 access links)", tuple(_entry(f"edge_loss_{r}") for r in RATES)),
        Group("Failure + congestion (2% on P1)", tuple(_entry(f"fail_cong_{x}") for x in LOADS)),
        Group("Incast", tuple(_entry(f"incast_{n}") for n in FANOUTS)),
        # Not in the paper: whether FUSO / MPTCP trail TCP in the incast only because the first flights
        # overflow the testbed's 128 KB port; the incast's figure is the round, not one flow's tail.
        Group(
            "Incast and buffers (not in the paper)",
            tuple(_entry(f"incast_buf{b}K_{n}") for b in BUFFERS_KB for n in BUFFER_FANOUTS),
            main="round_mean_ms",
        ),
        Group("Sub-flow count (2% on P1)", (_entry("subflows_2"),)),
        Group("Fat-tree, load 0.5", (_entry("fattree_websearch_50"), _entry("fattree_datamining_50"))),
        Group("FUSO with CP", (_entry("incast_cp_20"), _entry("leafspine_incast_cp"))),
    ),
    rows=rows,
    metrics=(
        Metric("mean_ms", "mean ms"),
        Metric("p99_ms", "p99 ms"),
        Metric("timeout_fraction", "timeout frac", "{:.4f}"),
        Metric("redundant_bytes", "extra load", "{:.3f}"),
        Metric("round_mean_ms", "round mean ms"),
        Metric("round_max_ms", "round worst ms"),
        Metric("unfinished", "unfinished", "{:.0f}"),
    ),
    main="p99_ms",
    baseline=baseline,
)
