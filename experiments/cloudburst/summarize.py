"""Markdown tables from the cloudburst_report outputs in results/ (docs/results-cloudburst.md).

`python3 experiments/cloudburst/summarize.py`
"""

import re
from pathlib import Path

RES = Path(__file__).parent / "results"
LINE = re.compile(
    r"^(\S+)\s+(\S+)\s+(\S+)\s+done\s+(\d+)/(\d+)\s+p50\s+(\S+)\s+mean\s+(\S+)\s+p99\s+(\S+) ms\s+timeouts\s+(\d+)\s+coding rate\s+(\S+)"
)
BG = re.compile(r"^(\S+)\s+bg\s+(\d+) flows, sending\s+(\S+) Mbps")


def load(name):
    rows, bg = {}, {}
    p = RES / f"{name}.txt"
    if not p.exists():
        return rows, bg
    for line in p.read_text().splitlines():
        m = LINE.match(line)
        if m:
            s, _, size, done, n, p50, mean, p99, to, cr = m.groups()
            rows[(s, size)] = dict(
                done=int(done),
                n=int(n),
                p50=float(p50),
                mean=float(mean),
                p99=float(p99),
                to=int(to),
                cr=float(cr),
            )
        m = BG.match(line)
        if m:
            bg[m.group(1)] = float(m.group(3))
    return rows, bg


def schemes(rows):
    out = []
    for s, _ in rows:
        if s not in out:
            out.append(s)
    return out


SIZES = ["5KB", "10KB", "20KB", "50KB", "93KB", "all"]


def per_size(name, key, title):
    rows, _ = load(name)
    if not rows:
        return
    print(f"\n**{title}** (`{name}`)\n")
    print("| scheme | " + " | ".join(SIZES) + " | done |")
    print("|---" * (len(SIZES) + 2) + "|")
    for s in schemes(rows):
        cells = [f"{rows[(s, z)][key]:.2f}" if (s, z) in rows else "-" for z in SIZES]
        a = rows.get((s, "all"))
        print(f"| {s} | " + " | ".join(cells) + f" | {a['done']}/{a['n']} |")


def main():
    for r in (800, 1600, 2000):
        per_size(f"testbed_{r}", "p99", f"p99 MCT (ms), {r} requests/s")
        per_size(f"testbed_{r}", "p50", f"p50 MCT (ms), {r} requests/s")
    print("\n**Coding rate (sent / source packets) of CloudBurst, per size and rate**\n")
    print("| scheme | rate | " + " | ".join(SIZES) + " |")
    print("|---" * (len(SIZES) + 2) + "|")
    for r in (800, 1600, 2000):
        rows, _ = load(f"testbed_{r}")
        for s in ("cloudburst", "cloudburst_raptorq", "cloudburst_r0.5"):
            if (s, "all") in rows:
                print(f"| {s} | {r} | " + " | ".join(f"{rows[(s, z)]['cr']:.2f}" for z in SIZES) + " |")
    per_size("ablation_2000", "p99", "Ablation, p99 MCT (ms), 2000 requests/s")
    print("\n**Incast: mean / p99 completion time (ms) of 90 KB messages, N concurrent**\n")
    ns = (4, 8, 16, 32, 64)
    first, _ = load("incast_4")
    print("| scheme | " + " | ".join(f"N={n}" for n in ns) + " |")
    print("|---" * (len(ns) + 1) + "|")
    for s in schemes(first):
        cells = []
        for n in ns:
            rows, _ = load(f"incast_{n}")
            a = rows.get((s, "all"))
            cells.append(
                f"{a['mean']:.2f} / {a['p99']:.2f}"
                + ("" if a["done"] == a["n"] else f" ({a['n'] - a['done']} failed)")
                if a
                else "-"
            )
        print(f"| {s} | " + " | ".join(cells) + " |")
    print("\n**Failed paths: p99 MCT (ms) over all sizes, 2000 requests/s**\n")
    first, _ = load("failed_paths_0")
    print("| scheme | " + " | ".join(f"{k} failed" for k in range(4)) + " |")
    print("|---" * 5 + "|")
    for s in schemes(first):
        cells = []
        for k in range(4):
            rows, _ = load(f"failed_paths_{k}")
            a = rows.get((s, "all"))
            cells.append(
                f"{a['p99']:.2f}" + ("" if a["done"] == a["n"] else f" ({a['n'] - a['done']} failed)")
                if a
                else "-"
            )
        print(f"| {s} | " + " | ".join(cells) + " |")
    print("\n**Friendliness: background sending rate (Mbps, 4 flows) and CloudBurst completion %**\n")
    pers = (350, 500, 750, 900, 1000)
    print("| scheme | " + " | ".join(f"{p} r/s ({p * 0.2848:.0f} Mbps)" for p in pers) + " |")
    print("|---" * (len(pers) + 1) + "|")
    first, _ = load("friendliness_350")
    for s in schemes(first):
        cells = []
        for p in pers:
            rows, bg = load(f"friendliness_{p}")
            a = rows.get((s, "all"))
            cells.append(f"{bg.get(s, float('nan')):.0f} / {100 * a['done'] / a['n']:.1f}%" if a else "-")
        print(f"| {s} | " + " | ".join(cells) + " |")
    per_size("leafspine_2000", "p99", "Leaf-spine 144 hosts, p99 MCT (ms)")
    per_size("oversub_2to1", "p99", "2:1 oversubscribed, p99 MCT (ms)")


main()
