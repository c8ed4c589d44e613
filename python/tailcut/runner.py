"""Run one experiment through the Rust core and turn its output into a :class:`~tailcut.results.Result`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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
from tailcut.paths import delocalized, localized
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
    jobs: int = 1,
) -> Result:
    """Run one experiment and return its tables.

    ``config`` is a dict, a TOML file path or TOML text; ``overrides`` maps dotted paths to values (or is a
    list of ``key=value`` strings); ``seed`` replaces the config's seed. ``progress(fraction)`` is called
    about every 100 ms; returning ``False`` cancels. Raises ``tailcut.ConfigError`` for a bad config and
    ``tailcut.SimulationError`` when the run fails, including a packet-conservation violation.

    ``jobs`` > 1 runs the schemes in that many processes at once (the sweeps' local executor,
    :func:`tailcut.sweep.run_tasks`): every scheme runs the same flows from the same seed on its own copy
    of the network, so the result is the one ``jobs = 1`` gives, only sooner (``wall_seconds`` apart).
    ``progress`` then hears the mean fraction of the schemes (its return value no longer cancels; Ctrl-C
    stops the workers).
    """
    if seed is not None:
        check_u64("seed", seed)
    raw = apply_overrides(load_experiment(config), overrides)
    check_limits(limits)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: must be an integer >= 1, got {jobs!r}")
    schemes = raw.get("schemes")
    if jobs > 1 and isinstance(schemes, list) and len(schemes) > 1:
        return _run_schemes_in_parallel(raw, seed, progress, limits, jobs)
    # The core prepares the experiment once: it validates it (a bad field raises before anything runs or
    # is written), runs it, and returns it resolved as it ran (every default filled in, the seed used),
    # which config.toml records so that it repeats this exact run.
    # On a Ray worker the files the config names are local copies (tailcut.paths.aliased); the result
    # keeps the paths as written.
    document = json.loads(_core.run(to_json(localized(raw)), seed, progress, **(limits or {})))
    return Result.from_core(document, delocalized(document["resolved_config"]))


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
    jobs: int = 1,
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
    extra: dict[str, Any] = {"limits": limits} if limits is not None else {}
    if jobs != 1:
        extra["jobs"] = jobs
    with released(out):  # the lock claim took, also when the run fails (write releases it otherwise)
        result = run(config, seed=seed, overrides=overrides, progress=progress, **extra)
    draw = (lambda r: run_report_html({Path(out).name: r})) if report else None
    result.write(out, report=draw, overwrite=overwrite, csv=csv)
    return result


@dataclass(frozen=True)
class _Scheme:
    """One scheme of a run as a task of the sweeps' executor: ``slug`` is its folder."""

    slug: str
    name: str


def _run_one_scheme(
    config: dict[str, Any], task: _Scheme, folder: str, seed: int | None, limits: Mapping[str, Any] | None
) -> Any:
    """Run a one-scheme experiment into ``folder/slug`` (a top-level function, for the process pool)."""
    from tailcut.progress import point_reporter
    from tailcut.sweep import PointOutcome

    try:
        extra = {"limits": limits} if limits is not None else {}
        result = run(config, seed=seed, progress=point_reporter(task.slug), **extra)
        result.write(Path(folder) / task.slug, overwrite=True)
        return PointOutcome(task.slug)
    except (_core.ConfigError, _core.SimulationError) as exc:
        return PointOutcome(task.slug, error=f"{type(exc).__name__}: {exc}")


def _run_schemes_in_parallel(
    raw: dict[str, Any],
    seed: int | None,
    progress: ProgressCallback | None,
    limits: Mapping[str, Any] | None,
    jobs: int,
) -> Result:
    import tempfile

    from tailcut.progress import SweepProgress
    from tailcut.sweep import run_tasks

    # The whole experiment is checked first, as one process would: a bad field fails before any work.
    # Resolved with the seed it runs with, it is the config one process would return.
    # (The core returns its resolved config with sorted keys; validation's keeps the file's order.)
    config = resolve({**raw, "seed": seed} if seed is not None else raw, limits)
    config = json.loads(json.dumps(config, sort_keys=True))
    tasks = [
        ({**raw, "schemes": [entry]}, _Scheme(f"{i}", str(entry.get("name", i))))
        for i, entry in enumerate(raw["schemes"])
    ]
    tracker = SweepProgress(
        {t.slug: 1.0 for _, t in tasks}, (lambda f: progress(f)) if progress is not None else None
    )
    with tempfile.TemporaryDirectory(prefix="tailcut-run-") as folder:
        outcomes = run_tasks(
            tasks,
            Path(folder),
            jobs,
            "local",
            None,
            lambda o: tracker.finished(o.slug),
            runner=_run_one_scheme,
            extra_args=(seed, limits),
            on_progress=tracker.update if progress is not None else None,
        )
        failed = [(t, o) for (_, t), o in zip(tasks, outcomes, strict=True) if o.error is not None]
        if failed:
            task, outcome = failed[0]
            kind, _, message = str(outcome.error).partition(": ")
            error = _core.ConfigError if kind == "ConfigError" else _core.SimulationError
            raise error(f"scheme {task.name}: {message}")
        parts = [Result.load(Path(folder) / t.slug) for _, t in tasks]
    return _merged(parts, config)


def _merged(parts: list[Result], config: dict[str, Any]) -> Result:
    """The result of one run of every scheme of ``config``, from the results of one run per scheme (in
    order)."""
    import pandas as pd

    from tailcut.provenance import without

    flows = pd.concat([p.flows for p in parts], ignore_index=True)
    ports = pd.concat([p.ports for p in parts], ignore_index=True)
    runs = [without(r) for p in parts for r in p.runs]
    return Result(flows=flows, ports=ports, runs=runs, config=config)
