"""The baselines' page (``docs/results.md``, Baselines): ``experiments/baselines/``."""

from __future__ import annotations

from tailcut.reproduce.generic import METRICS, bench_rows, first_scheme
from tailcut.reproduce.paper import Entry, Group, Paper

PAPER = Paper(
    name="baselines",
    title="Baselines (docs/baselines.md)",
    groups=(
        Group(
            "Baselines",
            tuple(
                Entry(stem, f"experiments/baselines/{stem}.toml")
                for stem in ("lossy_dumbbell", "pias_pfabric", "replicated_dctcp")
            ),
        ),
    ),
    rows=bench_rows,
    metrics=METRICS,
    main="p99_ms",
    baseline=first_scheme,
)
