#!/usr/bin/env bash
# What the simulator's memory grows with: peak heap (valgrind massif, live bytes plus allocator
# overhead) of the benchmark binary over runs that vary one thing at a time, and the bytes each
# added host or flow costs (the slope between two runs). The table of docs/performance.md, "Memory".
#
#   scripts/memory.sh
#
# - hosts: benchmark (a)'s fat-tree at k = 4, 8 and 16 carrying a single 1 KB flow (topology, routing
#   tables, per-host state);
# - flows: benchmark (b)'s web-search workload on the k = 8 fat-tree, 500 and 2,000 flows each run to
#   completion (everything a flow keeps until the run ends: its two engines, records, connection).
# Packets in flight are counted from the data structures (docs/performance.md): they come and go with
# the load, and a peak-heap slope would mix them with the arena's doubling.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
cargo build --release -q -p tailcut-sim --bin tailcut-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Peak heap bytes of one run of experiment file $1.
peak() {
    valgrind --tool=massif --massif-out-file="$tmp/massif.out" "${CARGO_TARGET_DIR:-target}"/release/tailcut-bench "$1" >"$tmp/out.txt" 2>"$tmp/err.txt" ||
        { cat "$tmp/err.txt" >&2; exit 1; }
    awk -F= '/^mem_heap_B=/ { h = $2 } /^mem_heap_extra_B=/ { if (h + $2 > m) m = h + $2 } END { print m }' "$tmp/massif.out"
}

hosts_run() { # k
    sed -e "s/^k = .*/k = $1/" -e 's/^max_time = .*/max_time = "1ms"/' -e 's/^fixed = .*/fixed = "1KB"\nflows = 1/' \
        experiments/bench/fat_tree_permutation.toml >"$tmp/hosts$1.toml"
    peak "$tmp/hosts$1.toml"
}

flows_run() { # flows
    sed -e "s/^flows = .*/flows = $1/" -e 's/^max_time = .*/max_time = "10s"/' \
        experiments/bench/fat_tree_websearch.toml >"$tmp/flows$1.toml"
    peak "$tmp/flows$1.toml"
}

h4=$(hosts_run 4)
h8=$(hosts_run 8)
h16=$(hosts_run 16)
f500=$(flows_run 500)
f2000=$(flows_run 2000)
grep -q "flows 2000/2000" "$tmp/out.txt" || echo "WARNING: not every flow of the 2,000-flow run finished" >&2

printf '| run | peak heap |\n|---|---:|\n'
printf '| k = 4 fat-tree (16 hosts, 20 switches), 1 flow | %s B |\n' "$h4"
printf '| k = 8 fat-tree (128 hosts, 80 switches), 1 flow | %s B |\n' "$h8"
printf '| k = 16 fat-tree (1024 hosts, 320 switches), 1 flow | %s B |\n' "$h16"
printf '| k = 8 web-search, 500 flows | %s B |\n' "$f500"
printf '| k = 8 web-search, 2,000 flows | %s B |\n' "$f2000"
echo
echo "per host (k = 8 to k = 16, switches and links included): $(((h16 - h8) / (1024 - 128))) B"
echo "per flow (500 to 2,000 flows, kept to the end of the run): $(((f2000 - f500) / 1500)) B"
