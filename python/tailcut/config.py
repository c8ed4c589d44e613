"""Experiment files: TOML in, JSON to the Rust core, ``--set`` overrides in between.

The Rust side owns the schema and every validation rule (so errors name the field exactly as the file spells
it); this module only loads TOML, edits the nested dict by dotted path and converts between TOML and JSON.

Override paths
    ``key.sub.leaf=value`` walks nested tables. A path segment that is a non-negative integer indexes a list
    (``schemes.0.name=dctcp``, the first ``[[schemes]]`` entry); an index equal to the list length appends.
    Missing tables along the path are created. Keys that contain a dot cannot be addressed.

Override values
    The text after ``=`` is parsed as a TOML value if it is one (``4`` -> int, ``0.5`` -> float,
    ``true`` -> bool, ``"x"`` -> str, ``[1, 2]`` -> list, ``{a = 1}`` -> table); anything else is kept as a
    plain string, so units need no quoting: ``topology.link_rate=10Gbps``.
"""

from __future__ import annotations

import argparse
import copy
import datetime as _dt
import json
import math
import operator
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

from tailcut import _core
from tailcut.paths import anchor_experiment, delocalized, localized

ConfigSource = Mapping[str, Any] | str | Path

# Seeds and event counts are u64 in the core; a value outside would surface as pyo3's OverflowError.
U64_MAX = 2**64 - 1


def config_error(path: str, reason: str) -> Exception:
    """A ``tailcut.ConfigError`` for a field the Python side checks (``path``/``reason`` attributes as
    the core's)."""
    error = _core.ConfigError(f"{path}: {reason}" if path else reason)
    error.path, error.reason = path, reason
    return error


def check_u64(path: str, value: Any, minimum: int = 0) -> None:
    """Refuse ``value`` unless it is an integer in ``minimum..2^64-1`` (a ``ConfigError`` naming ``path``)."""
    try:
        # numpy integers too (a seed taken from a DataFrame in a notebook).
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None:
        raise config_error(path, f"must be an integer, got {value!r}")
    if not minimum <= number <= U64_MAX:
        raise config_error(path, f"must be in {minimum}..{U64_MAX}, got {value}")


# Most points a sweep may run (grid values times seeds), and so most seeds (--seeds). Each point is a
# whole run with its own folder, validated up front: a million-point grid is a typo or a generated list
# gone wrong that would spend hours checking configs and fill a folder with a million subfolders. It is
# refused by the size of the product alone, before anything is built (tailcut.sweep.check_size).
MAX_SWEEP_POINTS = 10_000


def int_arg(minimum: int, maximum: int = U64_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``minimum..maximum``, refused with the option's name otherwise
    (every integer option of the ``tailcut`` command uses one; tests/python/test_bad_inputs.py checks)."""

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be in {minimum}..{maximum}, got {value}")
        return value

    return integer


def float_arg(minimum: float, inclusive: bool = True) -> Callable[[str], float]:
    """An argparse type: a finite number >= ``minimum`` (> with ``inclusive=False``); NaN and inf refused."""

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        low_ok = value >= minimum if inclusive else value > minimum
        if not (math.isfinite(value) and low_ok):
            sign = ">=" if inclusive else ">"
            raise argparse.ArgumentTypeError(f"must be a finite number {sign} {minimum:g}, got {text}")
        return value

    return number


def check_limits(limits: Mapping[str, Any] | None) -> None:
    """The ``limits`` argument of run, resolve, sweep and compare: known keys, values in range."""
    for key, value in (limits or {}).items():
        if key not in ("max_memory", "max_events", "force"):
            raise config_error(f"limits.{key}", "unknown limit (max_memory, max_events, force)")
        if key != "force" and value is not None:
            check_u64(f"limits.{key}", value, minimum=1)


def parse_value(text: str) -> Any:
    """Parse an override value as a TOML value if possible, else keep it as the string itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def parse_assignment(text: str) -> tuple[str, Any]:
    """Split ``key.path=value`` into the path and the parsed value."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"expected key.path=value, got {text!r}")
    return key, parse_value(value.strip())


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at dotted ``path`` inside ``config`` (see the module doc for the path rules)."""
    parts = path.split(".")
    if any(p == "" for p in parts):
        raise ValueError(f"override path {path!r} has an empty segment")
    node: Any = config
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[: depth + 1])
        if isinstance(node, list):
            if not part.isdigit():
                raise ValueError(f"override path {path!r}: {where!r} indexes a list, use a number")
            index = int(part)
            if index > len(node):
                raise ValueError(
                    f"override path {path!r}: index {index} is past the end (length {len(node)})"
                )
            if last:
                if index == len(node):
                    node.append(value)
                else:
                    node[index] = value
                return
            if index == len(node):
                node.append({})
            node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
                return
            if part not in node:
                node[part] = {}
            node = node[part]
        else:
            parent = ".".join(parts[:depth])
            raise ValueError(f"override path {path!r}: {parent!r} is a {type(node).__name__}, not a table")


