"""Tracing flows: re-run one scheme of an experiment and record every event of chosen flows.

The traced run is the run itself (same seed, flows and results; the core only watches), so a flow picked
from a normal run's table behaves the same when traced. A trace folder holds ``events.parquet`` and
``events.csv`` (one row per event, see docs/trace.md), ``flows.parquet`` (the traced scheme's flow table),
``trace.pcap`` (the packets as they enter the sending host's NIC queue, with synthesized headers),
``plots/flow-<id>.png`` and ``.svg`` (time-sequence diagrams), ``trace.json`` and ``config.toml``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailcut import _core
from tailcut.config import ConfigSource, check_u64, to_json, to_toml
from tailcut.outdir import atomic_dir, claim, released, write_marker
from tailcut.results import FLOW_COLUMNS, columns_to_frame
from tailcut.runner import prepare

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_MAX_EVENTS = 500_000


@dataclass
class TraceResult:
    """The events of the traced flows, the traced scheme's flow table and what was traced."""

    events: pd.DataFrame
    flows: pd.DataFrame
    scheme: str
    flow_ids: list[int]
    max_events: int
    # Simulated time at which the event cap was reached (the record stops there), or None.
    truncated_at_ns: int | None
    config: dict[str, Any]
    runs: list[dict[str, Any]]

    def warnings(self) -> list[str]:
        if self.truncated_at_ns is None:
            return []
        return [
            f"warning: the trace reached its cap of {self.max_events} events at "
            f"{self.truncated_at_ns / 1e9:.6f} s of simulated time; later events were not recorded "
            "(raise --max-trace-events, or trace fewer flows)"
        ]


def _traced_run(
    config_json: str,
    flows: Sequence[int],
    scheme: str | None,
    seed: int | None,
    max_events: int,
    limits: Mapping[str, Any] | None,
) -> dict[str, Any]:
    return json.loads(_core.trace(config_json, list(flows), scheme, seed, max_events, **(limits or {})))


