#!/usr/bin/env bash
# RPC latency of every scheme over tailcut-net beside kernel TCP on loopback (docs/net.md, "Loopback
# benchmark"): closed loop, one call outstanding, echo, 2000 calls after 200 warm-up calls, latency
# seen by the calling application thread. Prints one markdown row per (size, stack, loss).
#
#   scripts/net-bench.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-2000}
cargo build --release -q -p tailcut-net
bin=target/release/tailcut-net
row() { # size label args...
    local size=$1 label=$2
    shift 2
    local out
    out=$("$bin" bench --size "$size" --count "$count" "$@" 2>&1) || { echo "| $size | $label | failed: $out |"; return; }
    echo "$out" | awk -v s="$size" -v l="$label" '/^call/ { printf "| %s | %s | %s | %s | %s |\n", s, l, $6, $8, $10 }'
}
echo "| Size | Stack | p50 us | p99 us | p99.9 us |"
echo "|---|---|---|---|---|"
for size in 100B 10KB 100KB; do
    cb=()
    [ "$size" = 100KB ] && cb=(--param symbol_bytes=8952)
    row "$size" "kernel TCP" --scheme kernel-tcp
    row "$size" "tcp over UDP" --scheme tcp
    row "$size" "tcp over UDP, 1% loss" --scheme tcp --loss 0.01
    row "$size" "mptcp, 4 sub-flows" --scheme mptcp
    row "$size" "mptcp, 1% loss on path 0 of 4" --scheme mptcp --loss 0.01 --loss-path 0
    row "$size" "fuso, 4 sub-flows" --scheme fuso
    row "$size" "fuso, 1% loss on path 0 of 4" --scheme fuso --loss 0.01 --loss-path 0
    row "$size" "cloudburst" --scheme cloudburst "${cb[@]}"
    row "$size" "cloudburst, 1% loss on path 0 of 4" --scheme cloudburst "${cb[@]}" --loss 0.01 --loss-path 0
done
