"""Across seeds: each figure as median and range, and the conclusions that do not hold in every seed.

A conclusion flips when, on the paper's main metric, (a) the ranking of a part's schemes differs between
seeds (ties rank equal; seeds where a scheme has no value are left out), or (b) a scheme is better than
its baseline in one seed and worse in another. The statistics and rankings are :mod:`tailcut.seeds`', which
``tailcut compare --seeds`` shares.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tailcut.reproduce.paper import Paper, Row
from tailcut.seeds import better, format_ranking, ranking, spread, swapped_pairs


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
        counts[{1: "better", -1: "worse", 0: "equal"}[better(a, b, higher_is_better)]] += 1
    return {"baseline": name, **counts, "flips": counts["better"] > 0 and counts["worse"] > 0}
