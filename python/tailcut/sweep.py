"""Parameter sweeps: the cartesian product of grid values times seeds, run in parallel, then combined.

Each point runs exactly like ``tailcut run`` into ``OUT/points/<slug>/``. A point is complete iff its
``flows.parquet`` exists, so rerunning a sweep redoes only what is missing or failed (an interrupted sweep
resumes); ``OUT/.tailcut.json`` records the experiment's resolved config hash, and resuming a different
experiment there is an error (:func:`tailcut.outdir.claim`). Every point's config is validated before any
runs. A failing point writes ``error.txt`` instead and does not stop the others; a sweep whose points all
failed raises. The combined tables carry the grid keys and ``seed`` as columns.

Seeds: ``seeds=N`` runs seeds ``base .. base+N-1`` where ``base`` is the config's ``seed`` (1 if it has
none), so ``seeds=1`` reproduces the plain run. ``seed`` may instead be a grid key (then ``seeds`` must be
1): its values are the seeds.

Interrupting (Ctrl-C) cancels the queued points at once and stops the running ones; pool workers also die
with the sweep's process if it is killed, and Ray tasks are cancelled.

On Ray (a local one, or a running cluster at ``ray_address``) a point may run on another machine, which
has none of this one's files: the files its config names are sent with it and its folder comes back to
be written here (:func:`run_tasks`); ``sweep.json`` records the node each point ran on.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from tailcut import _core, interrupt
from tailcut.config import (
    MAX_SWEEP_POINTS,
    ConfigSource,
    apply_overrides,
    experiment_name,
    load_experiment,
    parse_value,
    resolve,
)
from tailcut.outdir import (
    atomic_dir,
    claim,
    combined_files,
    config_hash,
    released,
    write_error,
    write_text_atomic,
)
from tailcut.progress import SweepProgress, point_weight
from tailcut.seeds import seed_range
from tailcut.summary import summarize

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Point:
    """One grid point and seed."""

    params: tuple[tuple[str, Any], ...]
    seed: int

    @property
    def slug(self) -> str:
        """A folder name that is stable across reruns, readable, and safe on any filesystem."""
        parts = [f"{key}={value}" for key, value in self.params] + [f"seed={self.seed}"]
        return re.sub(r"[^A-Za-z0-9._=-]+", "_", "__".join(parts))


@dataclass
class PointOutcome:
    """What happened to one point: ``error`` is None on success; ``skipped`` when results already existed.
    ``node`` says where a point ran on Ray (the worker's own Ray node id, IP address and host name);
    None on the local executor."""

    slug: str
    error: str | None = None
    skipped: bool = False
    node: dict[str, str] | None = None

    def record(self) -> dict[str, Any]:
        """The outcome as ``sweep.json`` lists it (``node`` only when known)."""
        return {k: v for k, v in self.__dict__.items() if k != "node" or v is not None}


@dataclass
class SweepResult:
    """The combined tables of a sweep (grid columns and ``seed`` added) and the per-point outcomes."""

    flows: pd.DataFrame
    summary: pd.DataFrame
    grid: dict[str, list[Any]]
    config: dict[str, Any] = field(default_factory=dict)
    outcomes: list[PointOutcome] = field(default_factory=list)
    path: Path | None = None

    def _repr_html_(self) -> str:
        """In a notebook, a sweep shows as its summary table (grid columns first)."""
        head = f"<p>tailcut sweep: {len(self.outcomes)} points, {len(self.failed)} failed</p>"
        return head + self.summary.to_html(index=False, na_rep="-")

    @property
    def failed(self) -> dict[str, str]:
        """Slug -> error text of the points that failed."""
        return {o.slug: o.error for o in self.outcomes if o.error is not None}


def parse_grid_option(text: str) -> tuple[str, list[Any]]:
    """Parse ``key=v1,v2,...`` (values parsed like ``--set`` values)."""
    key, sep, values = text.partition("=")
    if not sep or not key.strip() or not values.strip():
        raise ValueError(f"expected --grid key=v1,v2,..., got {text!r}")
    return key.strip(), [parse_value(v.strip()) for v in values.split(",")]


MAX_POINTS = MAX_SEEDS = MAX_SWEEP_POINTS


def check_size(grid: Mapping[str, Sequence[Any]], seeds: int) -> None:
    """Refuse a sweep of more than :data:`MAX_POINTS` points, naming what makes it big, before anything
    is built (the product is computed from the lengths, not by listing the points)."""
    if seeds > MAX_SEEDS:
        raise _core.ConfigError(f"seeds: {seeds} seeds, more than the {MAX_SEEDS} a sweep may run")
    count = seeds if "seed" not in grid else 1
    for values in grid.values():
        count *= len(values)
    if count > MAX_POINTS:
        sizes = " x ".join(f"{k} ({len(v)})" for k, v in grid.items())
        raise _core.ConfigError(
            f"grid: {count} points ({sizes}{f' x {seeds} seeds' if 'seed' not in grid else ''}), more than "
            f"the {MAX_POINTS} a sweep may run (each point is a whole run); split the sweep or use fewer "
            "values"
        )


def points(grid: Mapping[str, Sequence[Any]], seeds: Sequence[int]) -> list[Point]:
    """All points in a stable order: grid values in the order given (first key slowest), then seeds.

    A ``seed`` grid key replaces ``seeds``.
    """
    keys = [k for k in grid if k != "seed"]
    seed_values = grid.get("seed", seeds)
    return [
        Point(tuple(zip(keys, combo, strict=True)), seed)
        for combo in itertools.product(*(grid[k] for k in keys))
        for seed in seed_values
    ]


def check_points(
    base: dict[str, Any], all_points: list[Point], limits: Mapping[str, Any] | None = None
) -> dict[tuple[tuple[str, Any], ...], dict[str, Any]]:
    """Validate every point's config through the core (under ``limits``) before any runs; the error names
    point and field. Returns the resolved config of each distinct grid point (by its params)."""
    resolved: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
    for point in all_points:
        if point.params in resolved:
            continue
        try:
            resolved[point.params] = resolve(apply_overrides(base, dict(point.params)), limits)
        except ValueError as exc:  # ConfigError, or a --grid path that does not fit the config
            kind = type(exc) if isinstance(exc, _core.ConfigError) else ValueError
            raise kind(f"grid point {point.slug}: {exc}") from None
    return resolved


def run_point(
    config: dict[str, Any], point: Point, points_dir: str, limits: Mapping[str, Any] | None = None
) -> PointOutcome:
    """Run one point into its folder (a top-level function so that process pools and Ray can ship it)."""
    from tailcut.extras import plotting_available
    from tailcut.progress import point_reporter
    from tailcut.runner import run_to_dir

    out = Path(points_dir) / point.slug
    try:
        # points/ is the sweep's own: a failed attempt's folder is replaced.
        run_to_dir(
            config,
            out,
            seed=point.seed,
            overrides=dict(point.params),
            progress=point_reporter(point.slug),
            overwrite=True,
            limits=limits,
            # A point's own report is a convenience; a sweep that needs reports checked the extra up front.
            report=plotting_available(),
        )
        return PointOutcome(point.slug)
    except Exception as exc:  # a failed point is reported, the sweep goes on
        error = write_error(out, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        return PointOutcome(point.slug, error=error)


def _crashed(point: Any, points_dir: Path, exc: BaseException) -> PointOutcome:
    """Outcome for a point whose worker died (run_point itself never raises an Exception)."""
    error = write_error(points_dir / point.slug, f"worker failed: {type(exc).__name__}: {exc}")
    return PointOutcome(point.slug, error=error)


def _worker_init(parent: int, progress_queue: Any = None) -> None:
    """Pool worker setup: die with the sweep's process, and leave Ctrl-C to it; report point progress to
    ``progress_queue`` if given.

    Without this, a sweep killed with SIGKILL leaves its workers running every queued point. The
    terminal sends SIGINT to the whole process group; the parent then stops the workers itself.
    """
    if progress_queue is not None:
        from tailcut.progress import queue_sink, set_sink

        set_sink(queue_sink(progress_queue))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued points and kill the running ones, without waiting for them to finish."""
    # The executor has no public way to stop running tasks; its worker processes are in _processes.
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=5)


