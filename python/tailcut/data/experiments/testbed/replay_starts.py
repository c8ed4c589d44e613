"""Re-run a testbed run in the simulator with the flows starting when Linux's agents started them.

The testbed's agents start flows late (``start_late_ns`` in its flows table: a median 0.2-0.9 ms, up
to 7 ms in the N = 16 incast, docs/testbed.md), while the simulator starts them on schedule. Whether a
difference between the worlds comes from the hosts' rules or from those start times is answered by
giving the simulator the same starts: this writes the testbed run's experiment with its workload
replaced by a ``flow_csv`` of the flows as they really started (same source, destination and size),
runs it for each world asked, and prints the timeouts per 100 flows next to the kernel's.

    python experiments/testbed/replay_starts.py TESTBED_RUN_DIR [TESTBED_RUN_DIR ...] --out DIR

Each TESTBED_RUN_DIR is a ``tailcut testbed run`` output (``config.toml``, ``flows.parquet``,
``testbed.json``). Worlds: ``sim`` (the file's scheme as written) and ``sim, this host`` (plus the
handshake and HZ = 250 timers, as experiments/testbed/crosscheck.py). Only one-way flows can be
replayed: a run with request/response flows is refused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import tailcut
from tailcut.config import load_experiment

THIS_HOST = {"handshake": True, "min_rto": "8ms", "rack": {"tlp_min_extra": "8ms"}}
WORLDS = {"sim": {}, "sim, this host": THIS_HOST}


def replay_config(run_dir: Path, out: Path) -> dict:
    """The run's experiment with its flows as they started on the testbed (writes out/flows.csv)."""
    config = load_experiment(run_dir / "config.toml")
    flows = pd.read_parquet(run_dir / "flows.parquet")
    if (flows["request_bytes"].fillna(0) > 0).any():
        raise SystemExit(f"{run_dir}: request/response flows cannot be replayed as one-way flows")
    late = flows["start_late_ns"].fillna(0).astype("int64")
    starts = flows["start_ns"].astype("int64") + late
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
    args = parser.parse_args(argv)
    rows: dict[str, list[float]] = {"linux": [], **{w: [] for w in WORLDS}}
    for run_dir in args.runs:
        rows["linux"].append(kernel_timeouts_per_100(run_dir))
        base = replay_config(run_dir, args.out / run_dir.name)
        for world, params in WORLDS.items():
            config = json.loads(json.dumps(base))
            for scheme in config["schemes"]:
                scheme["params"] = {**scheme.get("params", {}), **params}
            folder = args.out / run_dir.name / world.replace(", ", "_").replace(" ", "_")
            result = tailcut.run(config)
            result.write(folder, overwrite=True)
            flows = result.flows
            rows[world].append(100 * flows["timeouts"].fillna(0).sum() / len(flows))
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
