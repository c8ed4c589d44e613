"""CloudBurst (``docs/results-cloudburst.md``), per scheme and message size of each component: p50 / mean /
p99 message completion time, timeouts and the coding rate (bytes sent over the completed messages' source
packets of 1460 B: Fig. 14's coded packets / K for CloudBurst; retransmissions and replicas for TCP
schemes). A component named ``bg`` (long-lived background) is its sending rate instead: bytes sent minus
retransmitted over the run time, in Mbps."""

from __future__ import annotations

import math

from tailcut.reproduce.measures import fct_figures, schemes_in_order
from tailcut.reproduce.paper import Entry, Group, Metric, Paper, Row, RunTables

SYMBOL_BYTES = 1460
NS_PER_S = 1e9


def _entry(stem: str) -> Entry:
    return Entry(stem, f"experiments/cloudburst/{stem}.toml")


def _figures(flows) -> dict[str, float]:
    values = fct_figures(flows)
    done = flows[flows["completed"].astype(bool)]
    source = ((done["size_bytes"] + SYMBOL_BYTES - 1) // SYMBOL_BYTES).clip(lower=1) * SYMBOL_BYTES
    values["timeouts"] = float(flows["timeouts"].sum())
    values["coding_rate"] = float(done["sent_bytes"].sum()) / max(float(source.sum()), 1.0)
    return values


def _max_time_ns(tables: RunTables) -> float:
    """The run's end (``max_time``) as the core resolved it: a duration in ns or a string with a unit."""
    value = tables.config.get("max_time")
    if isinstance(value, int | float):
        return float(value)
    units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    text = str(value)
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return math.nan


def rows(tables: RunTables, _entry: Entry) -> list[Row]:
    flows = tables.flows
    components = list(dict.fromkeys(flows["component"])) if len(flows) else []
    out = []
    for scheme in schemes_in_order(tables):
        mine = flows[flows["scheme"] == scheme]
        for component in components:
            part = mine[mine["component"] == component]
            if not len(part):
                continue
            if component == "bg":
                payload = (
                    part["sent_bytes"] - part["retransmitted_bytes"].clip(upper=part["sent_bytes"])
                ).sum()
                seconds = (_max_time_ns(tables) - float(part["start_ns"].min())) / NS_PER_S
                out.append(Row(scheme, "bg", {"bg_mbps": float(payload) * 8 / seconds / 1e6}))
                continue
            sizes = sorted(part["size_bytes"].unique())
            if len(sizes) > 1:
                for size in sizes:
                    label = f"{component} {size // 1000}KB"
                    out.append(Row(scheme, label, _figures(part[part["size_bytes"] == size])))
            out.append(Row(scheme, f"{component} all", _figures(part)))
    return out


def baseline(scheme: str, schemes: list[str]) -> str | None:
    """CloudBurst's claim is against DCTCP, the files' first scheme."""
    return "dctcp" if scheme.startswith("cloudburst") and "dctcp" in schemes else None


PAPER = Paper(
    name="cloudburst",
    title="CloudBurst (docs/results-cloudburst.md)",
    groups=(
        Group("Testbed", tuple(_entry(f"testbed_{r}") for r in (800, 1600, 2000))),
        Group("Ablation, 2000 requests/s", (_entry("ablation_2000"),)),
        Group("Incast, 90 KB messages", tuple(_entry(f"incast_{n}") for n in (4, 8, 16, 32, 64))),
        Group("Failed paths, 2000 requests/s", tuple(_entry(f"failed_paths_{k}") for k in range(4))),
        Group("Friendliness", tuple(_entry(f"friendliness_{p}") for p in (350, 500, 750, 900, 1000))),
        Group(
            "Leaf-spine, 144 hosts",
            (_entry("leafspine_2000"), _entry("leafspine_core_degraded"), _entry("leafspine_core_failed")),
        ),
        Group("2:1 oversubscribed", (_entry("oversub_2to1"),)),
    ),
    rows=rows,
    metrics=(
        Metric("p50_ms", "p50 ms"),
        Metric("mean_ms", "mean ms"),
        Metric("p99_ms", "p99 ms"),
        Metric("timeouts", "timeouts", "{:.0f}"),
        Metric("coding_rate", "coding rate", "{:.3f}"),
        Metric("unfinished", "unfinished", "{:.0f}"),
        Metric("bg_mbps", "bg Mbps", "{:.0f}"),
    ),
    main="p99_ms",
    baseline=baseline,
)