def run_tasks(
    tasks: Sequence[tuple[dict[str, Any], Any]],
    points_dir: Path,
    jobs: int,
    executor: str,
    ray_address: str | None,
    on_done: Callable[[PointOutcome], None],
    runner: Callable[..., PointOutcome] = run_point,
    extra_args: tuple[Any, ...] = (),
    on_progress: Callable[[str, float], None] | None = None,
) -> list[PointOutcome]:
    """Run ``(config, point)`` tasks on the chosen executor; each outcome goes to ``on_done`` as it completes.

    A point is anything hashable with a ``slug`` (its folder under ``points_dir``); ``runner(config, point,
    points_dir, *extra_args)`` must be a top-level function (process pools and Ray pickle it) that never
    raises for a failed point but returns its outcome. ``tailcut compare`` runs its cells through here too.
    ``on_progress(slug, fraction)`` hears a running point's progress (:mod:`tailcut.progress`) on the local
    executor; on Ray only finished points are seen.

    On Ray (``ray_address`` names a running cluster, else a local Ray is started) a task may run on
    another machine: the files its config names (and its point's ``params``, if it has them, as
    overrides) are read here and sent with it, and the files it writes under ``points_dir`` come back and
    are written here (:func:`_ray_point`); every node needs the same tailcut installed.
    """
    outcomes: dict[Any, PointOutcome] = {}

    def finish(point: Any, outcome: PointOutcome) -> None:
        outcomes[point] = outcome
        on_done(outcome)
        interrupt.check()  # a Ctrl-C dropped during the point stops the sweep before the next

    if executor == "ray":
        _run_ray(tasks, points_dir, jobs, ray_address, runner, extra_args, finish)
    elif executor != "local":
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    elif jobs <= 1:
        from tailcut.progress import set_sink

        set_sink(on_progress)
        try:
            for config, point in tasks:
                interrupt.check()
                finish(point, runner(config, point, str(points_dir), *extra_args))
        finally:
            set_sink(None)
    else:
        _run_pool(tasks, points_dir, jobs, runner, extra_args, finish, on_progress)
    return [outcomes[p] for _, p in tasks]


