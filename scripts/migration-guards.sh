#!/usr/bin/env bash
# DCQUIC's migration guards on the testbed migration experiment (docs/dcquic.md, "Migration guards"):
# experiments/crosscheck/dcquic_migration.toml for seeds 1..SEEDS, each seed one testbed run of
# dctcp_reconnect (the paper's baseline), DCQUIC with the paper's rule, and DCQUIC with each guard set
# below. With HOG > 0, that many busy loops run beside the testbed at the same priority: host jitter
# on purpose (the guards exist for it). Prints one markdown row per seed: mean / p99 TCT in ms and the
# migrations (DCQUIC) or reconnections (TCP) of each scheme, and the fabric's lateness p99 in each
# scheme's run (no run on a 2-core machine keeps its timing; a late fabric is a slow path). As root.
#
#   sudo scripts/migration-guards.sh [SEEDS] [HOG]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}
hog=${2:-0}
cargo build --release -q -p tailcut-testbed -p tailcut-sim
bin=${CARGO_TARGET_DIR:-target}/release/tailcut-testbed
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d)
hogs=()
cleanup() {
    for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# The guard sets: name and the `migration` table of DCQUIC's params.
guards='{
  "paper": {},
  "min_stall+hold_down": {"min_stall": "10ms", "hold_down": "2s"},
  "exclude_host_delay+hold_down": {"exclude_host_delay": true, "hold_down": "2s"}
}'

# One experiment file per seed: the cross-check file with its topology path made absolute, without
# the never-reconnecting dctcp, and DCQUIC once per guard set.
"$py" - "$tmp" "$seeds" "$guards" <<'PY'
import json, sys, tomllib, tomli_w
from pathlib import Path
out, seeds, guards = Path(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
src = Path("experiments/crosscheck/dcquic_migration.toml")
base = tomllib.loads(src.read_text())
base["topology"]["path"] = str((src.parent / base["topology"]["path"]).resolve())
tcp = [s for s in base["schemes"] if s["name"] == "dctcp_reconnect"]
quic = [
    {"name": f"dcquic_{name}", "transport": "dcquic", "params": {"migration": m}} if m
    else {"name": "dcquic_paper", "transport": "dcquic"}
    for name, m in guards.items()
]
for seed in range(1, seeds + 1):
    exp = dict(base, seed=seed, schemes=tcp + quic)
    (out / f"seed-{seed}.toml").write_text(tomli_w.dumps(exp))
PY

for _ in $(seq "$hog"); do
    (while :; do :; done) &
    hogs+=($!)
done

names=$("$py" -c "import json,sys; print(' '.join(['dctcp_reconnect'] + ['dcquic_' + k for k in json.loads(sys.argv[1])]))" "$guards")
echo "| seed | $(echo "$names" | sed 's/ / | /g') | fabric lateness p99, us |"
echo "|---$(for _ in $names; do printf '|---'; done)|---|"
for seed in $(seq "$seeds"); do
    "$bin" run "$tmp/seed-$seed.toml" --out "$tmp/out-$seed" --allow-invalid-timing >"$tmp/log-$seed" 2>&1 || {
        echo "| $seed | failed: $(tail -1 "$tmp/log-$seed") |"
        continue
    }
    "$py" - "$tmp/out-$seed/testbed.json" "$seed" $names <<'PY'
import json, sys
runs = {r["scheme"]: r for r in json.load(open(sys.argv[1]))}
cells = []
for name in sys.argv[3:]:
    r = runs[name]
    moved = r.get("migrations") if r.get("migrations") is not None else r.get("reconnects")
    done = "" if r["completed"] == r["flows"] else f", {r['flows'] - r['completed']} unfinished"
    cells.append(f"{r['fct_mean_ns'] / 1e6:.1f} / {r['fct_p99_ns'] / 1e6:.1f} ({moved}{done})")
# How late the emulated fabric forwarded (each scheme's run): a late fabric is a slow path, whatever
# its cause, and the run does not keep its timing.
late = " / ".join(f"{runs[n]['timing']['lateness_p99_ns'] / 1e3:.0f}" for n in sys.argv[3:])
print(f"| {sys.argv[2]} | " + " | ".join(cells) + f" | {late} |")
PY
done
