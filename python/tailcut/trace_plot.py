"""The time-sequence diagram of one traced flow (tcptrace's): each data segment sent as a vertical bar
over its sequence range at its send time (retransmissions in red), the cumulative ACK the sender
received as a step line, drops marked with an x where they happened, and the congestion window below.
The sender's loss timers are marked across both panels: a retransmission timeout (``rto`` events) as a
dashed red line, a tail loss probe timeout (``tlp``) as a dotted orange one, so a tail recovered by a
probe is told from one that waited for the RTO.

Sequence numbers are relative to the lowest the data sender used; a flow without sequence numbers
(datagram schemes) is drawn by payload bytes sent so far.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

_WRAP = 1 << 32


def _relative(seq: pd.Series, base: int) -> pd.Series:
    # Wire sequence numbers wrap at 2^32; a flow spans far less than 2^31 bytes.
    return (seq.astype("int64") - base) % _WRAP


# The sender's timers worth seeing on the diagram: (event kind, legend label, colour, line style).
_TIMERS = (("rto", "RTO fired", "tab:red", "--"), ("tlp", "TLP fired", "tab:orange", ":"))


def plot_flow(events: pd.DataFrame, flow: int, stem: Path) -> list[str]:
    """Draw flow ``flow``'s diagram into ``stem``.png and ``stem``.svg; returns the legend's labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ev = events[events["flow_id"] == flow]
    data = ev[(ev["direction"] == "data") & (ev["payload_bytes"].fillna(0) > 0)]
    sends = data[data["kind"] == "send"]
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(9, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    has_seq = sends["seq"].notna().any()
    if has_seq and len(sends):
        base = int(sends["seq"].min())
        start = _relative(sends["seq"], base)
        end = start + sends["payload_bytes"].astype("int64")
        retx = sends["retransmission"].fillna(False).astype(bool).to_numpy()
        t = sends["time_ns"].astype("int64") / 1e3
        top.vlines(t[~retx], start[~retx], end[~retx], colors="tab:blue", linewidth=1.5, label="sent")
        if retx.any():
            top.vlines(
                t[retx], start[retx], end[retx], colors="tab:red", linewidth=2.5, label="retransmitted"
            )
        acks = ev[(ev["kind"] == "receive") & (ev["direction"] == "ack") & ev["ack"].notna()]
        if len(acks):
            top.step(
                acks["time_ns"].astype("int64") / 1e3,
                _relative(acks["ack"], base),
                where="post",
                color="tab:green",
                linewidth=1,
                label="ACK received",
            )
        drops = data[data["kind"] == "dropped"]
        if len(drops):
            top.scatter(
                drops["time_ns"].astype("int64") / 1e3,
                _relative(drops["seq"], base),
                marker="x",
                color="black",
                zorder=3,
                label="dropped",
            )
        top.set_ylabel("sequence number (bytes, relative)")
    else:
        t = sends["time_ns"].astype("int64") / 1e3
        top.plot(t, sends["payload_bytes"].astype("int64").cumsum(), ".", label="sent (bytes so far)")
        top.set_ylabel("payload bytes sent")
    for kind, label, colour, style in _TIMERS:
        fired = ev[(ev["kind"] == kind) & (ev["direction"] == "data")]["time_ns"].astype("int64") / 1e3
        for i, t_fired in enumerate(fired):
            for ax in (top, bottom):
                # One legend entry per kind, however often it fired.
                shown = label if i == 0 and ax is top else None
                ax.axvline(t_fired, color=colour, linestyle=style, linewidth=1, label=shown)
    top.set_title(f"flow {flow}: time-sequence diagram")
    legend = top.legend(loc="upper left", fontsize="small")
    # The data sender's state: sampled at its sends, at the ACKs it receives and at its timers.
    at_sender = (ev["kind"] == "receive") == (ev["direction"] == "ack")
    cwnd = ev[at_sender & ev["cwnd_bytes"].notna()]
    if len(cwnd):
        t = cwnd["time_ns"].astype("int64") / 1e3
        bottom.step(t, cwnd["cwnd_bytes"].astype("int64") / 1e3, where="post")
    bottom.set_ylabel("cwnd (KB)")
    bottom.set_xlabel("time (us)")
    fig.tight_layout()
    fig.savefig(stem.with_suffix(".png"), dpi=110)
    fig.savefig(stem.with_suffix(".svg"))
    plt.close(fig)
    return [t.get_text() for t in legend.get_texts()]
