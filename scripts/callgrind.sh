#!/usr/bin/env bash
# Instructions per packet-hop of benchmark (a), the load-independent speed figure: callgrind counts every
# instruction of a 20 ms version of experiments/bench/fat_tree_permutation.toml (set-up included) and the
# benchmark prints the packet-hops. `release` profile, as the figures in README.md.
#
#   scripts/callgrind.sh [EXPERIMENT.toml [MAX_TIME]]    defaults: benchmark (a), 20ms
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-experiments/bench/fat_tree_permutation.toml}
max_time=${2:-20ms}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
cargo build --release -q -p tailcut-sim --bin tailcut-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s/^max_time = .*/max_time = \"$max_time\"/" "$src" >"$tmp/bench.toml"
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "${CARGO_TARGET_DIR:-target}"/release/tailcut-bench "$tmp/bench.toml" \
    >"$tmp/bench.txt" 2>"$tmp/valgrind.txt"
ir=$(grep -m1 '^summary:' "$tmp/cg.out" | awk '{print $2}')
hops=$(grep -m1 -oE 'hops +[0-9]+' "$tmp/bench.txt" | awk '{print $2}')
echo "$src at $max_time: $ir instructions, $hops packet-hops, $(echo "scale=1; $ir / $hops" | bc) instructions per packet-hop"
