"""What a paper's reproduction is: its experiment files (grouped as its results page groups them), the
metrics each run yields per scheme, and the comparison whose sign is its conclusion.

Each paper module (``fuso.py``, ``tracks.py``, ...) builds one :class:`Paper`; nothing here runs anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One experiment to run over seeds: a checked-in file, optionally with ``--set`` style overrides
    (the CP incast sweeps fan-out this way), under a label unique within its paper."""

    label: str
    file: str  # relative to the repository root, as experiment files name their CDFs
    overrides: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Group:
    """A table of the results page: its title and the entries that are its rows' points; ``main`` and
    ``higher_is_better`` replace the paper's when this table's conclusion rests on another metric."""

    title: str
    entries: tuple[Entry, ...]
    main: str | None = None
    higher_is_better: bool | None = None


@dataclass(frozen=True)
class Metric:
    """A column: ``key`` in the row dicts, its header, and how one value prints."""

    key: str
    header: str
    fmt: str = "{:.4g}"


@dataclass(frozen=True)
class RunTables:
    """One finished run (one entry, one seed) as the metric functions see it."""

    flows: Any  # pandas.DataFrame, see tailcut.results.FLOW_COLUMNS
    ports: Any  # pandas.DataFrame, see tailcut.results.PORT_COLUMNS
    runs: list[dict[str, Any]]
    config: dict[str, Any]


@dataclass(frozen=True)
class Row:
    """One scheme's figures in one part of a run (``part``: ``all``, a component, a size, ...)."""

    scheme: str
    part: str
    values: Mapping[str, float]


@dataclass(frozen=True)
class Paper:
    """A paper's reproduction.

    ``rows(tables, entry)`` computes the per-scheme rows of one run. ``main`` is the metric the paper's
    conclusion rests on (ranking of schemes per part, and sign against the baseline); ``higher_is_better``
    orients it. ``baseline(scheme, schemes)`` names the scheme of the same run (``schemes``, in file
    order) that a row is compared with, None for a row that is not compared.
    """

    name: str
    title: str
    groups: tuple[Group, ...]
    rows: Callable[[RunTables, Entry], list[Row]]
    metrics: tuple[Metric, ...]
    main: str
    higher_is_better: bool = False
    baseline: Callable[[str, list[str]], str | None] = field(default=lambda _s, _all: None)

    def criterion(self, group: Group) -> tuple[str, bool]:
        """The metric a group's conclusions are checked on and whether higher is better."""
        if group.main is None:
            return self.main, self.higher_is_better
        better = self.higher_is_better if group.higher_is_better is None else group.higher_is_better
        return group.main, better

    def entries(self) -> list[Entry]:
        """Every entry once, in page order."""
        seen: dict[str, Entry] = {}
        for group in self.groups:
            for entry in group.entries:
                seen.setdefault(entry.label, entry)
        return list(seen.values())
