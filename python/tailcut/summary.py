"""Per-scheme, per-size-class FCT statistics: the numbers a results table in a paper shows.

The rules are ``docs/metrics.md``'s, the same as the Rust ``tailcut_sim::summary`` (the report examples
and ``tailcut-bench`` use that one); ``tests/metrics/cases.json`` holds records with the figures both must
give:

- Size classes by flow size in bytes (KB = 1000 B, as in the config units): ``small`` < 100 KB,
  ``medium`` 100 KB .. < 1 MB, ``large`` >= 1 MB, plus ``all``.
- FCT percentiles (p50, p95, p99, p99.9) by nearest rank over *all* flows of the group, unfinished ones
  counted as infinitely late (a percentile that falls among them is ``inf``); the mean is over completed
  flows only. ``unfinished`` is reported beside them and ``count`` includes it.
- ``timeout_fraction``: share of all flows in the group (finished or not) with ``timeouts > 0``.
- ``extra_bytes_ratio``: bytes every flow sent (finished or not) beyond the payload of the completed
  flows, over that payload; a flow's payload is its size plus its request. An unfinished flow's bytes
  delivered no message, so they are all extra. ``redundant_bytes_ratio``: redundant bytes (copies, coded
  packets, replicas) of every flow over the same payload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


SMALL_MAX_BYTES = 100_000
LARGE_MIN_BYTES = 1_000_000
SIZE_CLASSES = ("small", "medium", "large", "all")
# Thousandths, so that ranks are integers: 99.9 / 100 * 1000 is 999.0000000000001 in floating point.
PERCENTILES = {"p50": 500, "p95": 950, "p99": 990, "p999": 999}

# Metrics an engine does not count, by transport, and why: a report shows them ``n/m`` (not measured),
# never as a zero (docs/metrics.md). The run report takes them from here; ``tailcut compare`` too, merged
# with what a suite's scheme declares (``not_measured``). Keys are the metrics ``compare.NOT_MEASURABLE``
# knows; ``NOT_MEASURED_COLUMNS`` gives the summary columns each one blanks.
NOT_MEASURED: dict[str, dict[str, str]] = {
    "dcquic": {
        "timeout_fraction": "QUIC has no retransmission timeout: quinn repairs loss by packet threshold and "
        "probe timeouts (PTO) and counts neither per stream",
    },
}
NOT_MEASURED_COLUMNS = {"timeout_fraction": ("timeout_fraction",), "extra_bytes": ("extra_bytes_ratio",)}

SUMMARY_COLUMNS = [
    "size_class",
    "count",
    "completed",
    "unfinished",
    "mean_fct_ns",
    *[f"{name}_fct_ns" for name in PERCENTILES],
    "timeout_fraction",
    "extra_bytes_ratio",
    "redundant_bytes_ratio",
]


def percentile(finished: np.ndarray | Sequence[float], unfinished: int, per_mille: int) -> float:
    """The ``per_mille`` percentile by nearest rank of the sorted completion times ``finished`` and
    ``unfinished`` more that count as infinitely late: the value of rank ``ceil(per_mille * n / 1000)``.

    ``inf`` when that rank falls among the unfinished flows, NaN without any flow.
    """
    n = len(finished) + unfinished
    if n == 0:
        return math.nan
    rank = max(-(-per_mille * n // 1000), 1)
    return float(finished[rank - 1]) if rank <= len(finished) else math.inf


def size_class(size_bytes: pd.Series) -> pd.Series:
    """Label each flow small / medium / large by its size."""
    import numpy as np
    import pandas as pd

    labels = np.where(
        size_bytes < SMALL_MAX_BYTES, "small", np.where(size_bytes < LARGE_MIN_BYTES, "medium", "large")
    )
    return pd.Series(labels, index=size_bytes.index, name="size_class")


def payload_bytes(flows: pd.DataFrame) -> pd.Series:
    """Each flow's payload: its size plus its request (tables without requests have none)."""
    return flows["size_bytes"] + flows.get("request_bytes", 0)


def _ratio(x: float, of: float) -> float:
    return x / of if of > 0 else math.nan


def _measured(group: pd.DataFrame, column: str) -> bool:
    """Whether every flow of the group has ``column``: a group only partly counted (on the testbed's
    runtime a failed call has no counters) would read as fewer timeouts or bytes than it had, so it
    is not measured."""
    return column in group and len(group) > 0 and bool(group[column].notna().all())


