"""Run one experiment through the Rust core and turn its output into a :class:`~tailcut.results.Result`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tailcut import _core
from tailcut.config import (
    ConfigSource,
    apply_overrides,
    check_limits,
    check_u64,
    load_experiment,
    resolve,
    to_json,
)
from tailcut.results import Result

ProgressCallback = Callable[[float], "bool | None"]


def prepare(
    config: ConfigSource,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    limits: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load and override a config, then validate it; returns (config as given, resolved config).

    Validation happens before anything runs so a bad field is reported before any work or output.
    """
    raw = apply_overrides(load_experiment(config), overrides)
    return raw, resolve(raw, limits)


def run(
    config: ConfigSource,
    seed: int | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    progress: ProgressCallback | None = None,
    limits: Mapping[str, Any] | None = None,
) -> Result:
    """Run one experiment and return its tables.

    ``config`` is a dict, a TOML file path or TOML text; ``overrides`` maps dotted paths to values (or is a
    list of ``key=value`` strings); ``seed`` replaces the config's seed. ``progress(fraction)`` is called
    about every 100 ms; returning ``False`` cancels. Raises ``tailcut.ConfigError`` for a bad config and
    ``tailcut.SimulationError`` when the run fails, including a packet-conservation violation.
    """
    if seed is not None:
        check_u64("seed", seed)
    raw = apply_overrides(load_experiment(config), overrides)
    check_limits(limits)
    # The core prepares the experiment once: it validates it (a bad field raises before anything runs or
    # is written), runs it, and returns it resolved as it ran (every default filled in, the seed used),
    # which config.toml records so that it repeats this exact run.
    document = json.loads(_core.run(to_json(raw), seed, progress, **(limits or {})))
    return Result.from_core(document, document["resolved_config"])


def run_to_dir(
    config: ConfigSource,
    out: str | Path,
    seed: int | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    progress: ProgressCallback | None = None,
    overwrite: bool = False,
    limits: Mapping[str, Any] | None = None,
    csv: bool = False,
    report: bool = True,
) -> Result:
    """Run and write the result folder (with report.html unless ``report`` is false, and flows.csv with
    ``csv``) atomically; nothing is written on failure.

    ``out`` is checked before the run (:func:`tailcut.outdir.claim`): an existing result is replaced only
    with ``overwrite``, and a folder holding files tailcut did not write is never touched. The report needs
    the ``plot`` extra; without it this raises :class:`tailcut.extras.MissingExtraError` before the run.
    """
    from tailcut.outdir import claim, released

    if report:
        from tailcut.report import run_report_html
    claim(out, "run", overwrite=overwrite)
    # Limits are passed only when given, so callers that replace `run` (tests, sweeps) keep working.
    extra = {"limits": limits} if limits is not None else {}
    with released(out):  # the lock claim took, also when the run fails (write releases it otherwise)
        result = run(config, seed=seed, overrides=overrides, progress=progress, **extra)
    draw = (lambda r: run_report_html({Path(out).name: r})) if report else None
    result.write(out, report=draw, overwrite=overwrite, csv=csv)
    return result
