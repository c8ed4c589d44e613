"""Across seeds: each figure as median and range, and the conclusions that do not hold in every seed.

A conclusion flips when, on the paper's main metric, (a) the ranking of a part's schemes differs between
seeds (ties rank equal; seeds where a scheme has no value are left out), or (b) a scheme is better than
its baseline in one seed and worse in another. Unfinished flows make a percentile ``inf``, which ranks as
the worst; a missing figure (NaN) is left out of every statistic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tailcut.reproduce.paper import Paper, Row


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


def _better(a: float, b: float, higher_is_better: bool) -> int:
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
            signs = {_better(v[a], v[b], higher_is_better) for v in per_seed}
            if {1, -1} <= signs:
                pairs.append(f"{a}/{b}")
    return pairs


def format_ranking(rank: tuple[tuple[str, ...], ...]) -> str:
    return " < ".join(" = ".join(tie) for tie in rank) if rank else "-"


def aggregate_entry(
    paper: Paper,
    per_seed: Mapping[int, list[Row]],
    main: str | None = None,
    higher_is_better: bool | None = None,
) -> dict[str, Any]:
    """The rows of one entry over its seeds (``per_seed``: seed -> rows of that run), conclusions checked
    on ``main`` (default: the paper's)."""
    main = paper.main if main is None else main
    higher_is_better = paper.higher_is_better if higher_is_better is None else higher_is_better
    seeds = sorted(per_seed)
    keys: list[tuple[str, str]] = []
    table: dict[tuple[str, str], dict[int, Mapping[str, float]]] = {}
    for seed in seeds:
        for row in per_seed[seed]:
            key = (row.part, row.scheme)
            if key not in table:
                keys.append(key)
                table[key] = {}
            table[key][seed] = row.values
    rows = []
    schemes_by_part: dict[str, list[str]] = {}
    for part, scheme in keys:
        schemes_by_part.setdefault(part, []).append(scheme)
    for part, scheme in keys:
        by_seed = table[(part, scheme)]
        names = list(dict.fromkeys(k for values in by_seed.values() for k in values))
        metrics = {
            name: spread([float(by_seed[s].get(name, math.nan)) if s in by_seed else math.nan for s in seeds])
            for name in names
        }
        rows.append({"part": part, "scheme": scheme, "metrics": metrics, "vs_baseline": None})
        base = paper.baseline(scheme, schemes_by_part[part])
        if base is not None and (part, base) in table:
            rows[-1]["vs_baseline"] = _versus(
                main, higher_is_better, by_seed, table[(part, base)], seeds, base
            )
    flips = []
    for part, schemes in schemes_by_part.items():
        ranks, seen = {}, {}
        for seed in seeds:
            values = {s: table[(part, s)].get(seed, {}).get(main, math.nan) for s in schemes}
            if len(schemes) > 1 and not any(math.isnan(v) for v in values.values()):
                ranks[seed] = ranking(values, higher_is_better)
                seen[seed] = values
        if len(set(ranks.values())) > 1:
            flips.append(
                {
                    "part": part,
                    "rankings": {str(s): format_ranking(r) for s, r in ranks.items()},
                    "swapped": swapped_pairs(schemes, list(seen.values()), higher_is_better),
                }
            )
    return {
        "seeds": seeds,
        "main": main,
        "higher_is_better": higher_is_better,
        "rows": rows,
        "ranking_flips": flips,
    }


def _versus(
    main: str,
    higher_is_better: bool,
    mine: Mapping[int, Mapping[str, float]],
    base: Mapping[int, Mapping[str, float]],
    seeds,
    name,
) -> dict[str, Any]:
    """How often a row beats its baseline on the main metric, per seed; ``flips`` when both ways."""
    counts = {"better": 0, "worse": 0, "equal": 0}
    for seed in seeds:
        a = mine.get(seed, {}).get(main, math.nan)
        b = base.get(seed, {}).get(main, math.nan)
        if math.isnan(a) or math.isnan(b):
            continue
        counts[{1: "better", -1: "worse", 0: "equal"}[_better(a, b, higher_is_better)]] += 1
    return {"baseline": name, **counts, "flips": counts["better"] > 0 and counts["worse"] > 0}
