#!/usr/bin/env bash
# RPC latency and CPU of every runtime scheme beside kernel TCP (and kernel TCP + TLS 1.3) on loopback
# (docs/net.md, "Loopback benchmark"): closed loop, one call outstanding, echo, COUNT calls after 200
# warm-up calls, latency seen by the calling application thread, CPU per call of the whole process
# (both ends). Each row runs RUNS times (5 by default) and gives the median [min-max] over the runs of
# each figure. Prints markdown.
#
#   scripts/net-bench.sh [COUNT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-2000}
runs=${2:-5}
cargo build --release -q -p tailcut-net
bin=target/release/tailcut-net
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One figure's median [min-max] over the runs, from a column of numbers.
stat() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.1f [%.1f-%.1f]", m, v[1], v[NR] }'
}

row() { # size label args...
    local size=$1 label=$2
    shift 2
    local n=$count
    # 1 MB calls take milliseconds each; fewer of them keep a row to seconds.
    [ "$size" = 1MB ] && n=$((count / 10))
    : >"$tmp/r"
    for _ in $(seq "$runs"); do
        local out
        out=$("$bin" bench --size "$size" --count "$n" "$@" 2>&1) || {
            echo "| $size | $label | failed: $(echo "$out" | tail -1) |"
            return
        }
        echo "$out" | awk '/^cpu per call/ { cpu = $NF } /^call \(application/ { print $6, $8, $10, cpu }' >>"$tmp/r"
    done
    printf '| %s | %s | %s | %s | %s | %s |\n' "$size" "$label" \
        "$(cut -d' ' -f1 "$tmp/r" | stat)" "$(cut -d' ' -f2 "$tmp/r" | stat)" \
        "$(cut -d' ' -f3 "$tmp/r" | stat)" "$(cut -d' ' -f4 "$tmp/r" | stat)"
}

echo "| Size | Stack | p50 us | p99 us | p99.9 us | CPU us per call |"
echo "|---|---|---|---|---|---|"
for size in 100B 10KB 100KB 1MB; do
    row "$size" "kernel TCP" --scheme kernel-tcp
    row "$size" "kernel TCP + TLS 1.3" --scheme kernel-tls
    row "$size" "tcp over UDP" --scheme tcp
    row "$size" "mptcp, 4 sub-flows" --scheme mptcp
    row "$size" "fuso, 4 sub-flows" --scheme fuso
    row "$size" "cloudburst" --scheme cloudburst
    row "$size" "cloudburst, RaptorQ" --scheme cloudburst --param codec=raptorq
    row "$size" "dcquic" --scheme dcquic
done
# A fresh connection for every call: set-up included.
row 10KB "kernel TCP + TLS 1.3, fresh" --scheme kernel-tls --fresh
row 10KB "dcquic, fresh" --scheme dcquic --fresh
# With loss (the runtime's seeded send hook on each side; kernel TCP with loss needs the testbed).
for size in 100B 10KB 100KB; do
    row "$size" "tcp over UDP, 1% loss" --scheme tcp --loss 0.01
    row "$size" "mptcp, 1% loss on path 0 of 4" --scheme mptcp --loss 0.01 --loss-path 0
    row "$size" "fuso, 1% loss on path 0 of 4" --scheme fuso --loss 0.01 --loss-path 0
    row "$size" "cloudburst, 1% loss on path 0 of 4" --scheme cloudburst --loss 0.01 --loss-path 0
done