def select_flows(flows: pd.DataFrame, where: str, limit: int | None) -> list[int]:
    """The ids of the flows a pandas query over the flow table's columns picks, first ``limit`` of them.

    Raises ``ValueError`` naming ``--where`` for a query pandas cannot evaluate or that picks nothing.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"--limit: must be at least 1, not {limit}")
    try:
        picked = flows.query(where)
    except Exception as exc:  # pandas raises many types (SyntaxError, UndefinedVariableError, ...)
        columns = ", ".join(flows.columns)
        raise ValueError(f"--where: cannot evaluate {where!r}: {exc} (columns: {columns})") from None
    if len(picked) == 0:
        raise ValueError(f"--where: no flow of {len(flows)} matches {where!r}")
    ids = [int(i) for i in picked["flow_id"]]
    return ids[:limit] if limit is not None else ids


def trace(
    config: ConfigSource,
    flows: Iterable[int] | None = None,
    where: str | None = None,
    limit: int | None = 5,
    scheme: str | None = None,
    seed: int | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    max_events: int = DEFAULT_MAX_EVENTS,
    limits: Mapping[str, Any] | None = None,
) -> TraceResult:
    """Trace the flows with these ids, or those ``where`` (a pandas query on the flow table) picks.

    ``scheme`` names the scheme to re-run (needed when the experiment has several). With ``where`` the
    scheme is first run in full to pick the flows, then again traced. Raises ``tailcut.ConfigError`` for
    a bad config, scheme or flow id (its ``path`` is ``scheme`` or ``flow``), ``ValueError`` for a bad query.
    """
    if (flows is None) == (where is None):
        raise ValueError("give either flow ids (--flow) or a query (--where), not both or neither")
    if seed is not None:
        check_u64("seed", seed)
    # In u64's range here; 0 is refused by the core (max_events) and select_flows (limit), naming them.
    check_u64("max_events", max_events)
    if limit is not None:
        check_u64("limit", limit)
    raw, resolved = prepare(config, overrides, limits)
    config_json = to_json(raw)
    if where is not None:
        # Any traced run yields the whole flow table of its scheme (tracing changes nothing): trace
        # flow 0 to get it, then trace the flows the query picks.
        first = _traced_run(config_json, [0], scheme, seed, 1, limits)
        ids = select_flows(columns_to_frame(first["flows"], FLOW_COLUMNS), where, limit)
    else:
        ids = [int(f) for f in flows]  # type: ignore[union-attr]
        if not ids:
            raise ValueError("--flow: give at least one flow id")
        for f in ids:
            check_u64("flow", f)
    document = _traced_run(config_json, ids, scheme, seed, max_events, limits)
    flow_table = columns_to_frame(document["flows"], FLOW_COLUMNS)
    if seed is not None and "seed" in resolved:
        resolved["seed"] = seed
    meta = document["trace"]
    return TraceResult(
        events=_events_frame(document["events"]),
        flows=flow_table,
        scheme=str(flow_table["scheme"].iloc[0]) if len(flow_table) else (scheme or ""),
        flow_ids=sorted(set(ids)),
        max_events=int(meta["max_events"]),
        truncated_at_ns=meta["truncated_at_ns"],
        config=resolved,
        runs=list(document.get("runs", [])),
    )


def _events_frame(columns: Mapping[str, list[Any]]) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    # Explicit types: a column that is null in every row (no probe on a UDP engine) still gets one.
    integer = pa.int64()
    types = {
        "time_ns": integer,
        "flow_id": integer,
        "port": integer,
        "src_addr": integer,
        "dst_addr": integer,
        "src_port": integer,
        "dst_port": integer,
        "size_bytes": integer,
        "payload_bytes": integer,
        "seq": integer,
        "ack": integer,
        "flags": integer,
        "window": integer,
        "ts_val": integer,
        "ts_ecr": integer,
        "path": integer,
        "cwnd_bytes": integer,
        "ssthresh_bytes": integer,
        "rto_ns": integer,
        "srtt_ns": integer,
        "timer_ns": integer,
        "retransmission": pa.bool_(),
        "trimmed": pa.bool_(),
        "datagram": pa.bool_(),
    }
    table = pa.table(
        {name: pa.array(values, type=types.get(name, pa.string())) for name, values in columns.items()}
    )
    return table.to_pandas(types_mapper={integer: pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}.get)


def write_trace(result: TraceResult, out: str | Path, overwrite: bool = False) -> Path:
    """Write the trace folder atomically (``--out`` rules of :mod:`tailcut.outdir`)."""
    from tailcut.pcap import write_pcap
    from tailcut.provenance import provenance, write_parquet
    from tailcut.trace_plot import plot_flow

    out = Path(out)
    claim(out, "trace", overwrite=overwrite)
    stamp = provenance(result.config or None)
    with released(out), atomic_dir(out) as tmp:
        write_marker(tmp, "trace", **stamp)
        write_parquet(result.events, tmp / "events.parquet", stamp)
        result.events.to_csv(tmp / "events.csv", index=False)
        write_parquet(result.flows, tmp / "flows.parquet", stamp)
        write_pcap(result.events, tmp / "trace.pcap")
        (tmp / "plots").mkdir()
        for flow in result.flow_ids:
            plot_flow(result.events, flow, tmp / "plots" / f"flow-{flow}")
        (tmp / "config.toml").write_text(to_toml(result.config))
        summary = {
            **stamp,
            "scheme": result.scheme,
            "flows": result.flow_ids,
            "events": len(result.events),
            "max_events": result.max_events,
            "truncated_at_ns": result.truncated_at_ns,
            "capture_point": "each packet as it enters its sending host's NIC queue",
        }
        (tmp / "trace.json").write_text(json.dumps(summary, indent=2) + "\n")
    return out
