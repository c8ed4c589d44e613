#!/usr/bin/env python3
"""Markdown tables from experiments/tracks/results/*.txt (tailcut-bench output).

python3 experiments/tracks/summarize.py
"""

import re
from pathlib import Path

RES = Path(__file__).parent / "results"
LINE = re.compile(
    r"^(\S+)\s+(\S+)\s+<100KB\s+flows (\d+)/(\d+)\s+mean FCT\s+([\d.]+) us\s+p95 FCT\s+([\d.]+) us\s+"
    r"p99 FCT\s+([\d.]+) us\s+timeout frac ([\d.]+)"
)
SHIM = re.compile(r"^(\S+)\s+(\S+)\s+shim\s+(.*)$")
ALL = re.compile(r"^(\S+)\s+(\S+)\s+all\s+flows (\d+)/(\d+)\s+mean FCT\s+([\d.]+) us")


def load(name, all_flows=None):
    rows, shim = {}, {}
    for line in (RES / f"{name}.txt").read_text().splitlines():
        m = ALL.match(line)
        if m and all_flows is not None:
            all_flows[m[2]] = float(m[5]) / 1e3
        m = LINE.match(line)
        if m:
            rows[m[2]] = dict(
                done=int(m[3]), n=int(m[4]), mean=float(m[5]) / 1e3, p95=float(m[6]) / 1e3, to=float(m[8])
            )
        m = SHIM.match(line)
        if m:
            kv = m[3].split()
            shim[m[2]] = {kv[i]: int(kv[i + 1]) for i in range(0, len(kv), 2)}
    return rows, shim


def table(name):
    rows, shim = load(name)
    print(f"\n{name}: small flows (< 100 KB)\n")
    print(
        "| AQM | done | p95 ms | p95 ms +T-RACKs | p95 ratio | mean ms | mean ms +T-RACKs | timeout frac | +T-RACKs | recoveries | spoofed | gave up | spurious |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for aqm in [k for k in rows if "+" not in k]:
        a, b = rows[aqm], rows.get(aqm + "+tracks")
        if b is None:
            continue
        s = shim.get(aqm + "+tracks", {})
        print(
            f"| {aqm} | {a['done']}/{a['n']} -> {b['done']}/{b['n']} | {a['p95']:.1f} | {b['p95']:.1f} | "
            f"{a['p95'] / b['p95']:.1f}x | {a['mean']:.1f} | {b['mean']:.1f} | {a['to']:.3f} | {b['to']:.3f} | "
            f"{s.get('tracks_recoveries', 0)} | {s.get('tracks_spoofed_acks', 0)} | {s.get('tracks_gave_up', 0)} | "
            f"{s.get('tracks_spurious_recoveries', 0)} |"
        )


def all_flow_means(prefix):
    """Mean FCT of all flows, without -> with T-RACKs, one row per load (spine-leaf files)."""
    files = sorted(RES.glob(f"{prefix}_[0-9]*.txt"))
    if not files:
        return
    print(f"\n{prefix}: mean FCT of all flows (ms), without -> with T-RACKs\n")
    print("| load | drop-tail | random drop | RED-ECN | DCTCP |")
    print("|---|---|---|---|---|")
    for f in files:
        means = {}
        load(f.stem, means)
        cells = []
        for aqm in ("droptail", "droprand", "red_ecn", "dctcp"):
            a, b = means.get(aqm), means.get(aqm + "+tracks")
            cells.append(f"{a:.1f} -> {b:.1f}" if a is not None and b is not None else "-")
        print(f"| {f.stem.rsplit('_', 1)[1]}% | " + " | ".join(cells) + " |")


def main():
    for prefix in ("spine_leaf", "spine_leaf_dm", "spine_leaf_sack"):
        all_flow_means(prefix)
    for f in sorted(RES.glob("*.txt")):
        try:
            table(f.stem)
        except Exception as e:  # a run still in progress or cut short
            print(f"\n{f.stem}: incomplete ({e})")


if __name__ == "__main__":
    main()
