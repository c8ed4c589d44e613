"""``tailcut reproduce``: re-run a paper's checked-in experiments over seeds and write its tables.

Every entry of a paper (``PAPERS``; one module per paper) runs with N seeds through the normal runner
(:mod:`tailcut.reproduce.execute`, resumable), then each run's per-scheme figures
(:mod:`tailcut.summary`, ``docs/metrics.md``) are combined over seeds as median [min-max], with the
conclusions that flip between seeds flagged (:mod:`tailcut.reproduce.aggregate`), into ``OUT/PAPER.md``
and ``OUT/PAPER.json`` (:mod:`tailcut.reproduce.render`); ``OUT/headlines.md`` puts each paper's headline
beside ours (:mod:`tailcut.reproduce.headlines`).

The experiment files are the repository's ``experiments/`` (their CDF paths are relative to the
repository root, so runs happen from there); an installed copy without the repository says so.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tailcut.reproduce import baselines, cloudburst, cp, dcquic, fuso, tracks
from tailcut.reproduce.paper import Entry, Paper

PAPERS: dict[str, Paper] = {
    p.name: p for p in (fuso.PAPER, tracks.PAPER, cloudburst.PAPER, cp.PAPER, dcquic.PAPER, baselines.PAPER)
}
DEFAULT_SEEDS = 5
# Where a source checkout holds experiments/ when this package is loaded from it (python/tailcut/...).
SOURCE_TREE = Path(__file__).resolve().parents[3]


def find_root(start: Path | None = None) -> Path:
    """The repository root: the first of the working folder, its parents, and the source tree this
    package was loaded from that holds ``experiments/``."""
    here = (start or Path.cwd()).resolve()
    candidates = [here, *here.parents, SOURCE_TREE]
    for folder in candidates:
        if (folder / "experiments").is_dir() and (folder / "workloads").is_dir():
            return folder
    raise FileNotFoundError(
        f"no experiments/ directory in {here} or its parents: the papers' experiment files (and the "
        "workloads/ they read) ship with the tailcut repository, not the package; run from a clone"
    )


def select(paper: str, experiments: Sequence[str] = ()) -> list[tuple[Paper, list[Entry]]]:
    """The papers (``all`` for every one) and their entries matching ``experiments`` (labels, file stems
    or globs over them; empty: all), in page order. Unknown names raise ValueError naming them."""
    if paper == "all":
        papers = list(PAPERS.values())
    elif paper in PAPERS:
        papers = [PAPERS[paper]]
    else:
        raise ValueError(f"paper: unknown paper {paper!r}; choose one of {', '.join(PAPERS)}, or all")
    chosen = []
    unmatched = set(experiments)
    for p in papers:
        entries = []
        for entry in p.entries():
            names = (entry.label, Path(entry.file).stem)
            hits = [x for x in experiments if any(fnmatch.fnmatchcase(n, x) for n in names)]
            unmatched -= set(hits)
            if not experiments or hits:
                entries.append(entry)
        if entries:
            chosen.append((p, entries))
    if unmatched:
        known = ", ".join(e.label for p in papers for e in p.entries())
        raise ValueError(
            f"experiment: no entry of {paper} matches {', '.join(sorted(unmatched))}; known: {known}"
        )
    return chosen


def reproduce(
    paper: str,
    experiments: Sequence[str] = (),
    seeds: int = DEFAULT_SEEDS,
    jobs: int = 1,
    out: str | Path = "results/reproduce",
    root: str | Path | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    command: str | None = None,
    on_plan: Callable[[int], None] | None = None,
    on_done: Callable[[Any], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run (or resume) and write ``OUT/<paper>.md`` and ``.json`` for each selected paper; returns the
    documents by paper. Failed points are listed in the documents (``failed``); the others still count.
    Raises ValueError for a bad selection or ``seeds`` < 1, FileNotFoundError without the repository.
    """
    from tailcut.reproduce.execute import execute, plan

    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds: must be an integer >= 1, got {seeds!r}")
    if jobs < 1:
        raise ValueError(f"jobs: must be >= 1, got {jobs!r}")
    chosen = select(paper, experiments)
    root = Path(root).resolve() if root is not None else find_root()
    out = Path(out).resolve()
    runs_dir = out / "runs"
    with contextlib.chdir(root):  # experiment files name their CDFs relative to the repository root
        tasks = plan([p for p, _ in chosen], {p.name: e for p, e in chosen}, seeds, root)
        if on_plan is not None:
            on_plan(len(tasks))
        failed = execute(tasks, runs_dir, jobs, executor, ray_address, on_done)
    documents = {}
    for p, entries in chosen:
        documents[p.name] = collect(p, entries, tasks, runs_dir, failed, seeds, command)
        write_page(p, documents[p.name], out)
    from tailcut.reproduce import headlines

    headlines.write(out)  # from every paper document in OUT: each holds the entries its last run chose
    return documents


