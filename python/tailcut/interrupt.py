"""Ctrl-C that is not lost.

Python raises SIGINT's KeyboardInterrupt wherever the main thread happens to be. Raised inside a weakref
callback or a ``__del__`` it is printed as "Exception ignored" and dropped: a ``--jobs 1`` sweep then ran
to its end and exited 0 (2 of 25 trials). The CLI's handler (:func:`installed`) also records the signal,
and long loops call :func:`check` where raising is safe (between points, in progress callbacks), so an
interrupt dropped once is raised again there.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_seen = threading.Event()


def _handler(signum: int, _frame: FrameType | None) -> None:
    _seen.set()
    raise KeyboardInterrupt(signal.Signals(signum).name)


def check() -> None:
    """Raise KeyboardInterrupt if SIGINT arrived under :func:`installed`, even if its first raise was lost."""
    if _seen.is_set():
        raise KeyboardInterrupt("SIGINT")


@contextmanager
def installed() -> Iterator[None]:
    """Record SIGINT for :func:`check` while the block runs (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _seen.clear()
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _seen.clear()
