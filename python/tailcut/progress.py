"""Where a run or a sweep is: the scheme and stage of a run, the simulated time of a sweep's points.

The core reports one number per run, the fraction done, ``(k + f) / n`` while it simulates scheme ``k``
of ``n`` (``f``: that scheme's share of flows finished or of ``max_time`` simulated, whichever is larger;
crates/tailcut-sim/src/run.rs). A run's scheme follows from it. A sweep's work is counted in simulated
time: a point is worth ``schemes x max_time``, and a point at fraction ``x`` has done ``x`` of that (a
scheme whose flows all finish early jumps to its end). Points report from their worker processes through
a queue the pool's initializer hands them (:func:`set_sink`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tailcut import interrupt
from tailcut.config import parse_value

# Where a point's fraction goes in this process: (point slug, fraction). Set in sweep workers only.
_sink: Callable[[str, float], None] | None = None


def set_sink(sink: Callable[[str, float], None] | None) -> None:
    global _sink
    _sink = sink


def point_reporter(slug: str) -> Callable[[float], bool] | None:
    """The ``progress`` callback for one sweep point's run, or None outside a reporting sweep."""
    sink = _sink
    if sink is None:
        return None

    def report(fraction: float) -> bool:
        interrupt.check()  # a Ctrl-C dropped elsewhere stops the point here (raised through the core)
        sink(slug, fraction)
        return True

    return report


def queue_sink(queue: Any) -> Callable[[str, float], None]:
    """A sink that puts ``(slug, fraction)`` on a multiprocessing queue (picklable across a pool)."""
    return lambda slug, fraction: queue.put((slug, fraction))


def run_stage(schemes: Sequence[str], fraction: float) -> str:
    """``dctcp (2/3)`` while the core simulates the second of three schemes; ``writing results`` at 1."""
    if fraction >= 1.0 or not schemes:
        return "writing results"
    k = min(int(fraction * len(schemes)), len(schemes) - 1)
    return f"{schemes[k]} ({k + 1}/{len(schemes)})"


def _seconds(value: Any) -> float:
    """A resolved ``max_time`` (``"10s"``, ``"500ms"``) in seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    text = str(parse_value(str(value)))
    for unit in ("ns", "us", "ms", "s"):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * units[unit]
    return float(text) * 1e-9  # integer nanoseconds


def point_weight(resolved: Mapping[str, Any]) -> float:
    """The simulated seconds a point can take: its schemes times its ``max_time``."""
    return max(1, len(resolved.get("schemes", []))) * _seconds(resolved.get("max_time", "10s"))


class SweepProgress:
    """Simulated time done across a sweep's points; every update calls ``callback(fraction)``, which never
    decreases (a point's fraction only grows, and a point that failed counts as done)."""

    def __init__(self, weights: Mapping[str, float], callback: Callable[[float], Any] | None = None):
        self.weights = dict(weights)
        self.total = sum(self.weights.values()) or 1.0
        self.done: dict[str, float] = dict.fromkeys(self.weights, 0.0)
        self.callback = callback

    @property
    def seconds(self) -> float:
        return sum(self.weights[s] * f for s, f in self.done.items())

    @property
    def fraction(self) -> float:
        return min(1.0, self.seconds / self.total)

    def update(self, slug: str, fraction: float) -> None:
        if slug not in self.done or not math.isfinite(fraction):
            return
        self.done[slug] = max(self.done[slug], min(1.0, fraction))
        if self.callback is not None:
            self.callback(self.fraction)

    def finished(self, slug: str) -> None:
        self.update(slug, 1.0)
