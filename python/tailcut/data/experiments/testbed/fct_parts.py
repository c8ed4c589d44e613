"""Split each flow's FCT of a testbed run into the parts the packets bound (docs/testbed.md).

    python experiments/testbed/fct_parts.py RUN_DIR [RUN_DIR ...]

RUN_DIR is a ``tailcut testbed run`` output made with ``[testbed.pcap]``. Per flow, from the agents'
times (``flows.parquet``) and the two captures (tshark reads them): the agent's start, the SYN
leaving the client (``sent.pcap``), the SYN-ACK reaching it (``delivered.pcap``), the first data
segment leaving it, the last byte written to the receiver's NIC, and the receiving agent's read of it
(``finish_ns``). The capture's clock is aligned to the agents' by the median of SYN time minus agent
start over the run's flows. Prints the medians in microseconds, one row per run.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

FIELDS = [
    "frame.time_epoch",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.len",
    "tcp.flags.syn",
    "tcp.flags.ack",
    "tcp.seq",
]
NAMES = ["t", "sport", "dport", "len", "syn", "ack", "seq"]


def capture(path: Path) -> pd.DataFrame:
    fields = " ".join(f"-e {f}" for f in FIELDS)
    out = subprocess.run(
        f"tshark -r {path} -Y tcp -T fields -E separator=, {fields}",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return pd.read_csv(io.StringIO(out), names=NAMES)


def captures(run_dir: Path, kind: str) -> pd.DataFrame:
    """Every ``pcap/*.KIND.pcap`` of a run (``sent`` or ``delivered``), read into one table."""
    return pd.concat([capture(p) for p in sorted((run_dir / "pcap").glob(f"*.{kind}.pcap"))])


def agent_starts(flows: pd.DataFrame) -> pd.Series:
    """When each flow's agent began it (its schedule plus its lateness), on the flows' clock."""
    return flows["start_ns"] + flows["start_late_ns"].fillna(0)


def first_syn(sent: pd.DataFrame) -> pd.Series:
    """Per client port, when its first SYN left the host (capture clock, seconds)."""
    return sent[(sent["syn"] == 1) & (sent["ack"] == 0)].groupby("sport")["t"].min()


def first_data(sent: pd.DataFrame) -> pd.Series:
    """Per client port, when its first data segment left the host (capture clock, seconds)."""
    return sent[sent["len"].fillna(0) > 0].groupby("sport")["t"].min()


def flows_clock(flows: pd.DataFrame, sent: pd.DataFrame) -> Callable[[pd.Series], pd.Series]:
    """Maps times per client port on the capture's clock to each flow's on the flows' clock (ns):
    the offset is the median over the flows of SYN time minus agent start (the agent takes its start
    just before ``connect``)."""
    port = flows["client_port"]
    offset = (port.map(first_syn(sent)) * 1e9 - agent_starts(flows)).median()
    return lambda times: port.map(times) * 1e9 - offset


def parts(run_dir: Path) -> pd.Series:
    sent, delivered = captures(run_dir, "sent"), captures(run_dir, "delivered")
    flows = pd.read_parquet(run_dir / "flows.parquet")
    start = agent_starts(flows)
    syn = first_syn(sent)
    synack = delivered[(delivered["syn"] == 1) & (delivered["ack"] == 1)].groupby("dport")["t"].min()
    data = first_data(sent)
    payload = delivered[delivered["len"] > 0].assign(end=lambda d: d["seq"] + d["len"])
    last = payload.loc[payload.groupby("sport")["end"].idxmax()].set_index("sport")["t"]
    at = flows_clock(flows, sent)

    table = pd.DataFrame(
        {
            "agent start -> SYN": at(syn) - start,
            "SYN -> SYN-ACK back": at(synack) - at(syn),
            "SYN-ACK -> first data": at(data) - at(synack),
            "first data -> last byte at receiver NIC": at(last) - at(data),
            "last byte at NIC -> agent read": flows["finish_ns"] - at(last),
            "FCT": flows["fct_ns"],
        }
    )
    return table.median() / 1e3


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rows = {Path(d).name: parts(Path(d)) for d in argv}
    print(pd.DataFrame(rows).round(1).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
