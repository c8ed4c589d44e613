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


def load(name):
    rows, shim = {}, {}
    for line in (RES / f"{name}.txt").read_text().splitlines():
        m = LINE.match(line)
        if m:
            rows[m[2]] = dict(done=int(m[3]), n=int(m[4]), mean=float(m[5]) / 1e3, p95=float(m[6]) / 1e3,
                              to=float(m[8]))
        m = SHIM.match(line)
        if m:
            kv = m[3].split()
            shim[m[2]] = {kv[i]: int(kv[i + 1]) for i in range(0, len(kv), 2)}
    return rows, shim


def table(name):
    rows, shim = load(name)
    print(f"\n{name}: small flows (< 100 KB)\n")
    print("| AQM | done | p95 ms | p95 ms +T-RACKs | p95 ratio | mean ms | mean ms +T-RACKs | timeout frac | +T-RACKs | recoveries | spoofed | gave up | spurious |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for aqm in [k for k in rows if "+" not in k]:
        a, b = rows[aqm], rows.get(aqm + "+tracks")
        if b is None:
            continue
        s = shim.get(aqm + "+tracks", {})
        print(f"| {aqm} | {a['done']}/{a['n']} -> {b['done']}/{b['n']} | {a['p95']:.1f} | {b['p95']:.1f} | "
              f"{a['p95'] / b['p95']:.1f}x | {a['mean']:.1f} | {b['mean']:.1f} | {a['to']:.3f} | {b['to']:.3f} | "
              f"{s.get('tracks_recoveries', 0)} | {s.get('tracks_spoofed_acks', 0)} | {s.get('tracks_gave_up', 0)} | "
              f"{s.get('tracks_spurious_recoveries', 0)} |")


def main():
    for f in sorted(RES.glob("*.txt")):
        try:
            table(f.stem)
        except Exception as e:  # a run still in progress or cut short
            print(f"\n{f.stem}: incomplete ({e})")


if __name__ == "__main__":
    main()