def _ray_init(ray: Any, address: str | None, jobs: int) -> None:
    """Start a local Ray (no ``address``; ``jobs`` > 1 caps its CPUs) or connect to a running cluster."""
    if address is None:
        ray.init(num_cpus=None if jobs <= 1 else jobs)
        return
    if os.environ.get("RAY_AUTH_MODE") is None:
        # Ray (2.60 here) turns its token authentication on for `ray start --head` when a token exists
        # on that machine (~/.ray/auth_token, which any local ray.init() creates, $RAY_AUTH_TOKEN or
        # $RAY_AUTH_TOKEN_PATH), and ray.init() does the same for a cluster it finds by itself, but not
        # for one named by its address: it then connects without the token, is refused, and reports
        # only "Failed to connect to Ray cluster at <address>" (127.0.0.1 or localhost written as this
        # machine's address). Do what Ray does for a cluster it finds (a cluster without
        # authentication accepts a driver that sends a token).
        try:
            from ray._private.authentication.authentication_token_setup import (
                maybe_enable_token_auth_if_token_available,
            )
        except ImportError:  # a Ray without token authentication
            pass
        else:
            with contextlib.suppress(TypeError):  # another Ray's signature: leave it to Ray
                maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    try:
        ray.init(address=address)
    except ConnectionError as exc:
        raise ConnectionError(
            f"{exc}. --ray-address {address}: a Ray head started with `ray start --head` must listen there "
            "and this machine must be a node of its cluster (`ray start --address=...`); with Ray's token "
            "authentication its token must be here too ($RAY_AUTH_TOKEN or ~/.ray/auth_token)"
        ) from None


