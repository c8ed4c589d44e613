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


def parts(run_dir: Path) -> pd.Series:
    sent = pd.concat([capture(p) for p in sorted((run_dir / "pcap").glob("*.sent.pcap"))])
    delivered = pd.concat([capture(p) for p in sorted((run_dir / "pcap").glob("*.delivered.pcap"))])
    flows = pd.read_parquet(run_dir / "flows.parquet")
    start = flows["start_ns"] + flows["start_late_ns"].fillna(0)
    syn = sent[(sent["syn"] == 1) & (sent["ack"] == 0)].groupby("sport")["t"].min()
    synack = delivered[(delivered["syn"] == 1) & (delivered["ack"] == 1)].groupby("dport")["t"].min()
    data = sent[sent["len"] > 0].groupby("sport")["t"].min()
    payload = delivered[delivered["len"] > 0].assign(end=lambda d: d["seq"] + d["len"])
    last = payload.loc[payload.groupby("sport")["end"].idxmax()].set_index("sport")["t"]
    port = flows["client_port"]
    offset = (port.map(syn) * 1e9 - start).median()

    def at(times: pd.Series) -> pd.Series:
        return port.map(times) * 1e9 - offset

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
