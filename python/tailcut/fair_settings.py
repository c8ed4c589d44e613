"""The settings that decide a comparison, per scheme, as they will run (``tailcut validate`` prints them).

Two schemes compared with different minimum RTOs, initial windows or host queue limits measure those
settings, not the schemes (docs/comparing-fairly.md). Each value is the experiment's own when the file
sets it, else the scheme's default from the registry (the same table ``tailcut schemes`` prints), and is
marked so: ``file`` or ``default``.
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


def scheme_settings(
    raw: Mapping[str, Any], resolved: Mapping[str, Any], registry: list[dict[str, Any]]
) -> list[tuple[str, str, list[Setting]]]:
    """``(scheme name, transport, settings)`` for each scheme: ``raw`` is the experiment as written (what
    the file sets), ``resolved`` the core's resolved config (every default filled in)."""
    defaults = _registry(registry)
    rows = []
    raw_schemes = raw.get("schemes") or []
    for i, scheme in enumerate(resolved.get("schemes", [])):
        written = raw_schemes[i] if i < len(raw_schemes) and isinstance(raw_schemes[i], dict) else {}
        transport = str(scheme.get("transport", ""))
        params = written.get("params") or {}
        known = defaults.get(transport, {})
        settings = [
            Setting(name, format_default(params[name]), "file")
            if name in params
            else Setting(name, format_default(known[name]), "default")
            for name in RESULT_PARAMS
            if name in known or name in params
        ]
        settings = [_nic_rate(_initial_rto(s, settings, params)) for s in settings]
        settings.append(_host_tsq(raw, resolved, written, scheme))
        shim, shim_written = scheme.get("shim"), written.get("shim") or {}
        if isinstance(shim, dict):
            shim_defaults = defaults.get(str(shim.get("kind")), {})
            for name in SHIM_PARAMS:
                if name in shim_written:
                    settings.append(Setting(f"shim.{name}", format_default(shim_written[name]), "file"))
                elif name in shim_defaults:
                    settings.append(Setting(f"shim.{name}", format_default(shim_defaults[name]), "default"))
        rows.append((str(scheme.get("name", "?")), transport, settings))
    return rows


def _initial_rto(setting: Setting, settings: list[Setting], params: Mapping[str, Any]) -> Setting:
    # The core's rule (scheme/over_tcp.rs, tcp_config): without a handshake and without a given
    # initial_rto, the initial RTO is the min RTO, as in ns-2's datacenter setups.
    if setting.name != "initial_rto" or "initial_rto" in params:
        return setting
    by_name = {s.name: s for s in settings}
    if "min_rto" in by_name and by_name.get("handshake", Setting("", "false", "")).value == "false":
        return Setting("initial_rto", by_name["min_rto"].value, "default: min_rto without a handshake")
    return setting


def _nic_rate(setting: Setting) -> Setting:
    # The core's rule (transport/cloudburst.rs): without a given nic_rate, each host paces at its own
    # NIC's rate; the registry's default is the engine's outside a topology.
    if setting.name == "nic_rate" and setting.source == "default":
        return Setting("nic_rate", "each host's NIC rate", "default")
    return setting


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
