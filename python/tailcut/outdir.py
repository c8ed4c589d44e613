"""Output folders: what ``--out`` may replace, atomic writes, and the temporary folders they leave.

tailcut never removes a file it did not write. Every folder it writes carries a marker,
``.tailcut.json`` (what kind of result it is and, for sweeps and comparisons, the hash of the experiment
they ran), and :func:`claim` decides what may happen to an existing ``--out`` before any work starts:

- missing or empty: written;
- a file, or a folder holding anything tailcut does not write (``precious.txt``): an error listing
  what is in the way, with or without ``overwrite``; results never go into a subfolder, so that a
  rerun finds them at the path it was given;
- a folder without the marker: never replaced, even if it holds only names tailcut writes (a user's
  ``runs.json`` and ``config.toml`` are not a result);
- a run's result: replaced only with ``overwrite``;
- a sweep's or a comparison's: resumed (points already done are kept) if the marker records the same
  experiment, an error naming both otherwise; ``overwrite`` starts afresh.

Before that, :func:`claim` takes an exclusive lock, ``.<name>.lock`` beside ``out`` (``fcntl.flock``, held
until :func:`release` or the process ends): a second tailcut writing the same ``out`` at once is refused
instead of silently replacing the first's result. It also checks that ``out`` can be written (a
read-only mount is refused up front, not after the whole run).

Writes go to a hidden folder beside the target, ``.<name>.tmp-<host>-<pid>-<random>``, renamed into
place once complete. A process killed mid-write leaves it behind; the next write of the same target
removes those whose process is gone (only on the same host: a shared filesystem's other writers are
not ours to judge), and a sweep or comparison resumed in a folder cleans all of its own.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
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
    # tailcut crosscheck: a run folder per world and seed, and the report (tailcut.crosscheck).
    "crosscheck": {"sim", "testbed", "crosscheck.md", "crosscheck.json"},
    "compare": {
        "points",
        "compare.parquet",
        "compare_seeds.parquet",
        "compare.json",
        "compare.md",
        "report.html",
        ".combined",
    },
}

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
    # Only the marker makes a folder tailcut's: names alone (a user's runs.json and config.toml) do not.
    marker = read_marker(folder)
    return (marker["kind"], marker) if marker is not None else (None, None)


# The locks this process holds, by resolved output path: claim() is called again for the same folder
# within one command (the CLI, then the writer), and flock on a second descriptor would refuse us.
_LOCKS: dict[Path, int] = {}


def _lock(out: Path) -> None:
    """Take the exclusive lock of ``out`` (a file beside it), or raise OutputError if another process
    holds it. The holder removes the file when it releases; a process that locked a file already
    removed (it opened it just before) sees that the path no longer names its file and tries again."""
    key = out.absolute()
    if key in _LOCKS:
        return
    lock = out.parent / f".{out.name}.lock"
    for _ in range(10):
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise OutputError(f"out: cannot write beside {out} ({lock}: {exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputError(
                    f"out: another tailcut is writing {out} right now (it holds {lock}); wait for it to "
                    "finish, or choose another output folder"
                ) from None
            raise OutputError(f"out: cannot lock {lock}: {exc.strerror or exc}") from None
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            _LOCKS[key] = fd
            return
        os.close(fd)  # locked a file its holder had just removed: lock the current one
    raise OutputError(f"out: cannot lock {lock}: it keeps being replaced")


def release(out: str | Path) -> None:
    """Release the lock :func:`claim` took on ``out`` (a no-op if this process holds none). The file is
    removed while still locked, so that no one locks it after it is gone unnoticed (see :func:`_lock`)."""
    out = Path(out)
    fd = _LOCKS.pop(out.absolute(), None)
    if fd is not None:
        # A read-only parent keeps the file; the lock goes with the descriptor.
        with contextlib.suppress(OSError):
            (out.parent / f".{out.name}.lock").unlink(missing_ok=True)
        os.close(fd)


@contextmanager
def released(out: str | Path) -> Iterator[None]:
    """Run the block, then :func:`release` ``out`` (also when the block raises)."""
    try:
        yield
    finally:
        release(out)


def _check_writable(out: Path, kind: str) -> None:
    """Refuse an ``out`` the result could not be written to, before any work: a read-only folder, or (for
    a run, which is swapped in whole by a rename) a mount point, which cannot be renamed."""
    if out.is_dir():
        if not os.access(out, os.W_OK | os.X_OK):
            raise OutputError(f"out: {out} is not writable (read-only, or not ours); choose another folder")
        if kind in _WHOLE and os.path.ismount(out):
            raise OutputError(
                f"out: {out} is a mount point; a {kind}'s folder is replaced whole by a rename, which a "
                f"mount point refuses: give a folder inside it (e.g. {out / 'result'})"
            )
    parent = out.parent if out.parent.exists() else None
    if (
        parent is not None
        and not os.access(parent, os.W_OK | os.X_OK)
        and (kind in _WHOLE or not out.exists())
    ):
        raise OutputError(f"out: {parent} is not writable, so {out.name} cannot be written there")


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
    if out.exists() and not out.is_dir():
        raise OutputError(f"out: {out} is an existing file, not a folder; choose another output folder")
    _check_writable(out, kind)
    _lock(out)
    try:
        return _claim_locked(out, kind, overwrite, experiment, digest)
    except BaseException:
        release(out)  # refused: nothing will be written, so nothing is left beside out either
        raise


def _claim_locked(out: Path, kind: str, overwrite: bool, experiment: str | None, digest: str | None) -> bool:
    clean_temps(out.parent, out.name)
    resume = False
    if out.is_dir() and any(out.iterdir()):
        found, marker = _kind(out)
        foreign = _foreign(out, found)
        if foreign:
            what = f"a tailcut {found} result and " if found else ""
            unmarked = (
                ""
                if found
                else f" (a tailcut result carries {MARKER}; one written by an older tailcut without it "
                "must be removed by hand)"
            )
            raise OutputError(
                f"out: {out} holds {what}files tailcut did not write ({', '.join(foreign[:5])}"
                f"{', ...' if len(foreign) > 5 else ''}){unmarked}; tailcut never deletes those: choose an "
                "empty or new output folder"
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
    lock = re.compile(rf"^\.{'.+' if name is None else re.escape(name)}\.lock$")
    host = socket.gethostname()
    for path in folder.iterdir():
        if lock.match(path.name) and path.absolute().parent / path.name[1:-5] not in _LOCKS:
            _remove_stale_lock(path)
            continue
        m = pattern.match(path.name)
        if m is None:
            continue
        if m["pid"] is not None and (m["host"] != host or _alive(int(m["pid"]))):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _remove_stale_lock(path: Path) -> None:
    """Remove the lock file a killed writer left, if no one holds it now (removed while we hold it, as
    :func:`release` does, so a process that opened it meanwhile notices and locks a fresh one)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink(missing_ok=True)
    except OSError:
        pass  # held: its writer is alive
    finally:
        os.close(fd)


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
            try:
                os.replace(target, old / target.name)
            except BaseException:
                old.rmdir()  # empty: the move failed (a mount point, a read-only folder)
                raise
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
