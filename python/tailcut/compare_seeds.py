"""``tailcut compare --seeds N``: a comparison's per-seed tables combined, and the conclusions that flip.

Every cell runs once per seed (:func:`tailcut.seeds.seed_range` from the suite's ``seed``, as ``tailcut
reproduce`` and ``tailcut sweep`` number them) and is ranked within its scenario in each seed on its own
(:func:`tailcut.compare.rank`). The combined table keeps one row per cell: each metric's column holds its
median over the seeds where the cell ran, ``<metric>_min`` and ``<metric>_max`` its range, ``seeds_ok`` the
number of those seeds (statistics as :func:`tailcut.seeds.spread`: NaN left out, ``inf`` the worst). The
``rank`` column is likewise the median of the cell's per-seed ranks.

Two conclusions are checked seed by seed, as ``tailcut reproduce`` flags its flips:

- the overall ranking: each scheme's mean rank in each seed; two schemes next to each other in the order
  of their median mean rank flip when each is strictly better than the other in some seed;
- each scenario's winner (the schemes ranked 1, ties together) differs between seeds.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from tailcut.compare import COLUMNS, OK
from tailcut.seeds import ranking, spread, swapped_pairs

if TYPE_CHECKING:
    import pandas as pd

# The columns that get a median and a range; the others (names, status, notes) are the same in every seed.
SPREAD = [
    "small_flows", "small_unfinished", "p50_us", "p99_us", "p999_us", "timeout_fraction",
    "extra_bytes_small", "extra_bytes_all", "large_flows", "large_unfinished", "large_tput_gbps",
    "wall_s", "rank",
]  # fmt: skip
SEED_COLUMNS = [*(f"{m}_{end}" for m in SPREAD for end in ("min", "max")), "seeds_ok"]


def combine(per_seed: pd.DataFrame) -> pd.DataFrame:
    """One row per cell from ``per_seed`` (the per-seed tables with a ``seed`` column), in cell order:
    :data:`tailcut.compare.COLUMNS` with medians, then :data:`SEED_COLUMNS`."""
    import pandas as pd

    rows = [_combine_cell(group) for _, group in per_seed.groupby(["scenario", "scheme"], sort=False)]
    return pd.DataFrame(rows, columns=[*COLUMNS, *SEED_COLUMNS])


def _combine_cell(group: pd.DataFrame) -> dict[str, Any]:
    """A cell's seeds: ok when any seed ran (the seeds that failed are named in ``reason``), else as its
    first seed says (n/a and pending hold in every seed; a cell failed in every seed is failed)."""
    ok = group[group["status"] == OK]
    row = (ok if len(ok) else group).iloc[0][COLUMNS].to_dict()
    failed = group[group["status"] != OK]
    if len(ok) and len(failed):
        row["reason"] = "; ".join(f"seed {r.seed} {r.status}: {r.reason}" for r in failed.itertuples())
    for metric in SPREAD:
        stats = spread([float(v) for v in ok[metric]])
        for key, column in (("median", metric), ("min", f"{metric}_min"), ("max", f"{metric}_max")):
            row[column] = math.nan if stats[key] is None else stats[key]
    row["seeds_ok"] = len(ok)
    return row


def mean_ranks(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Each scheme's mean rank over the scenarios it ran, per seed: schemes (suite order) x seeds."""
    ok = per_seed[per_seed["status"] == OK]
    table = ok.pivot_table(index="scheme", columns="seed", values="rank", aggfunc="mean", sort=False)
    return table.reindex(columns=sorted(per_seed["seed"].unique()))


def rank_spread(per_seed: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Scheme -> :func:`tailcut.seeds.spread` of its per-seed mean rank."""
    ranks = mean_ranks(per_seed)
    return {str(s): spread([float(v) for v in ranks.loc[s]]) for s in ranks.index}


def adjacent_flips(per_seed: pd.DataFrame, order: list[str]) -> list[dict[str, Any]]:
    """The neighbours in ``order`` (the overall ranking, best first) that are each strictly better than
    the other in some seed, with each seed's order (``a < b``: a ranks better); seeds where either has
    no rank are left out."""
    ranks = mean_ranks(per_seed)
    flips = []
    for a, b in itertools.pairwise(order):
        seen = {
            int(seed): {a: float(ranks.at[a, seed]), b: float(ranks.at[b, seed])}
            for seed in ranks.columns
            if not math.isnan(ranks.at[a, seed]) and not math.isnan(ranks.at[b, seed])
        }
        if swapped_pairs([a, b], list(seen.values()), higher_is_better=False):
            flips.append({"pair": f"{a}/{b}", "orders": {s: _order(v) for s, v in seen.items()}})
    return flips


def _order(values: dict[str, float]) -> str:
    """``a < b`` (a better), ``b < a`` or ``a = b``, with the mean ranks: ``a 1.5 < b 2``."""
    groups = ranking(values, higher_is_better=False)
    return " < ".join(" = ".join(f"{s} {values[s]:.3g}" for s in tie) for tie in groups)


def winner_flips(per_seed: pd.DataFrame) -> list[dict[str, Any]]:
    """The scenarios whose winner (the schemes ranked 1, ties joined by ``=``) is not the same in every
    seed that ran two or more of its schemes."""
    ok = per_seed[per_seed["status"] == OK]
    flips = []
    for scenario, group in ok.groupby("scenario", sort=False):
        winners = {
            int(seed): " = ".join(sorted(g.loc[g["rank"] == 1, "scheme"]))
            for seed, g in group.groupby("seed", sort=True)
            if len(g) > 1
        }
        if len(set(winners.values())) > 1:
            flips.append({"scenario": str(scenario), "winners": winners})
    return flips
