"""File paths inside an experiment or suite file resolve against that file's folder.

A relative CDF, topology or loss-rate file in ``experiments/cp/outcast.toml`` means the file beside it,
whatever the working directory: a file that names its neighbours keeps working when it is run from
elsewhere, copied with them, or handed to a sweep or a notebook. Loading such a file rewrites those
values to absolute paths, so the resolved ``config.toml`` written with the results also runs from its own
folder (or any other) as long as the referenced files stay where they were.

Values given on the command line (``--set``, ``--grid``) or in a TOML string or dict are not anchored:
they have no file, so they resolve against the working directory, as any command-line path does.

The path fields (the Rust loader ``tailcut_sim::api::load_toml`` anchors the same ones):

- ``topology.path`` when ``topology.kind = "file"``
- ``workload[].cdf`` unless a builtin name (``websearch``, ``datamining``)
- ``workload[].pattern.path`` when ``pattern.kind`` is ``connection_matrix`` or ``flow_csv``
- ``faults[].rates`` when ``kind = "random_lossy_links"``, unless the builtin ``fuso-loss``
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Names the Rust core resolves to the copies it ships (workload/cdf.rs); never file paths.
BUILTIN_CDFS = frozenset({"websearch", "datamining"})
BUILTIN_LOSS_RATES = frozenset({"fuso-loss"})


# What to do with one path field's value; the second argument names the builtins it may also hold.
PathFn = Callable[[Any, frozenset[str]], Any]


def _anchor(value: Any, folder: Path, builtins: frozenset[str]) -> Any:
    # Anything but a relative path string is left for the core to check (and name the field).
    if not isinstance(value, str) or value in builtins or not value or Path(value).is_absolute():
        return value
    return str(folder / value)


def _each_table(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _map_topology(topology: Any, fn: PathFn) -> None:
    if isinstance(topology, dict) and topology.get("kind") == "file" and "path" in topology:
        topology["path"] = fn(topology["path"], frozenset())


# Workload patterns that read their flows from a file (`pattern.path`).
FLOW_FILE_PATTERNS = frozenset({"connection_matrix", "flow_csv"})


def _map_workload(components: Any, fn: PathFn) -> None:
    for component in _each_table(components):
        pattern = component.get("pattern")
        if isinstance(pattern, dict) and pattern.get("kind") in FLOW_FILE_PATTERNS and "path" in pattern:
            pattern["path"] = fn(pattern["path"], frozenset())
        if "cdf" in component:
            component["cdf"] = fn(component["cdf"], BUILTIN_CDFS)


def _map_faults(faults: Any, fn: PathFn) -> None:
    for fault in _each_table(faults):
        if fault.get("kind") == "random_lossy_links" and "rates" in fault:
            fault["rates"] = fn(fault["rates"], BUILTIN_LOSS_RATES)


def map_experiment_paths(config: dict[str, Any], fn: PathFn) -> dict[str, Any]:
    """Replace every path field of an experiment dict by ``fn(value, builtins)`` (in place; returned)."""
    _map_topology(config.get("topology"), fn)
    _map_workload(config.get("workload"), fn)
    _map_faults(config.get("faults"), fn)
    return config


def map_suite_paths(suite: dict[str, Any], fn: PathFn) -> dict[str, Any]:
    """The same for a compare suite: its topologies, workload components and failures."""
    sections: dict[str, tuple[str, Callable[[Any, PathFn], None]]] = {
        "topologies": ("topology", _map_topology),
        "workloads": ("components", _map_workload),
        "failures": ("faults", _map_faults),
    }
    for section, (key, each) in sections.items():
        entries = suite.get(section)
        if isinstance(entries, dict):
            for entry in entries.values():
                if isinstance(entry, dict):
                    each(entry.get(key), fn)
    return suite


def anchor_topology(topology: Any, folder: Path) -> None:
    """Anchor a ``[topology]`` table's file path in place."""
    _map_topology(topology, lambda value, builtins: _anchor(value, folder, builtins))