def collect(
    paper: Paper, entries, tasks, runs_dir: Path, failed: dict[str, str], seeds: int, command
) -> dict:
    """The paper's document from the finished runs on disk."""
    from tailcut.reproduce.aggregate import aggregate_entry

    groups = []
    for group in paper.groups:
        rendered = []
        for entry in (e for e in group.entries if e in entries):
            mine = [t for _, t in tasks if t.paper == paper.name and t.entry == entry]
            per_seed = {}
            for task in mine:
                if task.slug not in failed and (runs_dir / task.slug / "flows.parquet").exists():
                    per_seed[task.seed] = paper.rows(load_tables(runs_dir / task.slug), entry)
            item = {"label": entry.label, "file": entry.file, "overrides": dict(entry.overrides)}
            item["missing_seeds"] = [t.seed for t in mine if t.seed not in per_seed]
            # Each seed's config digest (the seed is part of the config), as the run folder resumes by.
            item["config_digests"] = {str(t.seed): t.digest for t in mine}
            item["failed"] = {t.slug: failed[t.slug] for t in mine if t.slug in failed}
            if per_seed:
                item.update(aggregate_entry(paper, per_seed, *paper.criterion(group)))
            else:
                main, better = paper.criterion(group)
                item.update(
                    main=main,
                    higher_is_better=better,
                    seeds=[],
                    rows=[],
                    ranking_flips=[],
                    error="every seed failed: " + "; ".join(item["failed"].values()),
                )
            rendered.append(item)
        if rendered:
            groups.append({"title": group.title, "entries": rendered})
    from tailcut.provenance import provenance

    return {
        "paper": paper.name,
        "title": paper.title,
        "provenance": provenance(),
        "seeds": seeds,
        "main": paper.main,
        "higher_is_better": paper.higher_is_better,
        "command": command or f"tailcut reproduce {paper.name} --seeds {seeds}",
        "groups": groups,
    }


def load_tables(folder: Path):
    """One run folder as the metric functions take it."""
    from tailcut.reproduce.paper import RunTables
    from tailcut.results import Result

    result = Result.load(folder)
    return RunTables(result.flows, result.ports, result.runs, result.config)


def write_page(paper: Paper, document: dict[str, Any], out: Path) -> None:
    from tailcut.outdir import write_text_atomic
    from tailcut.reproduce.render import markdown, to_json

    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / f"{paper.name}.json", to_json(document))
    write_text_atomic(out / f"{paper.name}.md", markdown(paper, document))


def listing(paper: str = "all", out: str | Path | None = None) -> str:
    """What exists: every paper's entries with their file and seconds per seed on this machine.

    Seconds come from runs recorded in ``OUT/runs`` when present (measured), else from the timings
    shipped with the package (:mod:`tailcut.reproduce.timings`, each with where it was measured), else
    ``not measured``; nothing is extrapolated.
    """
    from tailcut.reproduce.timings import TIMINGS

    shipped = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    lines: list[str] = []
    notes: list[str] = []  # where the seconds come from, numbered once each
    grand = 0.0
    for p, entries in select(paper):
        lines.append(f"{p.name}: {p.title}")
        total, known = 0.0, 0
        for entry in entries:
            seconds, source = _seconds(p.name, entry, out, shipped)
            if seconds is not None:
                total, known = total + seconds, known + 1
                if source not in notes:
                    notes.append(source)
                when = f"{seconds:8.1f} s/seed [{notes.index(source) + 1}]"
            else:
                when = "  not measured   "
            extra = "".join(f" {k}={v}" for k, v in entry.overrides)
            lines.append(f"  {entry.label:<28} {when}  {entry.file}{extra}")
        lines.append(f"  {p.name}: {total:.0f} s per seed for the {known} measured of {len(entries)} entries")
        grand += total
    if paper == "all":
        lines.append(f"all papers: {grand:.0f} s per seed for the measured entries")
    lines += ["", "seconds per seed on one core; a run with --jobs J takes about total x seeds / J"]
    lines += [f"[{i}] {note}" for i, note in enumerate(notes, 1)]
    return "\n".join(lines)


def _seconds(paper: str, entry: Entry, out, shipped: dict) -> tuple[float | None, str]:
    if out is not None:
        walls = []
        for info in sorted((Path(out) / "runs" / paper / entry.label).glob("seed=*.json")):
            with contextlib.suppress(OSError, ValueError):
                walls.append(float(json.loads(info.read_text())["wall_seconds"]))
        if walls:
            return sum(walls) / len(walls), f"mean of {len(walls)} run(s) in {out}"
    value = shipped.get("seconds", {}).get(f"{paper}/{entry.label}")
    source = shipped.get("sources", {}).get(f"{paper}/{entry.label}", "shipped")
    return (float(value), source) if value is not None else (None, "")


__all__ = ["DEFAULT_SEEDS", "PAPERS", "find_root", "listing", "reproduce", "select"]
