"""Numbers as a reader wants them in a report: times in ns/us/ms/s and sizes in B/KB/MB with three
significant digits, fractions in percent. The Parquet and JSON outputs keep the raw values.
"""

from __future__ import annotations

import math

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns"))
# Decimal, as the config units are (KB = 1000 B).
_SIZE_UNITS = ((1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "B"))


def _three_digits(value: float) -> str:
    """``value`` with three significant digits, without an exponent (3.32e+05 reads badly in a table)."""
    if value == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def _scaled(value: float, units: tuple[tuple[float, str], ...]) -> str:
    # Rounded first, so that 999.6 us reads "1.00 ms", not "1000 us".
    value = float(f"{value:.3g}")
    for factor, unit in units:
        if abs(value) >= factor:
            return f"{_three_digits(value / factor)} {unit}"
    return f"{_three_digits(value)} {units[-1][1]}"


def _missing(value: float | None) -> str | None:
    """The text for a figure that is not a number: NaN (no flow in the group) or infinite (the rank fell
    among unfinished flows, docs/metrics.md)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "inf (unfinished)" if value > 0 else "-inf"
    return None


def time_ns(value: float | None) -> str:
    """A duration given in nanoseconds: ``331800`` -> ``"332 us"``."""
    return _missing(value) or _scaled(float(value), _TIME_UNITS)  # type: ignore[arg-type]


def size_bytes(value: float | None) -> str:
    """A size given in bytes: ``93440`` -> ``"93.4 KB"``."""
    return _missing(value) or _scaled(float(value), _SIZE_UNITS)  # type: ignore[arg-type]


def fraction(value: float | None) -> str:
    """A share of flows or a byte ratio as a percentage: ``0.0215`` -> ``"2.15%"``."""
    # Rounded first, so that 0.00999999 (a tick at 1%) reads "1.00%", not "1.000%".
    return _missing(value) or f"{_three_digits(float(f'{float(value) * 100:.3g}'))}%"  # type: ignore[arg-type]


def ratio(value: float | None) -> str:
    """A dimensionless ratio such as a slowdown, three significant digits: ``12.345`` -> ``"12.3"``."""
    return _missing(value) or _three_digits(float(value))  # type: ignore[arg-type]
