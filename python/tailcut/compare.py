"""Head to head: every scheme on the same topologies, workloads and failures (``tailcut compare``).

A *suite* (TOML, ``experiments/compare/suite.toml``) names four sets and crosses them:

- ``[topologies.NAME]``: ``topology`` (the experiment's topology table), optional ``network`` (replaces
  ``base.network``), ``vars`` (values for ``"@name"`` placeholders in failures, workloads and schemes, e.g.
  the core link a single-link failure hits), ``set`` (``"component.key.path" = value`` edits of workload
  components, e.g. the incast fan-out of a small topology) and ``not_applicable`` (see below).
- ``[workloads.NAME]``: ``components``, a list of ``[[workload]]`` tables.
- ``[failures.NAME]``: ``faults``, a list of ``[[faults]]`` tables (empty for no failure).
- ``[schemes.NAME]``: ``transport``, ``params``, optional ``network``, ``shim`` (as in an experiment's
  ``[[schemes]]``), ``carries`` (the workload components the scheme carries; the others go on
  ``other_traffic``, required then), ``not_applicable``, ``pending``, ``combination`` (a pairing the
  papers did not try) and ``not_measured`` (``{ timeout_fraction = "why", extra_bytes = "why" }``: metrics
  the scheme's engine does not count; shown as ``n/m``, never as zero; a transport's own, such as DCQUIC's
  timeouts, come from :data:`tailcut.summary.NOT_MEASURED` without being declared).

``[scales.ci|small|full]`` give ``max_time`` and ``set`` (as for topologies) so one suite runs at three
sizes; ``[base]`` holds experiment keys shared by every scenario; ``[vars]`` default values of placeholders.

A *scenario* is (topology, workload, failure); a *cell* is (scenario, scheme) and runs as one experiment
with that single scheme, through the sweep executors (local processes or Ray), one folder per cell under
``OUT/points/``, resumable. Cells are never silently dropped: ``not_applicable = { "workload.incast" =
"why" }`` (on a scheme or a topology; keys ``topology.X``, ``workload.X``, ``failure.X``) marks them
``n/a``; a scheme with ``pending = "what it needs"`` whose configuration does not validate in this build is
marked ``pending`` (with the validation error), and runs as soon as it does validate.

Per cell the table has, as ``docs/metrics.md`` defines them (:mod:`tailcut.summary`), small-flow
(< 100 KB) p50 / p99 / p99.9 FCT with unfinished flows infinitely late and their number beside them, the
timeout fraction of small flows, extra bytes of small flows and of all flows, and the mean throughput of
completed large flows (>= 1 MB). Schemes are ranked per scenario by small-flow p99, then by the number of
unfinished small flows, then p99.9, then p50.

``seeds`` (``--seeds N``) runs every cell with the suite's ``seed`` and the N - 1 after it, each seed into
``points/<cell>/seed=<S>/`` (one seed keeps ``points/<cell>/``), ranked per seed and combined as median
[min-max] by :mod:`tailcut.compare_seeds`.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailcut import _core
from tailcut.config import ConfigSource, load_config, set_path, source_file
from tailcut.outdir import claim, combined_files, config_hash, write_error
from tailcut.paths import anchor_suite
from tailcut.summary import NOT_MEASURED, size_class, summary_stats
from tailcut.sweep import PointOutcome

if TYPE_CHECKING:  # imported where used: `tailcut validate` on a suite must not pay for pandas
    import pandas as pd

SCALES = ("ci", "small", "full")

_SUITE_KEYS = {"name", "description", "seed", "base", "vars", "scales", "topologies", "workloads",
               "failures", "schemes"}  # fmt: skip
_TOPOLOGY_KEYS = {"description", "topology", "network", "vars", "set", "not_applicable"}
_WORKLOAD_KEYS = {"description", "components"}
_FAILURE_KEYS = {"description", "faults"}
_SCALE_KEYS = {"description", "max_time", "set"}
_SCHEME_KEYS = {"description", "transport", "params", "network", "shim", "carries", "other_traffic",
                "not_applicable", "pending", "combination", "not_measured"}  # fmt: skip
# Metrics a scheme may declare it cannot measure (``not_measured = { extra_bytes = "why" }``), and the
# table columns each one blanks.
NOT_MEASURABLE = {
    "timeout_fraction": ("timeout_fraction",),
    "extra_bytes": ("extra_bytes_small", "extra_bytes_all"),
}
_AXES = ("topology", "workload", "failure")

# Status of a cell in the results table.
OK, FAILED, NOT_APPLICABLE, PENDING = "ok", "failed", "n/a", "pending"


class SuiteError(ValueError):
    """A malformed suite; the message names the field (``schemes.cp.carries: ...``)."""


# --- the suite ----------------------------------------------------------------------------------------------


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SuiteError(f"{where}: expected a table, got {type(value).__name__}")
    return value


def _known_keys(entry: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise SuiteError(f"{where}.{unknown[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def _named_tables(suite: Mapping[str, Any], key: str, allowed: set[str]) -> dict[str, dict[str, Any]]:
    tables = _table(suite.get(key), key) if key in suite else None
    if not tables:
        raise SuiteError(f"{key}: the suite needs at least one entry ([{key}.NAME])")
    for name, entry in tables.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise SuiteError(f"{key}.{name}: names may use letters, digits, '_', '-' and '.' only")
        _known_keys(_table(entry, f"{key}.{name}"), allowed, f"{key}.{name}")
    return tables


def _string_map(value: Any, where: str) -> dict[str, str]:
    table = _table(value, where)
    for k, v in table.items():
        if not isinstance(v, str) or not v.strip():
            raise SuiteError(f"{where}.{k}: expected a non-empty reason string")
    return table


@dataclass
class Suite:
    """A loaded, checked suite (see the module doc for the format)."""

    name: str
    seed: int
    base: dict[str, Any]
    vars: dict[str, Any]
    scales: dict[str, dict[str, Any]]
    topologies: dict[str, dict[str, Any]]
    workloads: dict[str, dict[str, Any]]
    failures: dict[str, dict[str, Any]]
    schemes: dict[str, dict[str, Any]]
    source: str = ""


def load_suite(source: ConfigSource) -> Suite:
    """Load and check a suite (a path, TOML text or a dict); raises :class:`SuiteError` naming the field."""
    raw = load_config(source)
    path = source_file(source)
    if path is not None:
        anchor_suite(raw, path.resolve().parent)
    _known_keys(raw, _SUITE_KEYS, "suite")
    name = raw.get("name", "compare")
    if not isinstance(name, str) or not name:
        raise SuiteError("name: expected a non-empty string")
    seed = raw.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise SuiteError(f"seed: expected a non-negative integer, got {seed!r}")
    base = _table(raw.get("base", {}), "base")
    for key in ("topology", "workload", "faults", "schemes", "seed", "name"):
        if key in base:
            raise SuiteError(f"base.{key}: set by the suite's sets, not in base")
    scales = _table(raw.get("scales", {}), "scales")
    for scale, entry in scales.items():
        if scale not in SCALES:
            raise SuiteError(f"scales.{scale}: unknown scale (use {', '.join(SCALES)})")
        _known_keys(_table(entry, f"scales.{scale}"), _SCALE_KEYS, f"scales.{scale}")
    suite = Suite(
        name=name,
        seed=seed,
        base=base,
        vars=_table(raw.get("vars", {}), "vars"),
        scales=scales,
        topologies=_named_tables(raw, "topologies", _TOPOLOGY_KEYS),
        workloads=_named_tables(raw, "workloads", _WORKLOAD_KEYS),
        failures=_named_tables(raw, "failures", _FAILURE_KEYS),
        schemes=_named_tables(raw, "schemes", _SCHEME_KEYS),
        source=str(source) if not isinstance(source, Mapping) else "",
    )
    _check(suite)
    return suite


def _check(suite: Suite) -> None:
    """Structural checks that need the whole suite, and each scheme's transport checked by the Rust core;
    the core checks each cell's whole experiment when the suite is planned."""
    names = {"topology": suite.topologies, "workload": suite.workloads, "failure": suite.failures}
    components: set[str] = set()
    for name, w in suite.workloads.items():
        comps = w.get("components")
        if not isinstance(comps, list) or not comps:
            raise SuiteError(f"workloads.{name}.components: expected a non-empty list of workload tables")
        for i, c in enumerate(comps):
            comp = _table(c, f"workloads.{name}.components[{i}]")
            if not isinstance(comp.get("name"), str):
                raise SuiteError(f"workloads.{name}.components[{i}].name: every component needs a name")
            components.add(comp["name"])
    for name, f in suite.failures.items():
        if not isinstance(f.get("faults", None), list):
            raise SuiteError(f"failures.{name}.faults: expected a list of fault tables (empty for none)")
    for name, t in suite.topologies.items():
        if "topology" not in t:
            raise SuiteError(f"topologies.{name}.topology: missing (the experiment's topology table)")
        _table(t.get("vars", {}), f"topologies.{name}.vars")
        _check_sets(t.get("set", {}), f"topologies.{name}.set", components)
        _check_na(t.get("not_applicable", {}), f"topologies.{name}.not_applicable", names)
    for scale, s in suite.scales.items():
        _check_sets(s.get("set", {}), f"scales.{scale}.set", components)
    for name, s in suite.schemes.items():
        where = f"schemes.{name}"
        if not isinstance(s.get("transport"), str):
            raise SuiteError(f"{where}.transport: missing (a transport from `tailcut schemes`)")
        if "pending" not in s:
            _check_transport(s, suite.vars, where)
        _check_na(s.get("not_applicable", {}), f"{where}.not_applicable", names)
        for key in _string_map(s.get("not_measured", {}), f"{where}.not_measured"):
            if key not in NOT_MEASURABLE:
                raise SuiteError(f"{where}.not_measured.{key}: expected one of {', '.join(NOT_MEASURABLE)}")
        if "pending" in s and (not isinstance(s["pending"], str) or not s["pending"].strip()):
            raise SuiteError(f"{where}.pending: expected a string saying what the scheme needs")
        if not isinstance(s.get("combination", False), bool):
            raise SuiteError(f"{where}.combination: expected true or false")
        if "carries" in s:
            carries = s["carries"]
            if not isinstance(carries, list) or not all(isinstance(c, str) for c in carries) or not carries:
                raise SuiteError(f"{where}.carries: expected a non-empty list of workload component names")
            for c in carries:
                if c not in components:
                    raise SuiteError(f"{where}.carries: no workload component named {c!r}")
            other = s.get("other_traffic")
            if not isinstance(other, dict) or "transport" not in other:
                raise SuiteError(
                    f"{where}.other_traffic: a scheme with `carries` needs other_traffic = "
                    "{ transport = ..., params = {...} } for the components it does not carry"
                )
            _check_transport(other, suite.vars, f"{where}.other_traffic")
        elif "other_traffic" in s:
            raise SuiteError(f"{where}.other_traffic: only used with `carries`")


