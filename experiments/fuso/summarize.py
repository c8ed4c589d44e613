#!/usr/bin/env python3
"""Markdown tables from experiments/fuso/results/*.txt (fuso_report output), as in docs/results-fuso.md.

python3 experiments/fuso/summarize.py
"""

import re
from pathlib import Path

RES = Path(__file__).parent / "results"
LINE = re.compile(
    # Figures as docs/metrics.md defines them: a p99 among unfinished flows prints as inf, none as NaN.
    r"^(\S+)\s+(\S+)\s+flows\s+(\d+)/(\d+)\s+mean\s+(\S+) ms\s+p99\s+(\S+) ms\s+timeout frac (\S+)\s+"
    r"extra (\S+)(?:\s+rounds (\d+)/(\d+) completion mean ([\d.]+) ms max ([\d.]+) ms)?"
)


def load(name):
    rows = {}
    path = RES / f"{name}.txt"
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if m:
            rows[m[2]] = dict(
                done=int(m[3]),
                n=int(m[4]),
                mean=float(m[5]),
                p99=float(m[6]),
                to=float(m[7]),
                extra=float(m[8]),
                rounds=m[11] and float(m[11]),
                rmax=m[12] and float(m[12]),
            )
    return rows


def sweep(title, files, labels, schemes, metrics):
    print(f"\n{title}\n")
    for key, head, fmt in metrics:
        print(f"{head}\n")
        print("| " + " | ".join(["point", *schemes]) + " |")
        print("|---" * (len(schemes) + 1) + "|")
        for f, label in zip(files, labels, strict=False):
            r = load(f)
            if not r:
                continue
            cells = [fmt.format(r[s][key]) if s in r else "-" for s in schemes]
            print(f"| {label} | " + " | ".join(cells) + " |")
        print()


def main():
    rates = ["0p125", "0p25", "0p5", "1", "2", "4"]
    labels = ["0.125%", "0.25%", "0.5%", "1%", "2%", "4%"]
    tb = ["tcp", "tlp", "mptcp", "repflow", "proactive", "fuso"]
    m = [
        ("p99", "p99 FCT (ms)", "{:.2f}"),
        ("to", "timeout fraction", "{:.4f}"),
        ("extra", "extra load", "{:.2f}"),
    ]
    sweep("Network loss (P1)", [f"net_loss_{r}" for r in rates], labels, tb, m)
    sweep("Edge loss (H4-H6 access links)", [f"edge_loss_{r}" for r in rates], labels, tb, m)
    loads = [10, 30, 50, 70, 90]
    sweep(
        "Failure + congestion (2% on P1)",
        [f"fail_cong_{x}" for x in loads],
        [f"{x / 100}" for x in loads],
        ["tcp", "tlp", "mptcp", "fuso"],
        [
            ("mean", "mean FCT (ms)", "{:.2f}"),
            ("p99", "p99 FCT (ms)", "{:.2f}"),
            ("to", "timeout fraction", "{:.4f}"),
            ("extra", "extra load", "{:.2f}"),
        ],
    )
    fan = [5, 10, 20, 30, 40, 50, 60, 70]
    sweep(
        "Incast",
        [f"incast_{n}" for n in fan],
        [str(n) for n in fan],
        tb,
        [
            ("rounds", "round completion, mean (ms)", "{:.1f}"),
            ("rmax", "round completion, worst (ms)", "{:.1f}"),
            ("to", "timeout fraction", "{:.3f}"),
        ],
    )
    r = load("subflows_2")
    if r:
        print("\nSub-flow count (2% on P1)\n")
        print("| sub-flows | MPTCP p99 (ms) | FUSO p99 (ms) | MPTCP timeout frac | FUSO timeout frac |")
        print("|---|---|---|---|---|")
        for n in (1, 2, 4, 8):
            a, b = r[f"mptcp_{n}"], r[f"fuso_{n}"]
            print(f"| {n} | {a['p99']:.2f} | {b['p99']:.2f} | {a['to']:.4f} | {b['to']:.4f} |")
    for w in ("websearch", "datamining"):
        r = load(f"fattree_{w}_50")
        if r:
            print(f"\nFat-tree, {w}, load 0.5\n")
            print("| scheme | done | mean FCT (ms) | p99 FCT (ms) | timeout frac | extra load |")
            print("|---|---|---|---|---|---|")
            for s, x in r.items():
                print(
                    f"| {s} | {x['done']}/{x['n']} | {x['mean']:.2f} | {x['p99']:.2f} | {x['to']:.4f} | {x['extra']:.2f} |"
                )


if __name__ == "__main__":
    main()
