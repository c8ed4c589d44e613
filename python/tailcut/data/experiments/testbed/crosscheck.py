"""The simulator against real Linux: the cross-check table of docs/testbed.md.

Runs experiments/testbed/loss.toml (1% and 2% random loss), experiments/testbed/incast.toml
(N = 4, 8, 16) and experiments/testbed/mptcp.toml (TCP and MPTCP, one lossy path of three) over
several seeds in four worlds:

- ``sim, paper``: the simulator's ``tcp`` with ``host = "paper"`` (RFC 6675 recovery, RFC 6298 timer:
  the sender before the Linux host rules, docs/tcp.md "Host profiles");
- ``sim``: the simulator's ``tcp`` as the file gives it (host ``linux``, RACK-TLP, no handshake, timers
  at 1 us);
- ``sim, this host``: the same with ``host = "testbed"``, what these hosts do that the file does not
  say (docs/tcp.md, "Host profiles"): the 3-way handshake (a lost SYN or SYN-ACK waits Linux's 1 s),
  timers in HZ = 250 jiffies on the kernel's timer wheel (``timer_hz``: the 5 ms RTO floor is 2
  jiffies and fires 8-12 ms after it is armed), and the agents' measured wake-ups (``host_delay``:
  the write after ``connect``, the read after the last byte). MPTCP, which has no handshake model,
  gets the profile's timers and wake-ups without it;
- ``linux``: the testbed, Linux reno through the emulated fabric (needs root; docs/testbed.md).

Each cell is the median [min-max] over the seeds. Run as root from the repository's root:

    python experiments/testbed/crosscheck.py [--seeds 5] [--out results/crosscheck]

The markdown table goes to stdout and to OUT/crosscheck.md; each run's folder stays under OUT.

For one experiment file in two worlds (the simulator as the file gives it, and the testbed), the
package's ``tailcut crosscheck FILE --seeds N`` (docs/crosscheck.md) makes the general report; this script
keeps the incast round metrics and the four worlds, with that command's cells and timeout counts.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import tailcut
from tailcut import crosscheck, testbed
from tailcut.config import apply_overrides, load_experiment, resolve, to_toml
from tailcut.crosscheck import timeouts_per_100
from tailcut.seeds import spread
from tailcut.summary import percentile

HERE = Path(__file__).resolve().parent
# What these hosts do that the experiment file does not say: the simulator's profile of them.
THIS_HOST = {"host": "testbed"}
WORLDS = ("sim, paper", "sim", "sim, this host", "linux")


def cases() -> list[tuple[str, Path, dict]]:
    out = [(f"loss {p:g}%", HERE / "loss.toml", {"faults.0.model.p": p / 100}) for p in (1, 2)]
    for n in (4, 8, 16):
        senders = list(range(1, n + 1))
        out.append((f"incast N={n}", HERE / "incast.toml", {"workload.0.pattern.senders": senders}))
    out.append(("one lossy path of 3", HERE / "mptcp.toml", {}))
    return out


def run_world(
    world: str, file: Path, overrides: dict, seed: int, out: Path
) -> dict[str, tuple[pd.DataFrame, dict]]:
    """One run: per scheme, its flows, and the kernel counters and fabric quality for a testbed run."""
    config = apply_overrides(load_experiment(file), {**overrides, "seed": seed})
    if world == "linux":
        with tempfile.TemporaryDirectory() as tmp:
            exp = Path(tmp) / file.name
            exp.write_text(to_toml(config))
            # An invalid run is kept and marked in the quality table, not dropped.
            testbed.run_to_dir(exp, out, overwrite=True, allow_invalid_timing=True)
        quality = {q["scheme"]: q for q in json.loads((out / testbed.QUALITY_FILE).read_text())}
        flows = pd.read_parquet(out / "flows.parquet")
    else:
        if world == "sim, paper":
            # The sender before the Linux host rules (docs/tcp.md, "Host profiles"): the "before" rows.
            for scheme in config["schemes"]:
                scheme["params"] = {**scheme.get("params", {}), "host": "paper"}
        if world == "sim, this host":
            for scheme in config["schemes"]:
                # The simulator's MPTCP starts its subflows established: it has no handshake to model.
                host = (
                    THIS_HOST if scheme["transport"] != "mptcp" else testbed_profile_without_handshake(config)
                )
                scheme["params"] = {**scheme.get("params", {}), **host}
        result = tailcut.run(config)
        result.write(out, overwrite=True)
        flows, quality = result.flows, {}
    return {name: (group, quality.get(name, {})) for name, group in flows.groupby("scheme", sort=False)}


def testbed_profile_without_handshake(config: dict) -> dict:
    """The ``testbed`` profile's timers and wake-ups, as the simulator resolves them (one definition,
    in Rust), for a scheme that cannot have its handshake."""
    probe = {**config, "schemes": [{"name": "probe", "transport": "tcp", "params": THIS_HOST}]}
    params = resolve(probe)["schemes"][0]["params"]
    return {"host": "linux", "timer_hz": params["timer_hz"], "host_delay": params["host_delay"]}


def rtos_per_100_flows(flows: pd.DataFrame, quality: dict) -> float:
    """One scheme's whole run: each flow's own count, else (a kernel) the namespaces' TcpExt.TCPTimeouts
    (``tailcut crosscheck``'s rule, docs/crosscheck.md)."""
    return timeouts_per_100(flows, True, quality, {})[0]


def late_ns(flows: pd.DataFrame) -> pd.Series:
    """How late each flow's agent actually started it (0 in the simulator, where nothing is late)."""
    if "start_late_ns" not in flows:
        return pd.Series(0.0, index=flows.index)
    return flows["start_late_ns"].astype(float).fillna(0.0)


def loss_metrics(flows: pd.DataFrame, quality: dict) -> dict[str, float]:
    # From the flow's actual start: an agent thread woken late is the machine, not the network.
    fct = (flows["fct_ns"] - late_ns(flows)).where(flows["completed"].astype(bool)).astype(float) / 1e6
    # docs/metrics.md: nearest rank over every flow, an unfinished one infinitely late.
    finished = fct.dropna().sort_values().to_numpy()
    unfinished = len(fct) - len(finished)
    return {
        "FCT p50 (ms)": percentile(finished, unfinished, 500),
        "FCT p99 (ms)": percentile(finished, unfinished, 990),
        "flows > 20 ms": 100 * float((fct.fillna(float("inf")) > 20).mean()),
        "RTOs per 100 flows": rtos_per_100_flows(flows, quality),
    }


def incast_metrics(flows: pd.DataFrame, quality: dict) -> dict[str, float]:
    """Per round (flows grouped by their start, rounds are 200 ms apart), the last finish minus the
    round's first actual start; unfinished rounds count as infinite."""
    rounds = (flows["start_ns"] // 200_000_000).astype(int)
    done = flows["completed"].astype(bool)
    finish = flows["finish_ns"].where(done).astype(float).fillna(float("inf"))
    start = flows["start_ns"].astype(float) + late_ns(flows)
    per_round = [(finish[rounds == r].max() - start[rounds == r].min()) / 1e6 for r in sorted(set(rounds))]
    finished = sorted(t for t in per_round if t != float("inf"))
    return {
        # docs/metrics.md's nearest rank, an unfinished round infinitely late.
        "round p50 (ms)": percentile(finished, len(per_round) - len(finished), 500),
        "round max (ms)": max(per_round),
        "RTOs per 100 flows": rtos_per_100_flows(flows, quality),
    }


def cell(values: Sequence[float]) -> str:
    """median [min-max] over the seeds, as ``tailcut crosscheck`` prints it."""
    return crosscheck.cell(spread(values))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("results/crosscheck"))
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    lines: list[str] = []
    quality_lines: list[str] = []
    for name, file, overrides in (c for c in cases() if args.only in c[0]):
        metrics = incast_metrics if name.startswith("incast") else loss_metrics
        rows: dict[str, dict[str, list[float]]] = {}
        for world in WORLDS:
            for seed in range(1, args.seeds + 1):
                slug = f"{name}-{world}-{seed}".replace(", ", "_").replace(" ", "_").replace("%", "pct")
                per_scheme = run_world(world, file, overrides, seed, args.out / slug)
                for scheme, (flows, quality) in per_scheme.items():
                    label = world if len(per_scheme) == 1 else f"{scheme}, {world}"
                    for key, value in metrics(flows, quality).items():
                        rows.setdefault(label, {}).setdefault(key, []).append(value)
                    if quality:
                        lat = quality["fabric"]["lateness"]
                        late = late_ns(flows).sort_values().to_numpy()
                        late50, late99 = (percentile(late, 0, q) for q in (500, 990))
                        quality_lines.append(
                            f"| {name}{'' if len(per_scheme) == 1 else ', ' + scheme} | {seed} | "
                            f"{lat['p50_ns'] / 1e3:.3g} | {lat['p99_ns'] / 1e3:.3g} | {lat['max_ns'] / 1e3:.3g} | "
                            f"{late50 / 1e3:.3g} | {late99 / 1e3:.3g} | "
                            f"{quality['tun_tx_drops']} | {quality['fabric_drops']} | "
                            f"{'kept' if quality.get('timing', {}).get('valid', True) else 'INVALID'} |"
                        )
        keys = list(next(iter(rows.values())))
        if not lines or lines[-1] != "":
            lines.append("")
        lines.append(f"| {name} | world | " + " | ".join(keys) + " |")
        lines.append("|---|---|" + "---|" * len(keys))
        for label in sorted(rows, key=lambda lab: (lab.split(", ")[0], lab)) if len(rows) > 3 else rows:
            lines.append(f"| | {label} | " + " | ".join(cell(rows[label][k]) for k in keys) + " |")
        print("\n".join(lines[-(len(rows) + 2) :]), flush=True)
    lines += [
        "",
        "| case | seed | fabric lateness p50 (us) | p99 (us) | max (us) | agent start late p50 (us) | p99 (us) "
        "| TUN drops | fabric drops | timing |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *quality_lines,
    ]
    text = "\n".join(lines).strip() + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "crosscheck.md").write_text(text)
    print("\n".join(lines[-len(quality_lines) - 2 :]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
