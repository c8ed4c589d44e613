"""Per-scheme, per-size-class FCT statistics: the numbers a results table in a paper shows.

Rules (kept here in one place because every figure and table depends on them):

- Size classes by flow size in bytes (KB = 1000 B, as in the config units): ``small`` < 100 KB,
  ``medium`` 100 KB .. < 10 MB, ``large`` >= 10 MB, plus ``all``.
- FCT percentiles (p50, p95, p99, p99.9) and the mean are over *completed* flows only, with numpy's linear
  interpolation; flows that did not finish are never silently dropped: ``unfinished`` is reported beside
  them, and ``count`` includes them.
- ``timeout_fraction``: share of all flows in the group (finished or not) with ``timeouts > 0``.
- ``extra_bytes_ratio``: ``sum(sent_bytes - size_bytes) / sum(size_bytes)`` over the group, i.e. the bytes
  put on the wire beyond the payload (retransmissions, FEC, redundancy) per payload byte.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

SMALL_MAX_BYTES = 100_000
LARGE_MIN_BYTES = 10_000_000
SIZE_CLASSES = ("small", "medium", "large", "all")
PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}

SUMMARY_COLUMNS = [
    "size_class",
    "count",
    "completed",
    "unfinished",
    "mean_fct_ns",
    *[f"{name}_fct_ns" for name in PERCENTILES],
    "timeout_fraction",
    "extra_bytes_ratio",
]


def size_class(size_bytes: pd.Series) -> pd.Series:
    """Label each flow small / medium / large by its size."""
    labels = np.where(
        size_bytes < SMALL_MAX_BYTES, "small", np.where(size_bytes < LARGE_MIN_BYTES, "medium", "large")
    )
    return pd.Series(labels, index=size_bytes.index, name="size_class")


def _stats(group: pd.DataFrame) -> dict[str, float | int]:
    completed_mask = group["completed"].astype(bool)
    fct = group.loc[completed_mask, "fct_ns"].astype(float).dropna().to_numpy()
    row: dict[str, float | int] = {
        "count": len(group),
        "completed": int(completed_mask.sum()),
        "unfinished": int((~completed_mask).sum()),
        "mean_fct_ns": float(fct.mean()) if len(fct) else float("nan"),
    }
    for name, q in PERCENTILES.items():
        row[f"{name}_fct_ns"] = float(np.percentile(fct, q)) if len(fct) else float("nan")
    row["timeout_fraction"] = float((group["timeouts"] > 0).mean()) if len(group) else float("nan")
    payload = float(group["size_bytes"].sum())
    if "sent_bytes" in group and payload > 0:
        row["extra_bytes_ratio"] = float((group["sent_bytes"] - group["size_bytes"]).sum()) / payload
    else:
        row["extra_bytes_ratio"] = float("nan")
    return row


def summarize(flows: pd.DataFrame, by: Sequence[str] = ("scheme",)) -> pd.DataFrame:
    """Summarise a flows table into one row per (``by`` columns..., size class).

    Every size class appears for every group, with ``count`` 0 and NaN statistics when it is empty, so that
    tables from different runs line up row for row.
    """
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
            rows.append({**ids, "size_class": cls, **_stats(part)})
    return pd.DataFrame(rows, columns=[*by, *SUMMARY_COLUMNS])
