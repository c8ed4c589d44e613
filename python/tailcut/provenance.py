"""What made an output: the tailcut version and the commit it was built from, and a config's digest.

Every output a run writes carries :func:`provenance`: ``runs.json`` (every scheme's record),
``summary.json``, the ``.tailcut.json`` marker, the Parquet tables' schema metadata (:func:`write_parquet`),
``sweep.json``, ``compare.json``, a reproduce page's JSON, ``testbed.json`` and ``net.json``. A number
found later can then be traced to the code that made it: a re-run after an upgrade that differs is
explained by the version, not a mystery.

The commit is baked into the extension when it is built (``crates/tailcut-py/build.rs``: ``git``, with
``+dirty`` when tracked files differed, or ``$TAILCUT_COMMIT`` for a build outside a checkout, such as
from an sdist); a build that had neither says ``None``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailcut import _core
from tailcut.outdir import config_hash

if TYPE_CHECKING:
    import pandas as pd

# The keys :func:`provenance` adds; readers and comparisons that must not depend on them drop these.
KEYS = ("tailcut_version", "tailcut_commit", "config_digest")


def version() -> str:
    return _core.version()


def commit() -> str | None:
    """The commit the extension was built from (``+dirty`` when the tree had changes), or ``None``."""
    return _core.build_commit()


def provenance(config: Any = None, digest: str | None = None) -> dict[str, Any]:
    """``{"tailcut_version", "tailcut_commit"}``, plus ``"config_digest"`` when a config (or its
    ``digest``, e.g. a compare suite's) is given: the result folder's own
    :func:`tailcut.outdir.config_hash` (files count by content), so the digest on a page is the one its
    folder resumes by."""
    out: dict[str, Any] = {"tailcut_version": version(), "tailcut_commit": commit()}
    if digest is not None:
        out["config_digest"] = digest
    elif config is not None:
        out["config_digest"] = config_hash(config)
    return out


def without(document: Any) -> Any:
    """``document`` (a dict, or a list of dicts) without the provenance keys: what two outputs of the
    same experiment written by different tailcut builds share."""
    if isinstance(document, list):
        return [without(d) for d in document]
    if isinstance(document, dict):
        return {k: v for k, v in document.items() if k not in KEYS}
    return document


def write_parquet(frame: pd.DataFrame, path: str | Path, stamp: dict[str, Any]) -> None:
    """``frame.to_parquet(path, index=False)`` with ``stamp`` (:func:`provenance`) in the file's schema
    metadata, one key each (``tailcut_version``, ...; a ``None`` value is left out). Readers that do not
    look (``pandas.read_parquet``) see the same table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = dict(table.schema.metadata or {})
    metadata.update({k.encode(): str(v).encode() for k, v in stamp.items() if v is not None})
    pq.write_table(table.replace_schema_metadata(metadata), path)


def parquet_provenance(path: str | Path) -> dict[str, str]:
    """The provenance keys in a Parquet file's schema metadata (empty for a file written without)."""
    import pyarrow.parquet as pq

    metadata = pq.read_schema(path).metadata or {}
    return {k: metadata[k.encode()].decode() for k in KEYS if k.encode() in metadata}


def recorded(folder: str | Path) -> dict[str, Any]:
    """The provenance a result folder recorded (its marker, else its ``runs.json``), or ``{}`` for a
    folder written before tailcut recorded it."""
    folder = Path(folder)
    for name in (".tailcut.json", "runs.json", "summary.json"):
        try:
            document = json.loads((folder / name).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(document, list):
            document = document[0] if document and isinstance(document[0], dict) else {}
        if isinstance(document, dict) and "tailcut_version" in document:
            return {k: document[k] for k in KEYS if k in document}
    return {}


def _registry() -> dict[str, dict[str, Any]]:
    return {s["name"]: {p["name"]: p["default"] for p in s["params"]} for s in json.loads(_core.schemes())}


def _parameter_lines(label: str, written: Any, defaults: dict[str, Any] | None) -> list[str]:
    if defaults is None or not isinstance(written, dict):
        return []
    written = {k: v for k, v in written.items() if k != "kind"}
    lines = []
    new = [f"{k} (default {v})" for k, v in defaults.items() if k not in written and v is not None]
    if new:
        lines.append(
            f"  {label}: parameters added since, which take their current defaults: {', '.join(new)}"
        )
    gone = [k for k in written if k not in defaults]
    if gone:
        lines.append(f"  {label}: parameters this version does not know: {', '.join(gone)}")
    moved = [
        f"{k} = {written[k]} (default now {v})"
        for k, v in defaults.items()
        if k in written and v is not None and written[k] != v
    ]
    if moved:
        lines.append(f"  {label}: written values that differ from today's defaults: {', '.join(moved)}")
    return lines


def version_changes(config: Any, stamp: dict[str, Any]) -> list[str]:
    """What differs between the tailcut that wrote a result folder's ``config`` (its provenance ``stamp``,
    :func:`recorded`) and this one; empty when the versions match or the folder recorded none.

    A written config.toml has every parameter filled in, so the values it names run as they did; what
    can change is a parameter added since (it takes today's default), one removed (the config is then
    refused), and the defaults a value was filled from (listed for comparison)."""
    then = stamp.get("tailcut_version")
    if not then or then == version() or not isinstance(config, dict):
        return []
    was = f"tailcut {then}" + (f" ({stamp['tailcut_commit']})" if stamp.get("tailcut_commit") else "")
    now = f"tailcut {version()}" + (f" ({commit()})" if commit() else "")
    lines = [f"written by {was}; this is {now}"]
    registry = _registry()
    schemes = config.get("schemes")
    for entry in schemes if isinstance(schemes, list) else []:
        if not isinstance(entry, dict):
            continue
        name, transport = entry.get("name"), entry.get("transport")
        lines += _parameter_lines(
            f"scheme {name} ({transport})", entry.get("params", {}), registry.get(transport)
        )
        shim = entry.get("shim")
        if isinstance(shim, dict):
            lines += _parameter_lines(
                f"scheme {name} shim {shim.get('kind')}", shim, registry.get(shim.get("kind"))
            )
    other = config.get("other_traffic")
    if isinstance(other, dict):
        transport = other.get("transport")
        lines += _parameter_lines(
            f"other_traffic ({transport})", other.get("params", {}), registry.get(transport)
        )
    return lines


def folder_config_warnings(path: str | Path, config: Any) -> list[str]:
    """``version_changes`` for a config file read from a tailcut result folder (``config.toml`` beside
    the folder's marker), as ``warning:`` lines; empty for any other file."""
    path = Path(path)
    if path.name != "config.toml" or not (path.parent / ".tailcut.json").exists():
        return []
    changes = version_changes(config, recorded(path.parent))
    return [f"warning: {path}: {changes[0]}", *changes[1:]] if changes else []
