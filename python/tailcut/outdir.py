"""Output folders: what ``--out`` may replace, atomic writes, and the temporary folders they leave.

tailcut never removes a file it did not write. Every folder it writes carries a marker,
``.tailcut.json`` (what kind of result it is and, for sweeps and comparisons, the hash of the experiment
they ran), and :func:`claim` decides what may happen to an existing ``--out`` before any work starts:

- missing or empty: written;
- a file, or a folder holding anything tailcut does not write (``precious.txt``): an error listing
  what is in the way, with or without ``overwrite``; results never go into a subfolder, so that a
  rerun finds them at the path it was given;
- a run's result: replaced only with ``overwrite``;
- a sweep's or a comparison's: resumed (points already done are kept) if the marker records the same
  experiment, an error naming both otherwise; ``overwrite`` starts afresh.

Writes go to a hidden folder beside the target, ``.<name>.tmp-<host>-<pid>-<random>``, renamed into
place once complete. A process killed mid-write leaves it behind; the next write of the same target
removes those whose process is gone (only on the same host: a shared filesystem's other writers are
not ours to judge), and a sweep or comparison resumed in a folder cleans all of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tailcut.paths import file_digest, map_experiment_paths, map_suite_paths

MARKER = ".tailcut.json"

# What each kind of folder may hold: anything else is the user's and blocks a replacement.
FILES = {
    "run": {
        "flows.parquet",
        "flows.csv",
        "ports.parquet",
        "summary.json",
        "config.toml",
        "runs.json",
        "report.html",
        "error.txt",
        "pcap",
        "testbed.json",
        "net.json",
    },
    "trace": {
        "events.parquet",
        "events.csv",
        "flows.parquet",
        "trace.pcap",
        "plots",
        "trace.json",
        "config.toml",
    },
    "sweep": {"points", "flows.parquet", "summary.parquet", "sweep.json", "report.html", ".combined"},
    "compare": {
        "points",
        "compare.parquet",
        "compare.json",
        "compare.md",
        "report.html",
        ".combined",
    },
}
# Folders written before the marker existed, recognised by the file only that kind writes.
_SIGNATURE = {"run": "runs.json", "sweep": "sweep.json", "compare": "compare.json", "trace": "trace.json"}

# Kinds written whole into a temporary folder and swapped in (never resumed).
_WHOLE = {"run", "trace"}

# tempfile's names end in 8 characters of this alphabet; older versions did not name the writer.
_TEMP = r"^\.{name}\.(?:tmp|old)-(?:(?P<host>.+)-(?P<pid>\d+)-)?[a-z0-9_]{{8}}$"
_ANY_TEMP = re.compile(_TEMP.format(name=".+"))


class OutputError(ValueError):
    """``--out`` names something tailcut may not write into; the message says what and why."""


def config_hash(config: Mapping[str, Any], suite: bool = False) -> str:
    """A short hash of a resolved experiment (or, with ``suite``, a compare suite's tables), stable across
    runs and Python versions. Path fields count by the content of the file they name, so a result folder
    resumes after the checkout (and its absolute paths) moved, and not after a CDF file changed."""
    plain = json.loads(json.dumps(config, default=str))
    (map_suite_paths if suite else map_experiment_paths)(plain, file_digest)
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a tailcut folder, or None (none, or unreadable: then the folder is not ours)."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("kind") in FILES else None


def write_marker(folder: Path, kind: str, **fields: Any) -> None:
    """Mark ``folder`` as a tailcut ``kind`` folder (written whole or not at all)."""
    write_text_atomic(folder / MARKER, json.dumps({"kind": kind, **fields}, indent=2) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file, so a full disk leaves the old file or none, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-{_owner()}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _kind(folder: Path) -> tuple[str | None, dict[str, Any] | None]:
    marker = read_marker(folder)
    if marker is not None:
        return marker["kind"], marker
    legacy = [kind for kind, name in _SIGNATURE.items() if (folder / name).exists()]
    return (legacy[0], None) if len(legacy) == 1 else (None, None)


def _foreign(folder: Path, kind: str | None) -> list[str]:
    allowed = FILES.get(kind or "", set()) | {MARKER}
    return sorted(p.name for p in folder.iterdir() if p.name not in allowed and not _ANY_TEMP.match(p.name))


def claim(
    out: str | Path,
    kind: str,
    *,
    overwrite: bool = False,
    experiment: str | None = None,
    digest: str | None = None,
) -> bool:
    """Check that ``out`` may receive a ``kind`` result (see the module doc); returns True to resume.

    Sweeps and comparisons pass their ``experiment`` name and config ``digest``: the folder is marked
    with them at once, so that their points are recognised as tailcut's from the start. With
    ``overwrite`` an earlier result's files are removed here, before anything runs.
    """
    out = Path(out)
    clean_temps(out.parent, out.name)
    if out.exists() and not out.is_dir():
        raise OutputError(f"out: {out} is an existing file, not a folder; choose another output folder")
    resume = False
    if out.is_dir() and any(out.iterdir()):
        found, marker = _kind(out)
        foreign = _foreign(out, found)
        if foreign:
            what = f"a tailcut {found} result and " if found else ""
            raise OutputError(
                f"out: {out} holds {what}files tailcut did not write ({', '.join(foreign[:5])}"
                f"{', ...' if len(foreign) > 5 else ''}); tailcut never deletes those: choose an empty "
                "or new output folder"
            )
        if found is not None:
            clean_temps(out)
        if overwrite:
            if kind not in _WHOLE:  # a run's folder is swapped whole once its result is complete
                _remove_ours(out, found)
        elif found != kind:
            raise OutputError(
                f"out: {out} holds the result of a tailcut {found}, not of a {kind}; pass --overwrite to "
                "replace it, or choose another output folder"
            )
        elif kind in _WHOLE:
            raise OutputError(
                f"out: {out} already holds a result; pass --overwrite to replace it, or choose another "
                "output folder"
            )
        elif marker is None or marker.get("config_hash") is None:
            raise OutputError(
                f"out: {out} holds a {kind} written by an older tailcut that did not record its "
                "experiment, so resuming it could mix two experiments' results; pass --overwrite to "
                "start afresh, or choose another output folder"
            )
        elif marker["config_hash"] != digest:
            raise OutputError(
                f"out: {out} holds the {kind} of experiment {marker.get('experiment')!r} (config "
                f"{marker['config_hash']}); this is {experiment!r} (config {digest}), and resuming would "
                "mix their results; choose another output folder, or pass --overwrite to replace it"
            )
        else:
            resume = True
    if kind not in _WHOLE:
        write_marker(out, kind, experiment=experiment, config_hash=digest)
    return resume


def _remove_ours(out: Path, kind: str | None) -> None:
    for name in [*FILES.get(kind or "", ()), MARKER]:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _owner() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    try:  # a zombie (killed, not yet reaped) answers signal 0 but writes nothing more
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def clean_temps(folder: Path, name: str | None = None) -> None:
    """Remove the temporary folders and files a killed writer left in ``folder`` for target ``name``, or
    for any target when the folder is tailcut's own.

    Only those of processes on this host that are gone, plus those of tailcut versions that did not
    name their writer (they cannot be told apart from a crash).
    """
    if not folder.is_dir():
        return
    pattern = _ANY_TEMP if name is None else re.compile(_TEMP.format(name=re.escape(name)))
    host = socket.gethostname()
    for path in folder.iterdir():
        m = pattern.match(path.name)
        if m is None:
            continue
        if m["pid"] is not None and (m["host"] != host or _alive(int(m["pid"]))):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


@contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``target`` only if the block completes.

    The temporary folder lives beside ``target`` so the final rename stays on one filesystem. An existing
    ``target`` (which :func:`claim` allowed to be replaced) is moved aside first and deleted after the
    swap; on error the temporary folder is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_temps(target.parent, target.name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{_owner()}-", dir=target.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the final folder should look like any other
    try:
        yield tmp
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{_owner()}-", dir=target.parent))
            os.replace(target, old / target.name)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def combined_files(out: Path) -> Iterator[Path]:
    """Yield a folder for a sweep's or comparison's combined files, moved into ``out`` when complete.

    They are written in a side folder first and moved next to ``points/`` only once all are written, so
    a crash never leaves half a table.
    """
    with atomic_dir(out / ".combined") as tmp:
        yield tmp
    for item in (out / ".combined").iterdir():
        item.replace(out / item.name)
    (out / ".combined").rmdir()


def write_error(folder: Path, error: str, details: str = "") -> str:
    """Record a failed point in ``folder/error.txt``; returns ``error``, with a note if that failed.

    On a full disk the file cannot be written: the error is still reported, and no empty or truncated
    ``error.txt`` is left.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_marker(folder, "run", failed=True)
        write_text_atomic(folder / "error.txt", error + "\n" + (f"\n{details}" if details else ""))
    except OSError as exc:
        return f"{error} (error.txt not written: {exc})"
    return error