def _check_transport(entry: Mapping[str, Any], variables: Mapping[str, Any], where: str) -> None:
    """The Rust core checks ``transport``, ``params`` and ``shim`` as it checks an experiment's scheme, with
    the suite's placeholder values; placeholders only topologies give are left to the per-cell check."""
    fields = {k: entry[k] for k in ("transport", "params", "shim") if k in entry}
    if not _placeholders(fields) <= set(variables):
        return
    try:
        _core.check_scheme(json.dumps(_substitute(fields, variables, where)))
    except _core.ConfigError as exc:
        raise SuiteError(
            f"{where}.{exc.path}: {exc.reason}" if exc.path else f"{where}: {exc.reason}"
        ) from exc


def _placeholders(value: Any) -> set[str]:
    """The names of the ``"@name"`` placeholders in ``value``."""
    if isinstance(value, str) and value.startswith("@"):
        return {value[1:]}
    if isinstance(value, dict):
        return set().union(*(_placeholders(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_placeholders(v) for v in value))
    return set()


def _check_sets(value: Any, where: str, components: set[str]) -> None:
    for key in _table(value, where):
        comp, sep, path = key.partition(".")
        if not sep or not path:
            raise SuiteError(f'{where}.{key}: expected "component.key.path"')
        if comp not in components:
            raise SuiteError(f"{where}.{key}: no workload component named {comp!r}")


def _check_na(value: Any, where: str, names: Mapping[str, Mapping[str, Any]]) -> None:
    for key in _string_map(value, where):
        axis, sep, name = key.partition(".")
        if not sep or axis not in names:
            raise SuiteError(f'{where}.{key}: expected "topology.NAME", "workload.NAME" or "failure.NAME"')
        if name not in names[axis]:
            raise SuiteError(f"{where}.{key}: no {axis} named {name!r}")


# --- expansion ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One scheme on one scenario: a point for the sweep executors (hashable, with a folder ``slug``)."""

    topology: str
    workload: str
    failure: str
    scheme: str

    @property
    def scenario(self) -> str:
        return f"{self.topology}/{self.workload}/{self.failure}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9._=-]+", "_", "__".join((*self.key, self.scheme)))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.topology, self.workload, self.failure)


