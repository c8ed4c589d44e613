#!/usr/bin/env bash
# DCQUIC over tailcut-net beside TLS 1.3 over kernel TCP (rustls, the same certificate kind) on
# loopback (docs/dcquic.md, "On real sockets"): closed loop, one call outstanding, echo, every echo
# checked. "persistent": COUNT calls on one connection after 200 warm-up calls; "fresh": a new
# connection per call (FRESH calls after 20 warm-up), set-up included, and the handshake alone.
# Prints one markdown row per (size, stack, mode) with p50 / p99 in microseconds.
#
#   scripts/dcquic-bench.sh [COUNT] [FRESH]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-2000}
fresh=${2:-300}
cargo build --release -q -p tailcut-net
bin=${CARGO_TARGET_DIR:-target}/release/tailcut-net
row() { # size label args...
    local size=$1 label=$2
    shift 2
    local out
    out=$("$bin" bench --size "$size" "$@" 2>/dev/null) || { echo "| $size | $label | failed |"; return; }
    echo "$out" | awk -v s="$size" -v l="$label" '
        function q(name,   i) { for (i = 1; i < NF; i++) if ($i == name) return $(i + 1) }
        /^handshake|^TCP connect/ { h50 = q("p50"); h99 = q("p99") }
        /^call/ { c50 = q("p50"); c99 = q("p99") }
        END { printf "| %s | %s | %s | %s | %s | %s |\n", s, l, h50 ? h50 : "-", h99 ? h99 : "-", c50, c99 }'
}
echo "| Size | Stack, mode | handshake p50 us | handshake p99 us | call p50 us | call p99 us |"
echo "|---|---|---|---|---|---|"
for size in 10KB 100KB; do
    row "$size" "DCQUIC, persistent" --scheme dcquic --count "$count"
    row "$size" "kernel TCP + TLS 1.3, persistent" --scheme kernel-tls --count "$count"
    row "$size" "kernel TCP (no TLS), persistent" --scheme kernel-tcp --count "$count"
    row "$size" "DCQUIC, fresh connection (on one client)" --scheme dcquic --fresh --count "$fresh" --warmup 20
    row "$size" "DCQUIC, fresh client" --scheme dcquic --fresh-client --count "$fresh" --warmup 20
    row "$size" "kernel TCP + TLS 1.3, fresh connection" --scheme kernel-tls --fresh --count "$fresh" --warmup 20
done
