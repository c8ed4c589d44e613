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

from collections.abc import Callable
from pathlib import Path
from typing import Any

# Names the Rust core resolves to the copies it ships (workload/cdf.rs); never file paths.
BUILTIN_CDFS = frozenset({"websearch", "datamining"})
BUILTIN_LOSS_RATES = frozenset({"fuso-loss"})


def _anchor(value: Any, folder: Path, builtins: frozenset[str]) -> Any:
    # Anything but a relative path string is left for the core to check (and name the field).
    if not isinstance(value, str) or value in builtins or not value or Path(value).is_absolute():
        return value
    return str(folder / value)


def _each_table(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def anchor_topology(topology: Any, folder: Path) -> None:
    """Anchor a ``[topology]`` table's file path in place."""
    if isinstance(topology, dict) and topology.get("kind") == "file" and "path" in topology:
        topology["path"] = _anchor(topology["path"], folder, frozenset())


# Workload patterns that read their flows from a file (`pattern.path`).
FLOW_FILE_PATTERNS = frozenset({"connection_matrix", "flow_csv"})


def anchor_workload(components: Any, folder: Path) -> None:
    """Anchor each ``[[workload]]`` component's CDF and flow files in place."""
    for component in _each_table(components):
        pattern = component.get("pattern")
        if isinstance(pattern, dict) and pattern.get("kind") in FLOW_FILE_PATTERNS and "path" in pattern:
            pattern["path"] = _anchor(pattern["path"], folder, frozenset())
        if "cdf" in component:
            component["cdf"] = _anchor(component["cdf"], folder, BUILTIN_CDFS)


def anchor_faults(faults: Any, folder: Path) -> None:
    """Anchor each ``[[faults]]`` entry's loss-rate distribution file in place."""
    for fault in _each_table(faults):
        if fault.get("kind") == "random_lossy_links" and "rates" in fault:
            fault["rates"] = _anchor(fault["rates"], folder, BUILTIN_LOSS_RATES)


def anchor_experiment(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Anchor every path field of an experiment dict (in place; returned for chaining)."""
    anchor_topology(config.get("topology"), folder)
    anchor_workload(config.get("workload"), folder)
    anchor_faults(config.get("faults"), folder)
    return config


def anchor_suite(suite: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Anchor every path field of a compare suite: its topologies, workload components and failures."""
    sections: dict[str, tuple[str, Callable[[Any, Path], None]]] = {
        "topologies": ("topology", anchor_topology),
        "workloads": ("components", anchor_workload),
        "failures": ("faults", anchor_faults),
    }
    for section, (key, anchor) in sections.items():
        entries = suite.get(section)
        if isinstance(entries, dict):
            for entry in entries.values():
                if isinstance(entry, dict):
                    anchor(entry.get(key), folder)
    return suite
