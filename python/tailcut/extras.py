"""Optional dependencies: the simulator and its tables need none; drawing reports needs ``tailcut[plot]``.

A notebook that only runs experiments and reads DataFrames installs ``pip install tailcut``; the ``tailcut``
command writes an HTML report beside every result and so needs ``pip install 'tailcut[plot]'``.
"""

from __future__ import annotations

import importlib.util


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, extra: str, purpose: str, module: str) -> None:
        super().__init__(
            f"{purpose} needs {module}, which is not installed: pip install 'tailcut[{extra}]' "
            "(tailcut.run and tailcut.sweep without an output folder work without it)"
        )


def plotting_available() -> bool:
    """Whether the ``plot`` extra (matplotlib) is installed."""
    return importlib.util.find_spec("matplotlib") is not None