def _input_files(config: dict[str, Any], point: Any) -> dict[str, bytes]:
    """The files a task reads, by the path field's value as written (a point's ``params``, if it has
    them, are overrides of its config, as :func:`run_point` applies them): read here, where the sweep
    runs, and sent to the Ray worker that runs the task, which may be on another machine."""
    from tailcut.paths import map_experiment_paths

    params = dict(getattr(point, "params", ()) or ())
    found: dict[str, bytes] = {}

    def read(value: Any, builtins: frozenset[str]) -> Any:
        # Only regular files: a FIFO would block here (the core refuses it on the worker, naming the field).
        if isinstance(value, str) and value and value not in builtins and Path(value).is_file():
            found[value] = Path(value).read_bytes()
        return value

    map_experiment_paths(apply_overrides(config, params), read)
    return found


def _ray_point(
    runner: Callable[..., PointOutcome],
    build: tuple[str, str | None],
    blobs: dict[str, bytes],
    names: dict[str, str],
    config: dict[str, Any],
    point: Any,
    *extra_args: Any,
) -> tuple[PointOutcome, dict[str, str], dict[str, bytes]]:
    """A Ray task: run ``runner`` on this worker, which may be another machine, with nothing of the
    sweep's filesystem. The files the config reads arrive as ``blobs`` (sha256 -> bytes) named by
    ``names`` (path as written -> sha256) and are written to a private folder
    (:func:`tailcut.paths.aliased`); the point runs into a private ``points`` folder whose files come back
    (path under ``points`` -> bytes) for the sweep's machine to write. Also returns where it ran (Ray's
    node id of this worker, its IP address and host name, as this worker sees them)."""
    import socket

    import ray

    from tailcut.paths import aliased
    from tailcut.provenance import commit, version

    node = {
        "node_id": ray.get_runtime_context().get_node_id(),
        "ip": ray.util.get_node_ip_address(),
        "hostname": socket.gethostname(),
    }
    if (version(), commit()) != tuple(build):
        error = (
            f"the Ray worker at {node['ip']} ({node['hostname']}) runs tailcut {version()} (commit "
            f"{commit()}), the sweep tailcut {build[0]} (commit {build[1]}): install the same tailcut wheel "
            "on every node of the cluster"
        )
        return PointOutcome(point.slug, error=error, node=node), node, {}
    with tempfile.TemporaryDirectory(prefix="tailcut-ray-") as tmp:
        aliases = {}
        for value, digest in names.items():
            local = Path(tmp, "inputs", digest, Path(value).name or "file")
            if not local.exists():
                local.parent.mkdir(parents=True, exist_ok=True)
                local.write_bytes(blobs[digest])
            aliases[value] = str(local)
        points_dir = Path(tmp, "points")
        points_dir.mkdir()
        with aliased(aliases):
            outcome = runner(config, point, str(points_dir), *extra_args)
        files = {
            path.relative_to(points_dir).as_posix(): path.read_bytes()
            for path in sorted(points_dir.rglob("*"))
            if path.is_file()
        }
    outcome.node = node
    return outcome, node, files


