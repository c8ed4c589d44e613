"""``tailcut schemes [NAME...] [--all]``: the scheme registry as plain text for a terminal.

Without names it is a short list, one line per scheme (:func:`format_short`); with names, or
``--all``, every parameter with its default and documentation (:func:`format_schemes`).

The registry's docs are written for the reference page (Markdown: backticks, links); a terminal shows
them as plain text, wrapped to its width under a column of its own, so a long description never runs
off the screen or mid-word.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

# Widest default shown in its column; longer ones (tables) take the row to themselves.
DEFAULT_COLUMN = 16


def plain(text: str) -> str:
    """Markdown and rustdoc markup removed: ``[`X`](url)`` -> ``X``, `` `x` `` -> ``x``, ``**x**``
    -> ``x``."""
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[`([^`\]]+)`\]", r"\1", text)
    text = text.replace("`", "")
    return re.sub(r"\*\*([^*]+)\*\*", r"\1", text)


def format_default(value: Any) -> str:
    """A parameter default as one would write it in an experiment file (inline TOML, units unquoted)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {format_default(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(format_default(v) for v in value) + "]"
    return str(value)


def select(schemes: list[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """The named schemes in the order asked; an unknown name raises ``ValueError`` listing the known."""
    by_name = {s["name"]: s for s in schemes}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown scheme {', '.join(unknown)} (known: {', '.join(by_name)})")
    return [by_name[n] for n in names] if names else schemes


def format_schemes(schemes: list[dict[str, Any]], width: int | None = None) -> str:
    """A plain-text table of schemes and host shims with their parameters, defaults and documentation,
    the description column wrapped so that no line is longer than ``width`` (the terminal's by default).

    ``schemes`` is what the core lists: ``{name, kind, description, params: [{name, default, doc}]}``;
    ``kind`` is ``transport`` (named by ``transport = NAME``) or ``shim`` (``shim = { kind = NAME }``).
    """
    width = width or shutil.get_terminal_size((100, 24)).columns
    rows = [("SCHEME", "PARAMETER", "DEFAULT", "DESCRIPTION")]
    for scheme in schemes:
        name = scheme["name"] + (" (shim)" if scheme.get("kind") == "shim" else "")
        rows.append((name, "", "", plain(scheme.get("description", ""))))
        for param in scheme.get("params", []):
            rows.append(
                ("", param["name"], format_default(param.get("default")), plain(param.get("doc") or ""))
            )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    # A long default (a whole sub-table) would push every description to the right edge: it gets the
    # line to itself and its description starts on the next one.
    widths[2] = min(widths[2], DEFAULT_COLUMN)
    indent = sum(widths) + 6
    # A description column narrower than this is unreadable: it then runs past the terminal's width.
    room = max(width - indent, 30)
    lines = []
    for row in rows:
        head = "  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  "
        wrapped = textwrap.wrap(row[3], room) or [""]
        if len(row[2]) > widths[2]:
            lines.append(head.rstrip())
            lines.extend(" " * indent + part for part in wrapped)
            continue
        lines.append((head + wrapped[0]).rstrip())
        lines.extend(" " * indent + more for more in wrapped[1:])
    return "\n".join(line.rstrip() for line in lines)


def _summary(text: str) -> str:
    """The description's first line, as plain text (the registry's descriptions are one-liners)."""
    return plain(text).strip().splitlines()[0] if text.strip() else ""


def format_short(schemes: list[dict[str, Any]], width: int | None = None) -> str:
    """One line per scheme: its name (``(shim)`` for a host shim) and its description's summary, cut
    with ``...`` to ``width`` (the terminal's by default); then how to see the parameters."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    names = [s["name"] + (" (shim)" if s.get("kind") == "shim" else "") for s in schemes]
    column = max((len(n) for n in names), default=0) + 2
    room = max(width - column, 30)
    lines = []
    for name, scheme in zip(names, schemes, strict=True):
        text = _summary(scheme.get("description", ""))
        if len(text) > room:
            text = text[: room - 3].rstrip() + "..."
        lines.append((name.ljust(column) + text).rstrip())
    lines.append("")
    lines.append("parameters and defaults: tailcut schemes NAME... (or --all for every scheme)")
    return "\n".join(lines)
