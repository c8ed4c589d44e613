#!/usr/bin/env python3
"""The figures of docs/results.md, drawn from the checked-in raw outputs of the reproduced experiments.

    python3 docs/figures/make_figures.py      # needs matplotlib (installed with tailcut)

Each paper's folder under experiments/ keeps its raw outputs in results/ and a summarize.py that parses
them; this script reuses those parsers, so a figure always shows the numbers the tables show.
"""

import contextlib
import importlib.util
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def summarizer(paper):
    path = ROOT / "experiments" / paper / "summarize.py"
    spec = importlib.util.spec_from_file_location(f"summarize_{paper}", path)
    mod = importlib.util.module_from_spec(spec)
    # Some summarizers print their tables when loaded; the figures need only their parsers.
    with contextlib.redirect_stdout(io.StringIO()):
        spec.loader.exec_module(mod)
    return mod


def save(fig, name):
    fig.tight_layout()
    fig.savefig(OUT / name, dpi=110)
    plt.close(fig)
    print(f"wrote docs/figures/{name}")


LOSSES = ["0p125", "0p25", "0p5", "1", "2", "4"]


def fuso_loss(prefix, title, name):
    s = summarizer("fuso")
    schemes = ["tcp", "tlp", "mptcp", "repflow", "proactive", "fuso"]
    x = [float(v.replace("p", ".")) for v in LOSSES]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for sch in schemes:
        rows = [s.load(f"{prefix}_{v}").get(sch) for v in LOSSES]
        if not all(rows):
            continue
        a.plot(x, [r["p99"] for r in rows], marker="o", label=sch)
        b.plot(x, [100 * r["to"] for r in rows], marker="o", label=sch)
    for ax, ylabel in ((a, "p99 FCT of queries (ms)"), (b, "flows with a timeout (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel("random loss rate (%)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    a.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    save(fig, name)


def cloudburst_testbed():
    s = summarizer("cloudburst")
    rates = [800, 1600, 2000]
    loaded = [s.load(f"testbed_{r}")[0] for r in rates]
    names = sorted({k[0] for rows in loaded for k in rows if k[1] == "all"})
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for sch in names:
        ys = [rows.get((sch, "all"), {}).get("p99") for rows in loaded]
        if all(y is not None for y in ys):
            ax.plot(rates, ys, marker="o", label=sch)
    ax.set_yscale("log")
    ax.set_xlabel("requests / s (whole testbed)")
    ax.set_ylabel("p99 message completion (ms)")
    ax.set_xticks(rates)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("CloudBurst Sec. V-B: 4-path testbed with background DCTCP", fontsize=10)
    save(fig, "cloudburst_testbed.png")


def tracks_alpha():
    s = summarizer("tracks")
    alphas = [1, 5, 10, 50, 100]
    loaded = [s.load(f"alpha_{a}")[0] for a in alphas]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for sch in sorted(loaded[0]):
        ys = [rows.get(sch, {}).get("mean") for rows in loaded]
        if all(y is not None for y in ys):
            ax.plot(alphas, ys, marker="o", label=sch, linestyle="-" if "tracks" in sch else ":")
    ax.set_xscale("log")
    ax.set_xticks(alphas, [str(a) for a in alphas])
    ax.set_xlabel("alpha (beta = alpha x RTT + rand(RTT))")
    ax.set_ylabel("mean FCT of small flows (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("T-RACKs Sec. V-C: sensitivity to alpha (dotted: without T-RACKs)", fontsize=10)
    save(fig, "tracks_alpha.png")


def main():
    fuso_loss("net_loss", "FUSO Sec. 5.2.1: random loss on one of three paths", "fuso_net_loss.png")
    fuso_loss("edge_loss", "FUSO Sec. 5.2.1: random loss on the clients' access links", "fuso_edge_loss.png")
    cloudburst_testbed()
    tracks_alpha()


if __name__ == "__main__":
    main()
