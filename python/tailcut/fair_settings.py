"""The settings that decide a comparison, per scheme, as they will run (``tailcut validate`` prints them).

Two schemes compared with different minimum RTOs, initial windows or host queue limits measure those
settings, not the schemes (docs/comparing-fairly.md). Each value is the one the core resolved (its
resolved config fills in every scheme parameter), so no rule of the core is restated here; it is marked
``file`` when the file sets it, else ``default`` (``default: follows other settings`` when the core
derived it from other keys, e.g. the initial RTO from the min RTO without a handshake).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tailcut.schemes_text import format_default

# Parameters that change flow completion times by themselves, whichever scheme has them (a scheme lists
# those of its registry entry; the rest do not apply to it). docs/comparing-fairly.md says why each.
RESULT_PARAMS = (
    "min_rto",
    "initial_rto",
    "initial_cwnd_segments",
    "initial_window_packets",
    "loss_detection",
    "host",
    "delayed_ack",
    "handshake",
    "ecn",
    "subflows",
    "paths",
    "copies",
    "codec",
    "rate_share",
    "nic_rate",
    "multi_block",
)
# The T-RACKs shim's: it spoofs ACKs until the senders' RTO would fire, so it must know their min RTO.
SHIM_PARAMS = ("min_rto", "alpha")


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    source: str  # "file", "default", or how a default was derived ("default: min_rto without a handshake")


def _registry(schemes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["name"]: {p["name"]: p.get("default") for p in s.get("params", [])} for s in schemes}


# How a value the core resolved is shown: `nic_rate = "host"` paces each host at its own NIC's rate.
_SHOWN = {("nic_rate", "host"): "each host's NIC rate"}


def _shown(name: str, value: Any) -> str:
    text = format_default(value)
    return _SHOWN.get((name, text), text)


def scheme_settings(
    raw: Mapping[str, Any], resolved: Mapping[str, Any], registry: list[dict[str, Any]]
) -> list[tuple[str, str, list[Setting]]]:
    """``(scheme name, transport, settings)`` for each scheme: ``raw`` is the experiment as written (what
    the file sets), ``resolved`` the core's resolved config (every default filled in, the scheme
    parameters too). Values come from ``resolved``, so they are the ones the run uses; the registry only
    says which parameters a scheme has, and its default tells a derived default (TCP's initial RTO without
    a handshake follows the min RTO) from the listed one."""
    defaults = _registry(registry)
    rows = []
    raw_schemes = raw.get("schemes") or []
    for i, scheme in enumerate(resolved.get("schemes", [])):
        written = raw_schemes[i] if i < len(raw_schemes) and isinstance(raw_schemes[i], dict) else {}
        transport = str(scheme.get("transport", ""))
        params = written.get("params") or {}
        effective = scheme.get("params") or {}
        known = defaults.get(transport, {})
        settings = []
        for name in RESULT_PARAMS:
            if name not in known and name not in effective:
                continue
            value = effective.get(name)  # absent: an optional parameter that is off (no delayed ACKs)
            if name in params:
                source = "file"
            elif name in known and value != known[name]:
                source = "default: follows other settings"
            else:
                source = "default"
            settings.append(Setting(name, _shown(name, value), source))
        settings.append(_host_tsq(raw, resolved, written, scheme))
        shim, shim_written = scheme.get("shim"), written.get("shim") or {}
        if isinstance(shim, dict):
            for name in SHIM_PARAMS:
                if name in shim:
                    source = "file" if name in shim_written else "default"
                    settings.append(Setting(f"shim.{name}", format_default(shim[name]), source))
        rows.append((str(scheme.get("name", "?")), transport, settings))
    return rows


def _host_tsq(
    raw: Mapping[str, Any], resolved: Mapping[str, Any], written: Mapping[str, Any], scheme: Mapping[str, Any]
) -> Setting:
    # A scheme's own `network` table replaces the experiment's whole, so host_tsq comes from one or the other.
    own = isinstance(written.get("network"), dict)
    table_written = written["network"] if own else (raw.get("network") or {})
    table = (scheme.get("network") if own else resolved.get("network")) or {}
    source = "file" if isinstance(table_written, dict) and "host_tsq" in table_written else "default"
    return Setting("host_tsq", format_default(table.get("host_tsq", "linux")), source)


def format_settings(rows: list[tuple[str, str, list[Setting]]]) -> str:
    """The settings as an indented block for ``tailcut validate``."""
    lines = ["  settings that change results (file: set in this file; default: the scheme's default):"]
    for name, transport, settings in rows:
        lines.append(f"    {name} (transport {transport})")
        width = max((len(s.name) for s in settings), default=0)
        value_width = max((len(s.value) for s in settings), default=0)
        for s in settings:
            lines.append(f"      {s.name.ljust(width)}  {s.value.ljust(value_width)}  ({s.source})")
    return "\n".join(lines)