def _write_returned(points_dir: Path, slug: str, files: dict[str, bytes]) -> None:
    """Write the files a Ray task returned: the point's folder replaced whole (as a run's), anything
    beside it (a reproduction's ``seed=N.json``) file by file, each atomically."""
    folder = PurePosixPath(slug)
    inside: dict[PurePosixPath, bytes] = {}
    beside: dict[PurePosixPath, bytes] = {}
    for name, data in files.items():
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"a Ray worker returned a file outside the sweep's points: {name!r}")
        if rel.parts[: len(folder.parts)] == folder.parts and len(rel.parts) > len(folder.parts):
            inside[rel.relative_to(folder)] = data
        else:
            beside[rel] = data
    if inside:
        target = points_dir / slug
        claim(target, "run", overwrite=True)  # points/ is the sweep's own; a user's file there is not
        with released(target), atomic_dir(target) as tmp:
            for rel, data in inside.items():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).write_bytes(data)
    for rel, data in beside.items():  # JSON text (a reproduction's record of the run)
        write_text_atomic(points_dir / rel, data.decode())


def _run_ray(
    tasks: Sequence[tuple[dict[str, Any], Any]],
    points_dir: Path,
    jobs: int,
    ray_address: str | None,
    runner: Callable[..., PointOutcome],
    extra_args: tuple[Any, ...],
    finish: Callable[[Any, PointOutcome], None],
) -> None:
    """Ray: every task runs through :func:`_ray_point`, which needs nothing of this machine's files (a
    worker on another node has none of them): the files each config reads are sent along and each point's
    files come back to be written here. Points are spread over the cluster's nodes."""
    import hashlib

    import ray

    from tailcut.provenance import commit, version

    if not ray.is_initialized():
        _ray_init(ray, ray_address, jobs)
    blobs: dict[str, bytes] = {}
    names = []
    for config, point in tasks:
        named = {}
        for value, data in _input_files(config, point).items():
            digest = hashlib.sha256(data).hexdigest()
            blobs[digest] = data
            named[value] = digest
        names.append(named)
    blobs_ref = ray.put(blobs)  # once for all tasks; Ray hands each task the dict
    remote = ray.remote(_ray_point).options(scheduling_strategy="SPREAD")
    build = (version(), commit())
    pending = {
        remote.remote(runner, build, blobs_ref, named, config, p, *extra_args): p
        for (config, p), named in zip(tasks, names, strict=True)
    }
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            point = pending.pop(ready[0])
            try:
                outcome, node, files = ray.get(ready[0])
            except Exception as exc:  # the worker process died, or could not import tailcut
                finish(point, _crashed(point, points_dir, exc))
                continue
            try:
                _write_returned(points_dir, point.slug, files)
            except (OSError, ValueError) as exc:  # OutputError and UnicodeDecodeError are ValueErrors
                error = f"its results could not be written here: {exc}"
                outcome = PointOutcome(point.slug, error=error, node=node)
            if outcome.error is not None and not files:  # refused before it ran: say so where it would be
                outcome.error = write_error(points_dir / point.slug, outcome.error)
            finish(point, outcome)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise


def _run_pool(
    tasks: Sequence[tuple[dict[str, Any], Any]],
    points_dir: Path,
    jobs: int,
    runner: Callable[..., PointOutcome],
    extra_args: tuple[Any, ...],
    finish: Callable[[Any, PointOutcome], None],
    on_progress: Callable[[str, float], None] | None,
) -> None:
    """The local process pool: points finish in any order; progress arrives on a queue in between."""
    import multiprocessing
    import queue as queue_module

    progress_queue = multiprocessing.get_context().Queue() if on_progress is not None else None

    def drain() -> None:
        while progress_queue is not None and on_progress is not None:
            try:
                on_progress(*progress_queue.get_nowait())
            except queue_module.Empty:
                return

    pool = ProcessPoolExecutor(
        max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(), progress_queue)
    )
    try:
        futures = {pool.submit(runner, config, p, str(points_dir), *extra_args): p for config, p in tasks}
        pending = set(futures)
        while pending:
            # Wake at least a few times a second so a progress bar moves while points run.
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            interrupt.check()
            drain()
            for future in done:
                try:
                    finish(futures[future], future.result())
                except Exception as exc:  # e.g. BrokenProcessPool after a worker crash
                    finish(futures[future], _crashed(futures[future], points_dir, exc))
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown()


