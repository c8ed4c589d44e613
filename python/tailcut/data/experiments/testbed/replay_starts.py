"""Re-run a testbed run in the simulator with the flows starting when Linux's agents started them.

The testbed's agents start flows late (``start_late_ns`` in its flows table: a median 0.2-0.9 ms, up
to 7 ms in the N = 16 incast, docs/testbed.md), while the simulator starts them on schedule. Whether a
difference between the worlds comes from the hosts' rules or from those start times is answered by
giving the simulator the same starts: this writes the testbed run's experiment with its workload
replaced by a ``flow_csv`` of the flows as they really started (same source, destination and size),
runs it for each world asked, and prints the timeouts per 100 flows next to the kernel's.

    python experiments/testbed/replay_starts.py TESTBED_RUN_DIR [...] --out DIR [--starts data]

Each TESTBED_RUN_DIR is a ``tailcut testbed run`` output (``config.toml``, ``flows.parquet``,
``testbed.json``). Starts: ``agent`` (default), when the agent began the flow (its schedule plus
``start_late_ns``, before its ``connect``); ``data``, when the flow's first data segment left the
host, read from the run's ``pcap/SCHEME.sent.pcap`` with tshark (the run needs ``[testbed.pcap]``).
The agents connect before they write, so data leaves 0.3-7 ms after the SYN; the capture's clock is
aligned to the flows' by the median of SYN time minus agent start over the flows (within 10 us here).

Worlds: ``sim`` (the file's scheme as written); ``sim, HZ = 250 timers``: the timers of these hosts'
kernels (``timer_hz = 250``: jiffies on the timer wheel, the 5 ms RTO floor 2 jiffies);
``sim, this host``: ``host = "testbed"``, those timers, the 3-way handshake and the agents' wake-ups
at the flow's start (right with agent starts; with data starts the handshake and the write were over
before them). Only one-way flows can be replayed: a run with request/response flows is refused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

# This folder's scripts (Python puts a script's folder on the path).
from crosscheck import THIS_HOST, rtos_per_100_flows
from fct_parts import agent_starts, captures, first_data, flows_clock

import tailcut
from tailcut.config import load_experiment

WORLDS = {"sim": {}, "sim, HZ = 250 timers": {"timer_hz": 250}, "sim, this host": THIS_HOST}


def data_starts(run_dir: Path, flows: pd.DataFrame) -> pd.Series:
    """When each flow's first data segment left its host, on the flows' clock (from the capture)."""
    if not list((run_dir / "pcap").glob("*.sent.pcap")):
        raise SystemExit(f"{run_dir}: no pcap/*.sent.pcap (run it with [testbed.pcap]) for --starts data")
    sent = captures(run_dir, "sent")
    data_ns = flows_clock(flows, sent)(first_data(sent))
    if data_ns.isna().any():
        raise SystemExit(f"{run_dir}: {int(data_ns.isna().sum())} flows have no data segment in the capture")
    return data_ns.round().astype("int64")


def replay_config(run_dir: Path, out: Path, starts_from: str = "agent") -> dict:
    """The run's experiment with its flows as they started on the testbed (writes out/flows.csv)."""
    config = load_experiment(run_dir / "config.toml")
    flows = pd.read_parquet(run_dir / "flows.parquet")
    if (flows["request_bytes"].fillna(0) > 0).any():
        raise SystemExit(f"{run_dir}: request/response flows cannot be replayed as one-way flows")
    starts = data_starts(run_dir, flows) if starts_from == "data" else agent_starts(flows).astype("int64")
    table = pd.DataFrame(
        {
            "src": flows["src"],
            "dst": flows["dst"],
            "start": starts.map(lambda ns: f"{ns}ns"),
            "size": flows["size_bytes"],
        }
    ).iloc[starts.argsort(kind="stable")]
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "flows.csv", index=False)
    config["workload"] = [
        {"name": "replay", "pattern": {"kind": "flow_csv", "path": str((out / "flows.csv").resolve())}}
    ]
    return config


def kernel_timeouts_per_100(run_dir: Path) -> float:
    runs = json.loads((run_dir / "testbed.json").read_text())
    timeouts = sum(r["kernel"].get("TcpExt.TCPTimeouts", 0) for r in runs)
    return 100 * timeouts / sum(r["flows"] for r in runs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="tailcut testbed run output folders")
    parser.add_argument("--out", type=Path, required=True, help="folder for the replays")
    parser.add_argument(
        "--starts", choices=["agent", "data"], default="agent", help="when a flow starts (see above)"
    )
    args = parser.parse_args(argv)
    rows: dict[str, list[float]] = {"linux": [], **{w: [] for w in WORLDS}}
    for run_dir in args.runs:
        rows["linux"].append(kernel_timeouts_per_100(run_dir))
        base = replay_config(run_dir, args.out / run_dir.name, args.starts)
        for world, params in WORLDS.items():
            config = json.loads(json.dumps(base))
            for scheme in config["schemes"]:
                scheme["params"] = {**scheme.get("params", {}), **params}
            folder = args.out / run_dir.name / "".join(c if c.isalnum() else "_" for c in world)
            result = tailcut.run(config)
            result.write(folder, overwrite=True)
            rows[world].append(rtos_per_100_flows(result.flows, {}))
    print("| world | RTOs per 100 flows, median [min-max] | per run |")
    print("|---|---|---|")
    for world, values in rows.items():
        cells = ", ".join(f"{v:.3g}" for v in values)
        print(
            f"| {world} | {statistics.median(values):.3g} [{min(values):.3g}-{max(values):.3g}] | {cells} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
