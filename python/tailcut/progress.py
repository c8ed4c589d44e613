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


# A log line of a fraction bar (a run's, a sweep's simulated time) at most this often, in seconds, when
# stderr is not a terminal; TAILCUT_PROGRESS_INTERVAL changes it (0: only the final line).
LOG_INTERVAL = 30.0


class LogBar:
    """What a progress bar prints when stderr is not a terminal (a log file, CI, a pipe): whole lines, no
    carriage returns. A bar counting items (points, cells, runs) prints one line per item done; a fraction
    bar (``total`` 100, a percentage) prints a line at most every ``interval`` seconds and one when it
    closes. It takes the calls the commands make on a ``tqdm`` bar."""

    def __init__(
        self,
        total: float | None = None,
        desc: str | None = None,
        unit: str = "it",
        file: Any = None,
        interval: float | None = None,
        percent: bool = False,
        clock: Callable[[], float] | None = None,
        **_ignored: Any,
    ):
        import os
        import sys
        import time

        self.total = total
        self.desc = desc or ""
        self.unit = unit
        self.file = file if file is not None else sys.stderr
        self.percent = percent
        env = os.environ.get("TAILCUT_PROGRESS_INTERVAL")
        self.interval = (
            float(env) if interval is None and env else LOG_INTERVAL if interval is None else interval
        )
        self.clock = clock or time.monotonic
        self.n: float = 0
        self._last = self.clock()
        self._printed_at: float | None = None

    def __enter__(self) -> LogBar:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def _line(self) -> str:
        head = f"{self.desc}: " if self.desc else ""
        if self.percent:
            return f"{head}{self.n:.0f}%"
        of = f"/{self.total:g}" if self.total else ""
        return f"{head}{self.n:g}{of} {self.unit}s done"

    def _print(self) -> None:
        print(self._line(), file=self.file, flush=True)
        self._printed_at = self.n
        self._last = self.clock()

    def update(self, k: float = 1) -> None:
        self.n += k
        if not k:
            return
        if not self.percent or (self.interval > 0 and self.clock() - self._last >= self.interval):
            self._print()

    def set_description_str(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc

    def refresh(self) -> None:
        pass

    def write(self, text: str, file: Any = None) -> None:
        print(text, file=file or self.file, flush=True)

    def close(self) -> None:
        if self.percent and self.n > 0 and self._printed_at != self.n:
            self._print()


def bar(**kwargs: Any) -> Any:
    """A progress bar on ``kwargs["file"]`` (stderr): ``tqdm`` on a terminal, a :class:`LogBar` anywhere
    else, so that a log gets a few whole lines instead of a redraw every tenth of a second. ``percent``
    says the bar counts percent (total 100) rather than items."""
    import sys

    stream = kwargs.get("file") or sys.stderr
    percent = kwargs.pop("percent", False)
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if terminal:
        from tqdm import tqdm

        return tqdm(**kwargs)
    return LogBar(percent=percent, **kwargs)
