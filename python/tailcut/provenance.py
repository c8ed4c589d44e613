"""What made an output: the tailcut version and the commit it was built from, and a config's digest.

Every output a run writes (``runs.json``, ``summary.json``, the Parquet tables' metadata, every report
page) carries :func:`provenance`, so a number found later can be traced to the code that made it: a
re-run after an upgrade that differs is then explained by the version, not a mystery.

The commit is baked into the extension when it is built (``crates/tailcut-py/build.rs`` reads ``git``,
or ``$TAILCUT_COMMIT`` for a build outside a checkout); a build that had neither says ``None``.
"""

from __future__ import annotations

from typing import Any

from tailcut import _core
from tailcut.outdir import config_hash


def version() -> str:
    return _core.version()


def commit() -> str | None:
    """The commit the extension was built from (``+dirty`` when the tree had changes), or ``None``."""
    built = getattr(_core, "build_commit", None)
    value = built() if built else None
    return value or None


def provenance(config: Any = None) -> dict[str, Any]:
    """``{"tailcut_version", "tailcut_commit"}``, plus ``"config_digest"`` when a config is given: the
    result folder's own :func:`tailcut.outdir.config_hash` (files count by content), so the digest on a
    page is the one its folder resumes by."""
    out: dict[str, Any] = {"tailcut_version": version(), "tailcut_commit": commit()}
    if config is not None:
        out["config_digest"] = config_hash(config)
    return out