def anchor_workload(components: Any, folder: Path) -> None:
    """Anchor each ``[[workload]]`` component's CDF and flow files in place."""
    _map_workload(components, lambda value, builtins: _anchor(value, folder, builtins))


def anchor_faults(faults: Any, folder: Path) -> None:
    """Anchor each ``[[faults]]`` entry's loss-rate distribution file in place."""
    _map_faults(faults, lambda value, builtins: _anchor(value, folder, builtins))


def anchor_experiment(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Anchor every path field of an experiment dict (in place; returned for chaining)."""
    return map_experiment_paths(config, lambda value, builtins: _anchor(value, folder, builtins))


def anchor_suite(suite: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Anchor every path field of a compare suite: its topologies, workload components and failures."""
    return map_suite_paths(suite, lambda value, builtins: _anchor(value, folder, builtins))


# Path field values whose files are read from elsewhere: a Ray worker's copies of the files a sweep's
# machine shipped to it (tailcut.sweep), by the value as written. Empty everywhere else.
_ALIASES: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "tailcut_path_aliases", default=None
)


@contextmanager
def aliased(aliases: Mapping[str, str]) -> Iterator[None]:
    """Within the block, a path field whose value is a key of ``aliases`` is read from the file the
    alias names (:func:`localized`, :func:`file_digest`), while configs and outputs keep the value as
    written (:func:`delocalized`): a run on a Ray worker reads the copies of the files the sweep's machine
    sent and writes the folder that machine would have written."""
    token = _ALIASES.set(dict(aliases))
    try:
        yield
    finally:
        _ALIASES.reset(token)


def localized(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with every aliased path field replaced by its alias (a copy; ``config`` itself when no
    alias is set): what the core is handed."""
    aliases = _ALIASES.get() or {}
    if not aliases:
        return config
    return map_experiment_paths(
        copy.deepcopy(config), lambda value, _: aliases.get(value, value) if isinstance(value, str) else value
    )


def delocalized(config: dict[str, Any]) -> dict[str, Any]:
    """The reverse of :func:`localized` (in place; returned): a resolved config as the core returns it,
    with each alias back to the value as written."""
    aliases = _ALIASES.get() or {}
    if not aliases:
        return config
    back = {alias: value for value, alias in aliases.items()}
    return map_experiment_paths(
        config, lambda value, _: back.get(value, value) if isinstance(value, str) else value
    )


def file_digest(value: Any, builtins: frozenset[str]) -> Any:
    """A path field's value as what it names: ``sha256:...`` of a readable file's bytes, so a result's
    identity follows the file's content, not where the checkout lives; anything else unchanged. An aliased
    value (:func:`aliased`) is read from its alias."""
    if not isinstance(value, str) or value in builtins or not value:
        return value
    value = (_ALIASES.get() or {}).get(value, value)
    try:
        # Only a regular file: opening a FIFO would block forever (the core refuses it, naming the field).
        if not Path(value).is_file():
            return value
        data = Path(value).read_bytes()
    except OSError:
        return value
    return "sha256:" + hashlib.sha256(data).hexdigest()


# The papers' experiment files, the workloads they read and the agent's example configuration, inside
# the package (a clone's experiments/ and workloads/ link to them).
PACKAGE_DATA = Path(__file__).resolve().parent / "data"


def input_file(text: str) -> Path:
    """A command's experiment or suite file: ``text`` as given, or, where no such file exists and it
    names one the package ships (``experiments/quickstart.toml``, as the README writes it), that one,
    so that the README's commands work from ``pip install`` without a clone."""
    path = Path(text)
    if path.exists() or path.is_absolute():
        return path
    shipped = PACKAGE_DATA / path
    return shipped if path.parts[:1] == ("experiments",) and shipped.is_file() else path
