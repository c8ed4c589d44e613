#!/usr/bin/env bash
# Where the instructions per packet-hop of benchmark (a) go, by layer: runs the same callgrind
# measurement as scripts/callgrind.sh, keeps its output (target/profile/cg.out, for callgrind_annotate)
# and prints the breakdown table of docs/performance.md.
#
#   scripts/profile.sh [EXPERIMENT.toml [MAX_TIME]]    defaults: benchmark (a), 20ms
#
# Each line of code is charged to the layer of its source file, whatever function it was inlined into;
# standard-library code (Vec, slice indexing, heap) goes to the layer of the function it was inlined
# into, so the "event loop" row also holds library code inlined into `Sim::run` on behalf of the rows
# above it (mostly the port driver's and the arena's bounds checks).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-experiments/bench/fat_tree_permutation.toml}
max_time=${2:-20ms}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
cargo build --release -q -p tailcut-sim --bin tailcut-bench
out=target/profile
mkdir -p "$out"
sed "s/^max_time = .*/max_time = \"$max_time\"/" "$src" >"$out/bench.toml"
valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" "${CARGO_TARGET_DIR:-target}"/release/tailcut-bench "$out/bench.toml" \
    >"$out/bench.txt" 2>"$out/valgrind.txt"
hops=$(grep -m1 -oE 'hops +[0-9]+' "$out/bench.txt" | awk '{print $2}')
callgrind_annotate --threshold=100 --auto=no "$out/cg.out" 2>/dev/null | python3 scripts/profile_layers.py "$hops"
echo "$src at $max_time, $hops packet-hops; callgrind output in $out/cg.out"