@dataclass
class Planned:
    """A cell and what to do with it: run ``config``, or report ``status`` (n/a, pending) with ``reason``."""

    cell: Cell
    status: str
    reason: str = ""
    config: dict[str, Any] | None = None


def _substitute(value: Any, variables: Mapping[str, Any], where: str) -> Any:
    """Replace every string ``"@name"`` in ``value`` by ``variables[name]``."""
    if isinstance(value, str) and value.startswith("@"):
        name = value[1:]
        if name not in variables:
            raise SuiteError(
                f"{where}: no value for placeholder {value!r} (give it in vars or topologies.*.vars)"
            )
        return variables[name]
    if isinstance(value, dict):
        return {k: _substitute(v, variables, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _apply_sets(components: list[dict[str, Any]], sets: Mapping[str, Any]) -> None:
    for key, value in sets.items():
        comp, _, path = key.partition(".")
        for c in components:
            if c.get("name") == comp:
                set_path(c, path, value)


def _not_applicable(entry: Mapping[str, Any], cell: Cell) -> str | None:
    na = entry.get("not_applicable", {})
    for axis, name in zip(_AXES, cell.key, strict=True):
        if f"{axis}.{name}" in na:
            return na[f"{axis}.{name}"]
    return None


def cell_config(suite: Suite, cell: Cell, scale: str) -> dict[str, Any]:
    """The single-scheme experiment of one cell at one scale."""
    import copy

    topo = suite.topologies[cell.topology]
    scheme = suite.schemes[cell.scheme]
    variables = {**suite.vars, **topo.get("vars", {})}
    scale_entry = suite.scales.get(scale, {})
    components = copy.deepcopy(suite.workloads[cell.workload]["components"])
    _apply_sets(components, topo.get("set", {}))
    _apply_sets(components, scale_entry.get("set", {}))
    components = _substitute(components, variables, f"workloads.{cell.workload}.components")
    entry: dict[str, Any] = {"name": cell.scheme, "transport": scheme["transport"]}
    for key in ("params", "network", "shim"):
        if key in scheme:
            entry[key] = _substitute(copy.deepcopy(scheme[key]), variables, f"schemes.{cell.scheme}.{key}")
    config = copy.deepcopy(suite.base)
    if "network" in topo:
        config["network"] = copy.deepcopy(topo["network"])
    if "max_time" in scale_entry:
        config["max_time"] = scale_entry["max_time"]
    config.update(
        name=f"{suite.name}-{cell.slug}",
        seed=suite.seed,
        topology=copy.deepcopy(topo["topology"]),
        faults=_substitute(
            copy.deepcopy(suite.failures[cell.failure]["faults"]),
            variables,
            f"failures.{cell.failure}.faults",
        ),
        workload=components,
        schemes=[entry],
    )
    if "carries" in scheme:
        carried = [c["name"] for c in components if c["name"] in scheme["carries"]]
        entry["applies_to"] = carried
        config["other_traffic"] = _substitute(
            copy.deepcopy(scheme["other_traffic"]), variables, f"schemes.{cell.scheme}.other_traffic"
        )
    return config


def plan(
    suite: Suite,
    scale: str = "ci",
    schemes: Sequence[str] | None = None,
    scenarios: str | None = None,
    validate: Callable[[dict[str, Any]], Any] | None = None,
) -> list[Planned]:
    """Every (scenario, scheme) cell at ``scale`` in suite order, each to run or marked n/a / pending.

    ``schemes`` restricts to those names; ``scenarios`` is a glob over ``topology/workload/failure``.
    ``validate(config)`` (default: the Rust core's check) raises for an invalid experiment: for a scheme
    with ``pending`` that makes the cell pending, for any other it is a :class:`SuiteError`.
    """
    if scale not in SCALES:
        raise SuiteError(f"scale: expected one of {', '.join(SCALES)}, got {scale!r}")
    if validate is None:
        from tailcut.config import resolve as validate
    for name in schemes or ():
        if name not in suite.schemes:
            raise SuiteError(f"--schemes: no scheme named {name!r} in the suite")
    chosen = [s for s in suite.schemes if schemes is None or s in schemes]
    checked: dict[tuple[str, ...], str | None] = {}
    out: list[Planned] = []
    for topology in suite.topologies:
        for workload in suite.workloads:
            for failure in suite.failures:
                for scheme in chosen:
                    cell = Cell(topology, workload, failure, scheme)
                    if scenarios and not fnmatch.fnmatchcase(cell.scenario, scenarios):
                        continue
                    out.append(_plan_cell(suite, cell, scale, validate, checked))
    return out


def _resolver(limits: Mapping[str, Any] | None) -> Callable[[dict[str, Any]], Any]:
    """The core's check of a cell's experiment under ``limits``."""
    from tailcut.config import resolve

    return lambda config: resolve(config, limits)


def check_suite(
    source: ConfigSource, scale: str | None = None, limits: Mapping[str, Any] | None = None
) -> dict[str, dict[str, int]]:
    """Load ``source`` and plan every cell at ``scale`` (default: every scale the suite defines, else
    ``ci``), each cell's experiment checked by the core under ``limits``, as ``tailcut compare`` would before
    running; raises :class:`SuiteError` / ``tailcut.ConfigError`` naming the field (and the cell).
    Returns, per scale, the number of cells per status (``tailcut validate`` on a suite)."""
    suite = load_suite(source)
    scales = [scale] if scale else [s for s in SCALES if s in suite.scales] or ["ci"]
    counts: dict[str, dict[str, int]] = {}
    for s in scales:
        per: dict[str, int] = {}
        for p in plan(suite, s, validate=_resolver(limits)):
            per[p.status] = per.get(p.status, 0) + 1
        counts[s] = per
    return counts


def _plan_cell(
    suite: Suite,
    cell: Cell,
    scale: str,
    validate: Callable[[dict[str, Any]], Any],
    checked: dict[tuple[str, ...], str | None],
) -> Planned:
    """Plan one cell. Validating every cell would cost a workload generation each, so a cell is checked
    only when its scenario or its (topology, workload, scheme) has not been validated yet; ``checked``
    maps those keys to the validation error of the cell that checked them (None when it validated)."""
    scheme = suite.schemes[cell.scheme]
    reason = _not_applicable(suite.topologies[cell.topology], cell) or _not_applicable(scheme, cell)
    if reason:
        return Planned(cell, NOT_APPLICABLE, reason)
    config = cell_config(suite, cell, scale)
    if "carries" in scheme and not config["schemes"][0]["applies_to"]:
        return Planned(cell, NOT_APPLICABLE, f"carries only {', '.join(scheme['carries'])}")
    keys = [cell.key, (cell.topology, cell.workload, "", cell.scheme)]
    if all(k in checked for k in keys):
        error = checked[keys[1]]
    else:
        try:
            validate(config)
            error = None
        except ValueError as exc:  # tailcut.ConfigError is a ValueError
            error = str(exc)
            if "pending" not in scheme:
                raise SuiteError(f"{cell.scenario} x {cell.scheme}: {exc}") from exc
        if error is None:  # a pending scheme's failure says nothing about the scenario
            checked[cell.key] = None
        checked[keys[1]] = error
    if error is not None:
        return Planned(cell, PENDING, f"{scheme['pending']} (this build: {error})")
    return Planned(cell, OK, config=config)


# --- running ------------------------------------------------------------------------------------------------


def seed_folder(seed: int, seeds: Sequence[int]) -> str:
    """Where a cell's run at ``seed`` goes inside ``points/<cell slug>``: the cell's folder itself for one
    seed (as before ``--seeds``, so one-seed folders resume), ``seed=<N>`` for several, as ``tailcut
    reproduce`` names its seeds."""
    return f"seed={seed}" if len(seeds) > 1 else ""


@dataclass(frozen=True)
class CellRun:
    """One cell at one seed: a point for the sweep executors, ``slug`` its folder under ``OUT/points``."""

    cell: Cell
    seed: int
    slug: str


def cell_runs(planned: Sequence[Planned], seeds: Sequence[int]) -> list[tuple[dict[str, Any], CellRun]]:
    """Every runnable cell at every seed, cell by cell: the cell's config with that ``seed``."""
    runs = []
    for p in planned:
        if p.status != OK or p.config is None:
            continue
        for seed in seeds:
            slug = str(Path(p.cell.slug, seed_folder(seed, seeds)))
            runs.append(({**p.config, "seed": seed}, CellRun(p.cell, seed, slug)))
    return runs


def run_cell(
    config: dict[str, Any], cell: CellRun, points_dir: str, limits: Mapping[str, Any] | None = None
) -> PointOutcome:
    """Run one cell at one seed into ``points_dir/<slug>`` (a run folder without report.html; top level
    for pickling). ``limits`` are the resource limits of :func:`tailcut.config.resolve`."""
    from tailcut.runner import run

    out = Path(points_dir) / cell.slug
    try:
        # Limits are passed only when given, so callers that replace `run` (tests) keep working.
        result = run(config, **({"limits": limits} if limits is not None else {}))
        out.parent.mkdir(parents=True, exist_ok=True)  # points/<cell>/ holding seed=<N>/
        result.write(out, overwrite=True)  # points/ is the comparison's own
        return PointOutcome(cell.slug)
    except Exception as exc:  # a failed cell is reported, the comparison goes on
        error = write_error(out, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        return PointOutcome(cell.slug, error=error)


def cell_metrics(flows: pd.DataFrame) -> dict[str, float | int]:
    """The comparison's numbers for one cell's flows (see the module doc)."""
    classes = size_class(flows["size_bytes"])
    small = summary_stats(flows[classes == "small"])
    everything = summary_stats(flows)
    large = flows[classes == "large"]
    done_large = large[large["completed"].astype(bool)]
    tput = (done_large["size_bytes"].astype(float) * 8 / done_large["fct_ns"].astype(float)).to_numpy()
    return {
        "small_flows": small["count"],
        "small_unfinished": small["unfinished"],
        "p50_us": small["p50_fct_ns"] / 1e3,
        "p99_us": small["p99_fct_ns"] / 1e3,
        "p999_us": small["p999_fct_ns"] / 1e3,
        "timeout_fraction": small["timeout_fraction"],
        "extra_bytes_small": small["extra_bytes_ratio"],
        "extra_bytes_all": everything["extra_bytes_ratio"],
        "large_flows": len(large),
        "large_unfinished": len(large) - len(done_large),
        "large_tput_gbps": float(tput.mean()) if len(tput) else math.nan,
    }


COLUMNS = [
    "scenario", "topology", "workload", "failure", "scheme", "combination", "status", "reason",
    "small_flows", "small_unfinished", "p50_us", "p99_us", "p999_us", "timeout_fraction",
    "extra_bytes_small", "extra_bytes_all", "large_flows", "large_unfinished", "large_tput_gbps",
    "wall_s", "rank", "not_measured",
]  # fmt: skip


def collect(suite: Suite, planned: Sequence[Planned], points_dir: Path, subfolder: str = "") -> pd.DataFrame:
    """One row per planned cell: metrics of the cells that ran, status and reason for the others; a cell's
    run is ``points_dir/<slug>/<subfolder>`` (:func:`seed_folder`)."""
    import pandas as pd

    rows = []
    for p in planned:
        c = p.cell
        row: dict[str, Any] = {
            "scenario": c.scenario, "topology": c.topology, "workload": c.workload, "failure": c.failure,
            "scheme": c.scheme, "combination": bool(suite.schemes[c.scheme].get("combination", False)),
            "status": p.status, "reason": p.reason,
        }  # fmt: skip
        folder = points_dir / c.slug / subfolder
        if p.status == OK:
            if (folder / "flows.parquet").exists():
                row.update(cell_metrics(pd.read_parquet(folder / "flows.parquet")))
                # A number the scheme's engine does not measure would read as a real zero.
                # What the scheme's engine does not count (tailcut.summary.NOT_MEASURED, as the run
                # report reads it), plus what the suite declares for the scheme.
                scheme = suite.schemes[c.scheme]
                not_measured = {
                    **NOT_MEASURED.get(str(scheme.get("transport")), {}),
                    **scheme.get("not_measured", {}),
                }
                for metric in not_measured:
                    for column in NOT_MEASURABLE[metric]:
                        row[column] = math.nan
                row["not_measured"] = "; ".join(f"{m}: {why}" for m, why in not_measured.items())
                runs = (
                    json.loads((folder / "runs.json").read_text()) if (folder / "runs.json").exists() else []
                )
                row["wall_s"] = float(sum(r.get("wall_seconds", 0.0) for r in runs))
            else:
                error = folder / "error.txt"
                row["status"] = FAILED
                row["reason"] = error.read_text().splitlines()[0] if error.exists() else "did not run"
        rows.append(row)
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["rank"] = rank(table)
    return table


def rank(table: pd.DataFrame) -> pd.Series:
    """Rank of each cell within its scenario (1 = best; ties share the lower rank); NaN unless status ok.

    Key: p99 small-flow FCT (unfinished flows are infinitely late in it), then the number of unfinished
    small flows (so that, when many flows are stuck, fewer stuck wins), then p99.9, then p50; a cell
    without small flows ranks last.
    """
    import numpy as np
    import pandas as pd

    ranks = pd.Series(np.nan, index=table.index, dtype=float)
    ok = table[table["status"] == OK]
    for _, group in ok.groupby("scenario", sort=False):
        keys = {
            i: (
                _nan_last(group.at[i, "p99_us"]),
                group.at[i, "small_unfinished"],
                _nan_last(group.at[i, "p999_us"]),
                _nan_last(group.at[i, "p50_us"]),
            )
            for i in group.index
        }
        ordered = sorted(keys.values())
        for i, key in keys.items():
            ranks[i] = ordered.index(key) + 1
    return ranks


def _nan_last(value: float) -> float:
    return math.inf if value is None or (isinstance(value, float) and math.isnan(value)) else value


@dataclass
class CompareResult:
    """The comparison table (one row per cell, see :data:`COLUMNS`; with several seeds each metric is the
    median over seeds, :mod:`tailcut.compare_seeds`) and where it was written; ``per_seed`` holds each
    seed's table with a ``seed`` column."""

    table: pd.DataFrame
    outcomes: list[PointOutcome] = field(default_factory=list)
    path: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    per_seed: pd.DataFrame | None = None

    @property
    def failed(self) -> dict[str, str]:
        return {o.slug: o.error for o in self.outcomes if o.error is not None}


def check_seeds(seeds: Any, first: int) -> list[int]:
    """The seeds of ``--seeds`` runs from the suite's ``first`` (:func:`tailcut.seeds.seed_range`);
    ValueError naming the option for a count below 1 or seeds past the core's u64."""
    from tailcut.seeds import seed_range

    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"--seeds: must be an integer >= 1, got {seeds!r}")
    if first + seeds - 1 >= 2**64:
        raise ValueError(f"--seeds: {seeds} seeds from the suite's seed {first} go past 2^64 - 1")
    return seed_range(first, seeds)


def compare(
    suite: ConfigSource | Suite,
    out: str | Path,
    scale: str = "ci",
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    schemes: Sequence[str] | None = None,
    scenarios: str | None = None,
    on_done: Callable[[PointOutcome], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
    validate: Callable[[dict[str, Any]], Any] | None = None,
    overwrite: bool = False,
    limits: Mapping[str, Any] | None = None,
    seeds: int = 1,
) -> CompareResult:
    """Plan, run (skipping cells already done in ``out``) and write ``compare.parquet``, ``compare.md``,
    ``compare.json`` and ``report.html`` into ``out``.

    ``on_plan(n)`` gets the number of runs (cells x seeds), ``on_done(outcome)`` each finished one;
    ``validate`` replaces the Rust core's check of each cell's experiment in :func:`plan` (tests). ``out``
    holding this suite's comparison at this scale and these seeds is resumed, anything else refused unless
    ``overwrite`` allows replacing an earlier result (:func:`tailcut.outdir.claim`). ``limits``
    (``max_memory``, ``max_events``, ``force``, as for :func:`tailcut.run`) apply to every cell, when it is
    planned and when it runs. ``seeds`` runs every cell with the suite's seed and the ``seeds - 1`` after
    it; with more than one, the table holds medians and ranges and ``compare_seeds.parquet`` each seed's
    table (:mod:`tailcut.compare_seeds`).
    """
    from tailcut.sweep import run_tasks

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: must be an integer >= 1, got {jobs!r}")
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    seed_list = check_seeds(seeds, suite.seed)
    out = Path(out)
    if validate is None and limits is not None:
        validate = _resolver(limits)
    planned = plan(suite, scale, schemes, scenarios, validate)
    digest = _digest(suite, scale, seed_list)
    claim(out, "compare", overwrite=overwrite, experiment=f"{suite.name} ({scale})", digest=digest)
    # The page is drawn after every cell ran: a missing plotting extra must stop the comparison before.
    from tailcut.compare_report import compare_html, compare_markdown

    points_dir = out / "points"
    points_dir.mkdir(parents=True, exist_ok=True)
    runs = cell_runs(planned, seed_list)
    done = [r for _, r in runs if (points_dir / r.slug / "flows.parquet").exists()]
    todo = [(c, r) for c, r in runs if not (points_dir / r.slug / "flows.parquet").exists()]
    if on_plan is not None:
        on_plan(len(runs))
    report = on_done or (lambda _: None)
    outcomes = [PointOutcome(r.slug, skipped=True) for r in done]
    for o in outcomes:
        report(o)
    start = time.perf_counter()
    outcomes += run_tasks(
        todo,
        points_dir,
        jobs,
        executor,
        ray_address,
        report,
        runner=run_cell,
        extra_args=(limits,) if limits is not None else (),
    )
    elapsed = time.perf_counter() - start
    table, per_seed = _tables(suite, planned, points_dir, seed_list)
    from tailcut.provenance import provenance, write_parquet

    meta = {
        **provenance(digest=digest),
        "suite": suite.name,
        "source": suite.source,
        "scale": scale,
        "seeds": seed_list,
        "cells": len(planned),
        "ran": len(todo),
        "skipped": len(done),
        "failed": sum(1 for o in outcomes if o.error is not None),
        "jobs": jobs,
        "executor": executor,
        "wall_seconds": round(elapsed, 1),
    }
    # The page's line: the seeds, the digest the folder resumes by, the version drawing it.
    page_provenance = {**provenance(), "config_digest": digest, "seeds": seed_list}
    with combined_files(out) as tmp:
        write_parquet(table, tmp / "compare.parquet", provenance(digest=digest))
        if per_seed is not None:
            write_parquet(per_seed, tmp / "compare_seeds.parquet", provenance(digest=digest))
        (tmp / "compare.json").write_text(json.dumps(meta, indent=2) + "\n")
        (tmp / "compare.md").write_text(compare_markdown(table, meta, page_provenance, per_seed))
        (tmp / "report.html").write_text(compare_html(table, meta, page_provenance, per_seed))
    return CompareResult(table=table, outcomes=outcomes, path=out, meta=meta, per_seed=per_seed)


def _digest(suite: Suite, scale: str, seeds: Sequence[int]) -> str:
    """What the folder resumes by: the suite as written, the scale and, for several seeds, their list (the
    suite's seed already fixes a one-seed run, whose digest stays what it was before ``--seeds``, so such
    folders resume). ``--schemes``/``--scenarios`` only pick cells."""
    tables = {k: v for k, v in suite.__dict__.items() if k != "source"}
    many = {"seeds": list(seeds)} if len(seeds) > 1 else {}
    return config_hash({**tables, "scale": scale, **many}, suite=True)


def _tables(
    suite: Suite, planned: Sequence[Planned], points_dir: Path, seeds: Sequence[int]
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The comparison table and, with several seeds, the per-seed tables it combines (a ``seed`` column
    after ``scenario``)."""
    if len(seeds) == 1:
        return collect(suite, planned, points_dir), None
    import pandas as pd

    from tailcut.compare_seeds import combine

    frames = [collect(suite, planned, points_dir, seed_folder(s, seeds)) for s in seeds]
    for seed, frame in zip(seeds, frames, strict=True):
        frame.insert(1, "seed", seed)
    per_seed = pd.concat(frames, ignore_index=True)
    return combine(per_seed), per_seed
