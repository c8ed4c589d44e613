#!/usr/bin/env python3
"""The figures of docs/results.md, drawn from the JSON pages of ``tailcut reproduce``.

    tailcut reproduce all --seeds 5 --out results/reproduce
    python3 docs/figures/make_figures.py [--from results/reproduce]   # needs matplotlib

Each line is the median over the seeds and the shaded band the range (min to max), so a figure shows
the numbers the tables show and how much they move between seeds. A figure whose page is missing is
skipped with a message.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from tailcut.reproduce.render import from_json

OUT = Path(__file__).resolve().parent
LOSSES = ["0p125", "0p25", "0p5", "1", "2", "4"]


def load(folder: Path, paper: str) -> dict | None:
    path = folder / f"{paper}.json"
    if not path.exists():
        print(f"skipped {paper}: no {path} (run tailcut reproduce {paper})", file=sys.stderr)
        return None
    document = from_json(path.read_text())
    return {e["label"]: e for g in document["groups"] for e in g["entries"]}, document["seeds"]


def figure(entries: dict, labels: list[str], part: str, scheme: str, metric: str, scale: float = 1.0):
    """Median, min and max of one metric of one row across entries; None when any point is missing."""
    med, low, high = [], [], []
    for label in labels:
        rows = [
            r for r in entries.get(label, {}).get("rows", []) if r["part"] == part and r["scheme"] == scheme
        ]
        stats = rows[0]["metrics"].get(metric) if rows else None
        if not stats or stats["median"] is None:
            return None
        med.append(stats["median"] * scale)
        low.append(stats["min"] * scale)
        high.append(stats["max"] * scale)
    return med, low, high


def band(ax, x, series, label, **style):
    med, low, high = series
    (line,) = ax.plot(x, med, marker="o", label=label, **style)
    if any(a != b for a, b in zip(low, high, strict=True)):
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15, linewidth=0)


def save(fig, name: str) -> None:
    fig.tight_layout()
    fig.savefig(OUT / name, dpi=110)
    plt.close(fig)
    print(f"wrote {OUT / name}")


def fuso_loss(folder: Path, prefix: str, title: str, name: str) -> None:
    loaded = load(folder, "fuso")
    if loaded is None:
        return
    entries, seeds = loaded
    labels = [f"{prefix}_{v}" for v in LOSSES]
    x = [float(v.replace("p", ".")) for v in LOSSES]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for scheme in ["tcp", "tlp", "mptcp", "repflow", "proactive", "fuso"]:
        p99 = figure(entries, labels, "queries", scheme, "p99_ms")
        timeouts = figure(entries, labels, "queries", scheme, "timeout_fraction", 100)
        if p99 is None or timeouts is None or any(math.isinf(v) for v in p99[2]):
            continue
        band(a, x, p99, scheme)
        band(b, x, timeouts, scheme)
    for ax, ylabel in ((a, "p99 FCT of queries (ms)"), (b, "flows with a timeout (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel("random loss rate (%)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    a.legend(fontsize=8)
    fig.suptitle(f"{title} (median, band: range over {seeds} seeds)", fontsize=10)
    save(fig, name)


def cloudburst_testbed(folder: Path) -> None:
    loaded = load(folder, "cloudburst")
    if loaded is None:
        return
    entries, seeds = loaded
    rates = [800, 1600, 2000]
    labels = [f"testbed_{r}" for r in rates]
    schemes = list(dict.fromkeys(r["scheme"] for r in entries.get(labels[0], {}).get("rows", [])))
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for scheme in schemes:
        series = figure(entries, labels, "rr all", scheme, "p99_ms")
        if series is not None and not any(math.isinf(v) for v in series[2]):
            band(ax, rates, series, scheme)
    ax.set_yscale("log")
    ax.set_xlabel("requests / s (whole testbed)")
    ax.set_ylabel("p99 message completion (ms)")
    ax.set_xticks(rates)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"CloudBurst Sec. V-B: 4-path testbed (band: {seeds} seeds)", fontsize=10)
    save(fig, "cloudburst_testbed.png")


def tracks_alpha(folder: Path) -> None:
    loaded = load(folder, "tracks")
    if loaded is None:
        return
    entries, seeds = loaded
    alphas = [1, 5, 10, 50, 100]
    labels = [f"alpha_{a}" for a in alphas]
    schemes = list(dict.fromkeys(r["scheme"] for r in entries.get(labels[0], {}).get("rows", [])))
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for scheme in schemes:
        series = figure(entries, labels, "small", scheme, "mean_ms")
        if series is not None:
            band(ax, alphas, series, scheme, linestyle="-" if "tracks" in scheme else ":")
    ax.set_xscale("log")
    ax.set_xticks(alphas, [str(a) for a in alphas])
    ax.set_xlabel("alpha (beta = alpha x RTT + rand(RTT))")
    ax.set_ylabel("mean FCT of small flows (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"T-RACKs Sec. V-C: alpha (dotted: without T-RACKs; band: {seeds} seeds)", fontsize=10)
    save(fig, "tracks_alpha.png")


def main() -> None:
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="folder", type=Path, default=Path("results/reproduce"))
    parser.add_argument("--to", type=Path, default=OUT, help="where the PNGs go (default: docs/figures)")
    args = parser.parse_args()
    OUT, folder = args.to, args.folder
    fuso_loss(folder, "net_loss", "FUSO Sec. 5.2.1: random loss on one of three paths", "fuso_net_loss.png")
    fuso_loss(folder, "edge_loss", "FUSO Sec. 5.2.1: loss on the clients' access links", "fuso_edge_loss.png")
    cloudburst_testbed(folder)
    tracks_alpha(folder)


if __name__ == "__main__":
    main()