def summary_stats(group: pd.DataFrame) -> dict[str, float | int]:
    """The figures of one group of flows (see the module doc)."""
    import numpy as np

    completed_mask = group["completed"].astype(bool)
    fct = np.sort(group.loc[completed_mask, "fct_ns"].astype(float).to_numpy())
    unfinished = int((~completed_mask).sum())
    row: dict[str, float | int] = {
        "count": len(group),
        "completed": int(completed_mask.sum()),
        "unfinished": unfinished,
        "mean_fct_ns": float(fct.mean()) if len(fct) else math.nan,
    }
    for name, per_mille in PERCENTILES.items():
        row[f"{name}_fct_ns"] = percentile(fct, unfinished, per_mille)
    # A column not measured for every flow (a testbed's kernel reports no per-flow timeouts or bytes
    # sent) gives NaN, not a fraction of zero.
    timeouts = _measured(group, "timeouts")
    row["timeout_fraction"] = float((group["timeouts"] > 0).mean()) if timeouts else math.nan
    delivered = float(payload_bytes(group)[completed_mask].sum())
    sent = float(group["sent_bytes"].sum()) if _measured(group, "sent_bytes") else math.nan
    redundant = float(group["redundant_bytes"].sum()) if _measured(group, "redundant_bytes") else math.nan
    row["extra_bytes_ratio"] = _ratio(sent, delivered) - 1
    row["redundant_bytes_ratio"] = _ratio(redundant, delivered)
    return row


def summarize(flows: pd.DataFrame, by: Sequence[str] = ("scheme",)) -> pd.DataFrame:
    """Summarise a flows table into one row per (``by`` columns..., size class).

    Every size class appears for every group, with ``count`` 0 and NaN statistics when it is empty, so that
    tables from different runs line up row for row.
    """
    import pandas as pd

    by = [c for c in by if c in flows.columns]
    rows: list[dict[str, object]] = []
    classes = size_class(flows["size_bytes"]) if len(flows) else pd.Series([], dtype=object)
    groups = flows.groupby(by, sort=True, dropna=False) if by else [((), flows)]
    for key, group in groups:
        key_values = key if isinstance(key, tuple) else (key,)
        ids = dict(zip(by, key_values, strict=True))
        group_classes = classes.loc[group.index]
        for cls in SIZE_CLASSES:
            part = group if cls == "all" else group[group_classes == cls]
            rows.append({**ids, "size_class": cls, **summary_stats(part)})
    return pd.DataFrame(rows, columns=[*by, *SUMMARY_COLUMNS])


def not_measured(config: dict | None) -> dict[str, dict[str, str]]:
    """By scheme name (as the flows table's ``scheme`` column has it): the metrics its transport's engine
    does not count, and why (:data:`NOT_MEASURED`); schemes that count everything are left out."""
    out: dict[str, dict[str, str]] = {}
    for scheme in (config or {}).get("schemes", []) or []:
        if isinstance(scheme, dict) and (notes := NOT_MEASURED.get(str(scheme.get("transport")))):
            out[str(scheme.get("name", scheme.get("transport")))] = dict(notes)
    return out


def stall_warnings(runs: Sequence[dict], where: str = "") -> list[str]:
    """One line per scheme run that the stall watchdog ended (``stop_reason = "stalled"`` in
    ``runs.json``): it stopped before ``max_time`` because nothing got through any more."""
    prefix = f"{where}: " if where else ""
    return [
        f"warning: {prefix}{r.get('warning') or 'scheme ' + str(r.get('scheme')) + ' stalled'}"
        for r in runs
        if r.get("stop_reason") == "stalled"
    ]


def unfinished_warnings(summary: pd.DataFrame) -> list[str]:
    """One line per scheme (and grid point) with unfinished flows, naming the size classes and counts.

    A scheme whose flows did not finish must never read as fast: its percentiles count them as infinitely
    late, and the command says so in words too.
    """
    lines = []
    keys = [c for c in summary.columns if c not in SUMMARY_COLUMNS]
    rows = summary[(summary["size_class"] == "all") & (summary["unfinished"] > 0)]
    for _, row in rows.iterrows():
        who = ", ".join(f"{k}={row[k]}" for k in keys if k != "scheme")
        part = summary[(summary["size_class"] != "all") & (summary["unfinished"] > 0)]
        for k in keys:
            part = part[part[k] == row[k]]
        classes = ", ".join(f"{r['size_class']} {int(r['unfinished'])}" for _, r in part.iterrows())
        lines.append(
            f"warning: {row['scheme']}{f' ({who})' if who else ''}: {int(row['unfinished'])} of "
            f"{int(row['count'])} flows unfinished ({classes}); their percentiles count them as "
            "infinitely late"
        )
    return lines
