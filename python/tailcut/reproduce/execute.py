"""Running a paper's entries over seeds, resumably, through the sweep executors.

Each (entry, seed) runs like ``tailcut run`` into ``OUT/runs/<paper>/<label>/seed=<N>/``; beside it
``seed=<N>.json`` records the hash of the resolved config it ran and its wall time. A point is skipped
when its ``flows.parquet`` exists and that hash matches the config now; a changed experiment file is
re-run in place (the run folder is tailcut's own). Seeds are ``base .. base+N-1`` with ``base`` the
file's ``seed``, as ``tailcut sweep --seeds`` numbers them, so ``--seeds 1`` is the plain run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailcut.reproduce.paper import Entry, Paper
from tailcut.seeds import seed_range


@dataclass(frozen=True)
class Task:
    """One entry of one paper at one seed; ``slug`` is its folder under ``OUT/runs``."""

    paper: str
    entry: Entry
    seed: int
    digest: str
    root: str  # the repository root, where the run must happen (CDF paths are relative to it)

    @property
    def slug(self) -> str:
        return f"{self.paper}/{self.entry.label}/seed={self.seed}"


def point_config(entry: Entry, root: Path, seed: int) -> tuple[dict[str, Any], str]:
    """The entry's config with its overrides and ``seed``, and the hash of its resolved form."""
    from tailcut.config import apply_overrides, load_experiment, resolve
    from tailcut.outdir import config_hash

    path = root / entry.file
    if not path.is_file():
        raise FileNotFoundError(f"experiment file {path} is missing (entry {entry.label!r})")
    raw = apply_overrides(load_experiment(path), {**dict(entry.overrides), "seed": seed})
    return raw, config_hash(resolve(raw))


def base_seed(entry: Entry, root: Path) -> int:
    """The first seed of an entry: its file's ``seed`` (1 without one), as ``tailcut sweep`` takes it."""
    from tailcut.config import load_config

    seed = load_config(root / entry.file).get("seed", 1)
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 1


def sidecar(runs_dir: Path, task: Task) -> Path:
    return runs_dir / f"{task.slug}.json"


def is_done(runs_dir: Path, task: Task) -> bool:
    """Resume rule: the run's flows exist and were produced by this very config."""
    info = sidecar(runs_dir, task)
    if not (runs_dir / task.slug / "flows.parquet").exists() or not info.exists():
        return False
    try:
        return json.loads(info.read_text()).get("config_hash") == task.digest
    except (OSError, ValueError):
        return False


def run_task(config: dict[str, Any], task: Task, runs_dir: str) -> Any:
    """Run one point (top level, so that process pools and Ray can ship it); never raises for a failed
    point but returns its outcome, as :func:`tailcut.sweep.run_tasks` requires."""
    from tailcut.outdir import write_error, write_text_atomic
    from tailcut.runner import run_to_dir
    from tailcut.sweep import PointOutcome

    out = Path(runs_dir) / task.slug
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        # A pool worker inherits the caller's folder, a Ray worker does not; one on another machine may
        # have no such folder, and needs none: the config's paths are absolute and its files were sent.
        with contextlib.suppress(OSError):
            os.chdir(task.root)
        started = time.perf_counter()  # wall time feeds --list only, never a result
        result = run_to_dir(config, out, seed=task.seed, overwrite=True)
        from tailcut.provenance import provenance

        info = {
            **provenance(),  # which tailcut ran it; the resume rule reads config_hash only
            "config_hash": task.digest,
            "wall_seconds": round(time.perf_counter() - started, 3),
            "flows": len(result.flows),
        }
        write_text_atomic(sidecar(Path(runs_dir), task), json.dumps(info) + "\n")
        return PointOutcome(task.slug)
    except Exception as exc:  # a failed point is reported, the others go on
        return PointOutcome(
            task.slug, error=write_error(out, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        )


def plan(
    papers: list[Paper], labels: dict[str, list[Entry]], seeds: int, root: Path
) -> list[tuple[dict, Task]]:
    """Every (config, task) to consider, validated up front so that a bad file fails before any run."""
    tasks = []
    for paper in papers:
        for entry in labels[paper.name]:
            first = base_seed(entry, root)
            for seed in seed_range(first, seeds):
                config, digest = point_config(entry, root, seed)
                tasks.append((config, Task(paper.name, entry, seed, digest, str(root))))
    return tasks


def execute(
    tasks: list[tuple[dict, Task]],
    runs_dir: Path,
    jobs: int,
    executor: str = "local",
    ray_address: str | None = None,
    on_done: Callable[[Any], None] | None = None,
) -> dict[str, str]:
    """Run the tasks not already done; returns slug -> error of the failed ones."""
    from tailcut.sweep import PointOutcome, run_tasks

    done_cb = on_done or (lambda _: None)
    todo = []
    for config, task in tasks:
        if is_done(runs_dir, task):
            done_cb(PointOutcome(task.slug, skipped=True))
        else:
            todo.append((config, task))
    outcomes = run_tasks(todo, runs_dir, jobs, executor, ray_address, done_cb, runner=run_task)
    return {o.slug: o.error for o in outcomes if o.error is not None}