def _column_values(values: list[Any]) -> list[Any]:
    # Parquet needs one type per column: mixed grid values (1 and "2ms") and tables or lists become strings.
    kinds = {type(v) for v in values}
    plain = kinds <= {int, float, str, bool} and (len(kinds) <= 1 or kinds <= {int, float})
    return values if plain else [str(v) for v in values]


def _front(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return frame[columns + [c for c in frame.columns if c not in columns]]


def combine(
    grid: Mapping[str, Sequence[Any]], todo: list[Point], points_dir: Path
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Concatenate the completed points' flows and summaries with grid columns and ``seed``."""
    import pandas as pd

    flows_parts, summary_parts = [], []
    for point in todo:
        flows_file = points_dir / point.slug / "flows.parquet"
        if not flows_file.exists():
            continue
        flows = pd.read_parquet(flows_file)
        summary = summarize(flows)
        for frame in (flows, summary):
            for key, value in point.params:
                frame[key] = [value] * len(frame)
            frame["seed"] = point.seed
        flows_parts.append(flows)
        summary_parts.append(summary)
    front = [*(k for k in grid if k != "seed"), "seed"]
    flows = pd.concat(flows_parts, ignore_index=True) if flows_parts else pd.DataFrame(columns=front)
    summary = pd.concat(summary_parts, ignore_index=True) if summary_parts else pd.DataFrame(columns=front)
    for frame in (flows, summary):
        for key in front[:-1]:
            frame[key] = _column_values(list(frame[key]))
    return _front(flows, front), _front(summary, front)


def sweep(
    config: ConfigSource,
    grid: Mapping[str, Sequence[Any]],
    seeds: int = 1,
    jobs: int = 1,
    executor: str = "local",
    out: str | Path | None = None,
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
    ray_address: str | None = None,
    on_done: Callable[[PointOutcome], None] | None = None,
    overwrite: bool = False,
    limits: Mapping[str, Any] | None = None,
    progress: Callable[[float], Any] | None = None,
) -> SweepResult:
    """Run ``grid`` x ``seeds`` and return the combined tables.

    ``out`` keeps the results (points, combined Parquet, report.html); without it they go to a temporary
    folder and only the returned tables remain. An ``out`` holding this experiment's sweep is resumed,
    anything else is refused unless ``overwrite`` allows replacing an earlier result
    (:func:`tailcut.outdir.claim`). The base config and every point's config are validated up front, so a
    bad field fails before any point starts. ``on_done(outcome)`` is called as each point finishes
    (progress bars). ``limits`` (``max_memory``, ``max_events``, ``force``, as for :func:`tailcut.run`) apply
    to every point, when it is checked and when it runs. ``progress(fraction)`` is called as running points
    advance, with the share of the sweep's simulated time done (each point is worth its schemes times its
    ``max_time``; :mod:`tailcut.progress`), which never decreases; points already done count as done. Raises
    ``tailcut.SimulationError`` if every point that ran failed.
    """
    base = apply_overrides(load_experiment(config), overrides)
    resolved = resolve(base, limits)
    grid = {k: list(v) for k, v in grid.items()}
    if not grid or any(not values for values in grid.values()):
        raise ValueError("a sweep needs at least one grid key, each with at least one value")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    check_size(grid, seeds)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: must be an integer >= 1, got {jobs!r}")
    if "seed" in grid:
        bad = [v for v in grid["seed"] if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**64]
        if bad:
            raise ValueError(f"grid seed: seeds are integers in 0..2^64, got {bad[0]!r}")
        if len(set(grid["seed"])) < len(grid["seed"]):
            raise ValueError("grid seed: a seed is listed twice")
        if seeds != 1:
            raise ValueError("grid seed: the grid gives the seeds; leave seeds (--seeds) at 1")
    first_seed = resolved.get("seed", base.get("seed", 1))
    first_seed = first_seed if isinstance(first_seed, int) else 1
    all_points = points(grid, seed_range(first_seed, seeds))
    if len({p.slug for p in all_points}) < len(all_points):
        raise ValueError("grid values that differ only in punctuation would share a folder; rename them")
    per_params = check_points(base, all_points, limits)
    tracker = SweepProgress({p.slug: point_weight(per_params[p.params]) for p in all_points}, progress)
    runner = (grid, all_points, jobs, executor, ray_address, on_done or (lambda _: None), limits, tracker)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="tailcut-sweep-") as tmp:
            result = _sweep_into(base, Path(tmp), *runner, report=False, digest=config_hash(resolved))
            result.path = None
    else:
        # The report is drawn after every point ran: a missing plotting extra must stop the sweep before.
        import tailcut.report  # noqa: F401

        name = experiment_name(base, Path(out).name)
        digest = config_hash(resolved)
        claim(out, "sweep", overwrite=overwrite, experiment=name, digest=digest)
        with released(out):
            result = _sweep_into(base, Path(out), *runner, digest=digest)
    result.config = resolved
    return result


def _sweep_into(
    base: dict[str, Any],
    out: Path,
    grid: dict[str, list[Any]],
    all_points: list[Point],
    jobs: int,
    executor: str,
    ray_address: str | None,
    on_done: Callable[[PointOutcome], None],
    limits: Mapping[str, Any] | None = None,
    tracker: SweepProgress | None = None,
    report: bool = True,
    digest: str | None = None,
) -> SweepResult:
    """Run the missing points into ``out/points`` and write the combined tables, and the report unless
    ``report`` is false, beside them."""

    points_dir = out / "points"
    points_dir.mkdir(parents=True, exist_ok=True)
    done = {p.slug for p in all_points if (points_dir / p.slug / "flows.parquet").exists()}
    todo = [p for p in all_points if p.slug not in done]
    outcomes = {slug: PointOutcome(slug, skipped=True) for slug in done}
    tracker = tracker or SweepProgress({p.slug: 1.0 for p in all_points})

    def point_done(outcome: PointOutcome) -> None:
        tracker.finished(outcome.slug)
        on_done(outcome)

    for outcome in outcomes.values():
        point_done(outcome)
    outcomes.update(
        {
            o.slug: o
            for o in run_tasks(
                [(base, p) for p in todo],
                points_dir,
                jobs,
                executor,
                ray_address,
                point_done,
                # Passed only when given, so runners that tests put in place keep working.
                extra_args=(limits,) if limits is not None else (),
                on_progress=tracker.update if tracker.callback is not None else None,
            )
        }
    )
    interrupt.check()  # nothing combined from a sweep that was stopped
    ordered = [outcomes[p.slug] for p in all_points]
    if all(o.error is not None for o in ordered):
        first = ordered[0]
        raise _core.SimulationError(
            f"every point of the sweep failed ({len(ordered)}); the first, {first.slug}: {first.error}"
        )
    flows, summary = combine(grid, all_points, points_dir)
    result = SweepResult(flows=flows, summary=summary, grid=grid, outcomes=ordered, path=out)
    name = experiment_name(base, out.name)
    from tailcut.provenance import provenance, write_parquet

    stamp = provenance(digest=digest)
    with combined_files(out) as tmp:
        write_parquet(flows, tmp / "flows.parquet", stamp)
        write_parquet(summary, tmp / "summary.parquet", stamp)
        meta = {**stamp, "name": name, "grid": grid, "points": [o.record() for o in ordered]}
        (tmp / "sweep.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if report:
            from tailcut.provenance import provenance
            from tailcut.report import sweep_report_html
            from tailcut.summary import not_measured

            # The digest the folder resumes by (sweep() claims it with this very config_hash).
            page = sweep_report_html(
                {name: (summary, list(grid))},
                result.failed,
                {name: provenance(resolve(base, limits))},
                {name: not_measured(base)},
            )
            (tmp / "report.html").write_text(page)
    return result
