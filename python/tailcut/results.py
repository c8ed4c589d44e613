"""The result of one run: tables in memory, and the folder layout they are written to and read from.

A result folder holds ``flows.parquet``, ``ports.parquet``, ``summary.json``, ``config.toml`` (the fully
resolved config, enough to repeat the run), ``runs.json``, ``report.html`` and the ``.tailcut.json``
marker; ``tailcut run`` adds ``flows.csv``, the flow table for tools that do not read Parquet (sweeps and
comparisons leave it out: their many points are read back by tailcut). Folders are written atomically
and never over anything tailcut did not write (:mod:`tailcut.outdir`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailcut.config import to_toml
from tailcut.outdir import atomic_dir, claim, released, write_marker
from tailcut.summary import PERCENTILES, summarize

if TYPE_CHECKING:
    import pandas as pd

FLOW_COLUMNS = [
    "flow_id",
    "scheme",
    "component",
    "src",
    "dst",
    "size_bytes",
    "sent_bytes",
    "start_ns",
    "finish_ns",
    "fct_ns",
    "ideal_fct_ns",
    "slowdown",
    "timeouts",
    "fast_retransmits",
    "retransmitted_bytes",
    "redundant_bytes",
    "completed",
]
PORT_COLUMNS = [
    "scheme",
    "node",
    "port",
    "peer",
    "enqueued_packets",
    "enqueued_bytes",
    "dropped_overflow",
    "dropped_aqm",
    "dropped_link_loss",
    "dropped_link_down",
    "ecn_marked",
    "trimmed",
    "max_occupancy_bytes",
    "tx_packets",
    "tx_bytes",
]


def columns_to_frame(columns: Mapping[str, list[Any]], expected: list[str]) -> pd.DataFrame:
    """Turn the core's column-oriented JSON into a DataFrame, known columns first.

    Arrow infers the column types (nullable integers become floats with NaN in pandas, which is what
    unfinished flows' ``fct_ns`` needs); known columns absent from the core's output are added empty so that
    code downstream can rely on them.
    """
    import pandas as pd
    import pyarrow as pa

    table = pa.table({name: pa.array(values) for name, values in columns.items()})
    frame = table.to_pandas()
    for name in expected:
        if name not in frame.columns:
            frame[name] = pd.Series([None] * len(frame), dtype=object)
    ordered = [c for c in expected if c in frame.columns] + [c for c in frame.columns if c not in expected]
    return frame[ordered]


@dataclass
class Result:
    """One experiment's outcome.

    ``flows`` has one row per flow and ``ports`` one row per switch port and scheme (see the column lists
    above); ``summary`` is :func:`tailcut.summarize` of ``flows``; ``runs`` has one entry per scheme with
    event counts, wall time and the packet-conservation check; ``config`` is the resolved config.
    """

    flows: pd.DataFrame
    ports: pd.DataFrame
    runs: list[dict[str, Any]]
    config: dict[str, Any]
    summary: pd.DataFrame = field(default=None)  # type: ignore[assignment]
    path: Path | None = None

    def __post_init__(self) -> None:
        if self.summary is None:
            self.summary = summarize(self.flows)

    def _repr_html_(self) -> str:
        """In a notebook, a result shows as its summary table."""
        flows, unfinished = (
            len(self.flows),
            int((~self.flows["completed"].astype(bool)).sum()) if len(self.flows) else 0,
        )
        head = (
            f"<p>tailcut result: {flows} flows ({unfinished} unfinished), {len(self.runs)} scheme run(s)</p>"
        )
        return head + self.summary.to_html(index=False, na_rep="-")

    @classmethod
    def from_core(cls, document: Mapping[str, Any], config: dict[str, Any]) -> Result:
        """Build from the JSON document ``tailcut._core.run`` returns."""
        return cls(
            flows=columns_to_frame(document.get("flows", {}), FLOW_COLUMNS),
            ports=columns_to_frame(document.get("ports", {}), PORT_COLUMNS),
            runs=list(document.get("runs", [])),
            config=config,
        )

    @classmethod
    def load(cls, path: str | Path) -> Result:
        """Read a result folder written by :meth:`write` (or ``tailcut run``)."""
        import warnings

        import pandas as pd

        from tailcut.config import load_config
        from tailcut.provenance import folder_config_warnings, without

        path = Path(path)
        runs_file = path / "runs.json"
        config_file = path / "config.toml"
        config = load_config(config_file) if config_file.exists() else {}
        changes = folder_config_warnings(config_file, config)
        if changes:
            warnings.warn("\n".join(changes), stacklevel=2)
        return cls(
            flows=pd.read_parquet(path / "flows.parquet"),
            ports=pd.read_parquet(path / "ports.parquet")
            if (path / "ports.parquet").exists()
            else pd.DataFrame(),
            # As the core returned them: the provenance every record carries is the folder's
            # (tailcut.provenance.recorded), not the run's.
            runs=without(json.loads(runs_file.read_text())) if runs_file.exists() else [],
            config=config,
            path=path,
        )

    def write(
        self,
        out: str | Path,
        report: Callable[[Result], str] | None = None,
        overwrite: bool = False,
        csv: bool = False,
    ) -> Path:
        """Write the result folder atomically; ``report`` renders report.html (skipped when None) and
        ``csv`` adds flows.csv, the flow table with the same columns as flows.parquet.

        An existing result in ``out`` is replaced only with ``overwrite``; a folder holding anything else
        raises :class:`tailcut.outdir.OutputError` (a ``ValueError``) and is left alone.
        """
        from tailcut.provenance import provenance, write_parquet

        out = Path(out)
        claim(out, "run", overwrite=overwrite)
        stamp = provenance(self.config or None)
        with released(out), atomic_dir(out) as tmp:
            write_marker(tmp, "run", **stamp)
            write_parquet(self.flows, tmp / "flows.parquet", stamp)
            if csv:
                self.flows.to_csv(tmp / "flows.csv", index=False)
            write_parquet(self.ports, tmp / "ports.parquet", stamp)
            (tmp / "summary.json").write_text(summary_json(self.summary, stamp))
            (tmp / "config.toml").write_text(to_toml(self.config))
            # Every scheme's record says which tailcut ran it (runs.json stays a list, as readers expect).
            runs = [{**r, **stamp} if isinstance(r, dict) else r for r in self.runs]
            (tmp / "runs.json").write_text(json.dumps(runs, indent=2) + "\n")
            if report is not None:
                (tmp / "report.html").write_text(report(self))
        self.path = out
        return out


def summary_json(summary: pd.DataFrame, stamp: Mapping[str, Any] | None = None) -> str:
    """``summary.json``: ``stamp`` (:func:`tailcut.provenance.provenance`), ``unfinished`` (the flows that
    did not finish, over every scheme) and ``summary``, the table as records.

    Strict JSON: numbers are numbers or ``null``, never strings. ``null`` is NaN (an empty size class,
    ``count`` 0, or a ratio without any completed flow) or, for a percentile of a group with flows, a rank
    that falls among its unfinished flows (``inf`` in the table; the row's ``unfinished`` counts them):
    :func:`read_summary_json` reads both back as the table had them."""
    records = summary.to_dict(orient="records")
    clean = [{k: _json_number(_plain(v)) for k, v in r.items()} for r in records]
    unfinished = 0
    if len(summary) and "unfinished" in summary:
        unfinished = int(summary.loc[summary["size_class"] == "all", "unfinished"].sum())
    document = {**(stamp or {}), "unfinished": unfinished, "summary": clean}
    return json.dumps(document, indent=2) + "\n"


def read_summary_json(path: str | Path) -> pd.DataFrame:
    """The table :func:`summary_json` wrote, ``inf`` percentiles restored; also reads the files of older
    tailcut versions (a bare list of records, infinity as the string ``"inf"``)."""
    import pandas as pd

    document = json.loads(Path(path).read_text())
    records = document["summary"] if isinstance(document, dict) else document
    frame = pd.DataFrame(records)
    for column in [f"{name}_fct_ns" for name in PERCENTILES]:
        if column not in frame:
            continue
        values = frame[column].replace({"inf": math.inf, "-inf": -math.inf})
        values = pd.to_numeric(values, errors="coerce").astype(float)
        if "count" in frame:
            values = values.mask(values.isna() & (frame["count"] > 0), math.inf)
        frame[column] = values
    return frame


def _json_number(value: Any) -> Any:
    # JSON has neither NaN nor infinity; the row's count and unfinished tell which a null was.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _plain(value: Any) -> Any:
    # numpy scalars are not JSON serialisable.
    return value.item() if hasattr(value, "item") else value
