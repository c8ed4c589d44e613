"""Across seeds: which seeds a command runs, each figure as median and range, and rankings that flip.

``tailcut sweep --seeds``, ``tailcut reproduce --seeds`` and ``tailcut compare --seeds`` share these, so
that one seed count means the same runs and one figure reads the same everywhere. Unfinished flows make a
percentile ``inf``, which ranks as the worst; a missing figure (NaN) is left out of every statistic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def seed_range(first: int, count: int) -> list[int]:
    """The seeds of a run of ``count`` seeds starting at the experiment's (or suite's) own ``first``:
    ``first .. first+count-1``, so that one seed is the plain run."""
    return list(range(first, first + count))


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Median (of the middle two when even), minimum and maximum of the non-NaN values, and the values.

    Statistics are None without any value.
    """
    known = sorted(v for v in values if not math.isnan(v))
    if not known:
        return {"median": None, "min": None, "max": None, "values": list(values)}
    mid = len(known) // 2
    median = known[mid] if len(known) % 2 else _midpoint(known[mid - 1], known[mid])
    return {"median": median, "min": known[0], "max": known[-1], "values": list(values)}


def _midpoint(a: float, b: float) -> float:
    # inf + inf / 2 is fine, but inf - inf is not: a midpoint with an infinite end is that end.
    return b if math.isinf(b) or math.isinf(a) else (a + b) / 2


def better(a: float, b: float, higher_is_better: bool) -> int:
    """+1 when ``a`` is better than ``b``, -1 when worse, 0 when equal (both infinite counts as equal)."""
    if a == b:
        return 0
    return (1 if a > b else -1) * (1 if higher_is_better else -1)


def ranking(values: Mapping[str, float], higher_is_better: bool) -> tuple[tuple[str, ...], ...]:
    """Schemes best first, tied schemes grouped (names sorted within a tie)."""
    order = sorted(values.items(), key=lambda kv: (-kv[1] if higher_is_better else kv[1], kv[0]))
    groups: list[list[str]] = []
    last: float | None = None
    for scheme, value in order:
        if groups and value == last:
            groups[-1].append(scheme)
        else:
            groups.append([scheme])
        last = value
    return tuple(tuple(sorted(g)) for g in groups)


def swapped_pairs(
    schemes: list[str], per_seed: list[Mapping[str, float]], higher_is_better: bool
) -> list[str]:
    """The pairs of schemes that are strictly better than each other in different seeds, as ``a/b``:
    the part of a ranking change that says which comparison flips (many are near-ties)."""
    pairs = []
    for i, a in enumerate(schemes):
        for b in schemes[i + 1 :]:
            signs = {better(v[a], v[b], higher_is_better) for v in per_seed}
            if {1, -1} <= signs:
                pairs.append(f"{a}/{b}")
    return pairs


def format_spread(stats: Mapping[str, Any] | None, fmt: Callable[[float], str]) -> str:
    """``median [min-max]`` as every page across seeds prints a figure (just the median when every seed
    agrees, so one seed prints as before); ``-`` without any value."""
    if not stats or stats["median"] is None:
        return "-"
    median, low, high = (fmt(stats[k]) for k in ("median", "min", "max"))
    return median if low == high else f"{median} [{low}-{high}]"


def format_ranking(rank: tuple[tuple[str, ...], ...]) -> str:
    return " < ".join(" = ".join(tie) for tie in rank) if rank else "-"
