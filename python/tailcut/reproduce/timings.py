"""The seconds per seed that ``tailcut reproduce --list`` shows before anything has run here.

``timings.json`` beside this module is written by ``python -m tailcut.reproduce.timings OUT`` from the
runs a ``tailcut reproduce ... --seeds 1 --out OUT`` recorded (wall time of the whole run folder write,
on the machine it ran on); entries without such a run keep their earlier value. Nothing is estimated:
an entry that never ran shows as not measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TIMINGS = Path(__file__).with_name("timings.json")


def measured(out: Path) -> dict[str, float]:
    """``paper/label`` -> mean wall seconds of the runs recorded under ``OUT/runs``."""
    walls: dict[str, list[float]] = {}
    for info in sorted((out / "runs").glob("*/*/seed=*.json")):
        try:
            seconds = float(json.loads(info.read_text())["wall_seconds"])
        except (OSError, ValueError, KeyError):
            continue
        walls.setdefault(f"{info.parent.parent.name}/{info.parent.name}", []).append(seconds)
    return {key: round(sum(v) / len(v), 2) for key, v in walls.items()}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tailcut.reproduce.timings OUT NOTE", file=sys.stderr)
        return 2
    out, note = Path(argv[0]), argv[1]
    shipped = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    seconds = shipped.get("seconds", {})
    sources = shipped.get("sources", {})
    for key, value in measured(out).items():
        seconds[key] = value
        sources[key] = note
    document = {"seconds": dict(sorted(seconds.items())), "sources": dict(sorted(sources.items()))}
    TIMINGS.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{TIMINGS}: {len(seconds)} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