def apply_overrides(
    config: Mapping[str, Any], overrides: Mapping[str, Any] | Iterable[str] | None
) -> dict[str, Any]:
    """Return a copy of ``config`` with overrides applied.

    ``overrides`` is either a mapping of dotted path to (already typed) value, as the Python API takes, or
    an iterable of ``key=value`` strings, as the command line gives.
    """
    result = copy.deepcopy(dict(config))
    if overrides is None:
        return result
    items = overrides.items() if isinstance(overrides, Mapping) else (parse_assignment(o) for o in overrides)
    for key, value in items:
        set_path(result, key, value)
    return result


def source_file(source: ConfigSource) -> Path | None:
    """The file a config source names, or None for a dict or TOML text."""
    if isinstance(source, Mapping):
        return None
    path = Path(source)
    if isinstance(source, Path) or path.suffix == ".toml" or ("\n" not in str(source) and path.exists()):
        return path
    return None


def read_regular_file(path: Path) -> bytes:
    """The bytes of ``path``, refusing anything but a regular file before opening it: a FIFO would block
    the read forever and a device could be endless (a missing file raises FileNotFoundError)."""
    if path.exists() and not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file (a FIFO, socket or device)"
        raise config_error("", f"{path}: is {what}")
    return path.read_bytes()


def load_config(source: ConfigSource) -> dict[str, Any]:
    """Load a TOML document from a dict (copied), a TOML file path, or TOML text, as written.

    A file that is not UTF-8 or not a regular file, and a document nested too deeply for Python's
    recursion limit, raise ``tailcut.ConfigError``; a TOML syntax error raises ``tomllib.TOMLDecodeError``
    (both are ``ValueError``s)."""
    path = source_file(source)
    try:
        if isinstance(source, Mapping):
            return copy.deepcopy(dict(source))
        if path is not None:
            data = read_regular_file(path)
            try:
                # utf-8-sig: editors on Windows may save a byte order mark, which TOML does not allow.
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise config_error("", f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
            return tomllib.loads(text)
        return tomllib.loads(str(source))
    except RecursionError:
        where = f"{path}: " if path is not None else ""
        raise config_error("", f"{where}arrays or tables nested too deeply") from None


def load_experiment(source: ConfigSource) -> dict[str, Any]:
    """Load an experiment; from a file, its relative file paths resolve against the file's folder
    (:mod:`tailcut.paths`)."""
    config = load_config(source)
    path = source_file(source)
    if path is not None:
        anchor_experiment(config, path.resolve().parent)
    return config


def _json_default(value: Any) -> Any:
    # TOML has dates and times and notebooks have numpy scalars; JSON has neither.
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars, e.g. a grid value taken from a DataFrame in a notebook
        return value.item()
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


def to_json(config: Mapping[str, Any]) -> str:
    """Serialise a config dict for the Rust core."""
    try:
        return json.dumps(config, default=_json_default)
    except RecursionError:
        raise config_error("", "arrays or tables nested too deeply") from None


def resolve(config: Mapping[str, Any], limits: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate through Rust and return the fully resolved config; raises ``tailcut.ConfigError``.

    ``limits`` holds the resource limits of the run's estimate (docs/simulator.md, "Limits and errors"):
    ``max_memory`` (bytes; default this machine's available memory), ``max_events`` and ``force``.
    """
    check_limits(limits)
    resolved = json.loads(_core.validate(to_json(localized(dict(config))), **(limits or {})))
    return delocalized(resolved)


_SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def parse_bytes(text: str) -> int:
    """``8GB`` -> 8000000000: decimal units as in experiment files, KiB..TiB binary, no unit = bytes."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if match is None or (unit or "B") not in _SIZE_UNITS:
        raise ValueError(f"expected a size such as 8GB or 512MiB, got {text!r}")
    value = int(float(match.group(1)) * _SIZE_UNITS[unit or "B"])
    if value <= 0:
        raise ValueError(f"a size must be > 0, got {text!r}")
    return value


def _drop_nulls(value: Any) -> Any:
    # TOML cannot spell null; an absent key deserialises to the same `None` on the Rust side.
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value if v is not None]
    return value


def to_toml(config: Mapping[str, Any]) -> str:
    """Render a (resolved) config as TOML, so that a run can be repeated from its own output folder."""
    return tomli_w.dumps(_drop_nulls(dict(config)))


def experiment_name(config: Mapping[str, Any], fallback: str = "experiment") -> str:
    """The experiment's ``name`` if it has one, used for default output folders."""
    name = config.get("name")
    return str(name) if isinstance(name, str) and name else fallback
