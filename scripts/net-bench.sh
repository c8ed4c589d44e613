#!/usr/bin/env bash
# RPC latency and CPU of every runtime scheme beside kernel TCP (and kernel TCP + TLS 1.3) on loopback
# (docs/net.md, "Loopback benchmark"): closed loop, one call outstanding, echo, COUNT calls after 200
# warm-up calls, latency seen by the calling application thread, CPU per call of the whole process
# (both ends). Each row runs RUNS times (5 by default) and gives the median [min-max] over the runs of
# each figure. Prints markdown. SECTIONS picks the tables (all by default): rpc (100 B to 1 MB),
# bulk (one 16 MB flow), poisson (open loop), fresh (a new connection per call), loss.
#
#   scripts/net-bench.sh [COUNT] [RUNS] [SECTIONS...]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-2000}
runs=${2:-5}
shift $(($# < 2 ? $# : 2))
sections=${*:-rpc bulk poisson fresh loss}
on() { [[ " $sections " == *" $1 "* ]]; }
cargo build --release -q -p tailcut-net
bin=${CARGO_TARGET_DIR:-target}/release/tailcut-net
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One figure's median [min-max] over the runs, from a column of numbers.
stat() {
    # "inf" is a call that never completed (an open loop's timeouts); it sorts last.
    sort -g | awk 'function f(x) { return (x ~ /inf/) ? "inf" : sprintf("%.1f", x) }
        { v[NR] = $1 } END {
        if (NR == 0) { print "-"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : ((v[NR / 2 + 1] ~ /inf/) ? "inf" : (v[NR / 2] + v[NR / 2 + 1]) / 2)
        printf "%s [%s-%s]", f(m), f(v[1]), f(v[NR]) }'
}

row() { # size label args...
    local size=$1 label=$2
    shift 2
    local n=$count
    # 1 MB calls take milliseconds each; fewer of them keep a row to seconds. A bulk call (16 MB,
    # the stream schemes' largest message) takes tens: 20 of them.
    [ "$size" = 1MB ] && n=$((count / 10))
    [ "$size" = 16MB ] && n=20
    : >"$tmp/r"
    for _ in $(seq "$runs"); do
        local out
        out=$("$bin" bench --size "$size" --count "$n" "$@" 2>&1) || {
            echo "| $size | $label | failed: $(echo "$out" | tail -1) |"
            return
        }
        echo "$out" | awk '/^cpu per call/ { cpu = $NF }
            /^call \((application|arrival)/ {
                for (i = 1; i < NF; i++) { if ($i == "p50") p50 = $(i + 1); if ($i == "p99") p99 = $(i + 1); if ($i == "p99.9") p999 = $(i + 1) }
                print p50, p99, p999, cpu }' >>"$tmp/r"
    done
    printf '| %s | %s | %s | %s | %s | %s |\n' "$size" "$label" \
        "$(cut -d' ' -f1 "$tmp/r" | stat)" "$(cut -d' ' -f2 "$tmp/r" | stat)" \
        "$(cut -d' ' -f3 "$tmp/r" | stat)" "$(cut -d' ' -f4 "$tmp/r" | stat)"
}

echo "| Size | Stack | p50 us | p99 us | p99.9 us | CPU us per call |"
echo "|---|---|---|---|---|---|"
if on rpc; then
    for size in 100B 10KB 100KB 1MB; do
        row "$size" "kernel TCP" --scheme kernel-tcp
        row "$size" "kernel TCP + TLS 1.3" --scheme kernel-tls
        # The runtime's sockets with no engine: what any stack over UDP pays (docs/net.md).
        row "$size" "udp floor" --scheme udp-floor
        row "$size" "tcp over UDP" --scheme tcp
        row "$size" "mptcp, 4 sub-flows" --scheme mptcp
        row "$size" "fuso, 4 sub-flows" --scheme fuso
        row "$size" "cloudburst" --scheme cloudburst
        row "$size" "cloudburst, RaptorQ" --scheme cloudburst --param codec=raptorq
        row "$size" "dcquic" --scheme dcquic
    done
fi
# One bulk flow: a 16 MB echo (the stream schemes' largest message; CloudBurst's are smaller), one
# call at a time: goodput is 32 MB per call over its time.
if on bulk; then
    row 16MB "kernel TCP" --scheme kernel-tcp --warmup 2
    row 16MB "kernel TCP + TLS 1.3" --scheme kernel-tls --warmup 2
    row 16MB "udp floor" --scheme udp-floor --warmup 2
    row 16MB "tcp over UDP" --scheme tcp --warmup 2
    row 16MB "fuso, 4 sub-flows" --scheme fuso --warmup 2
    row 16MB "dcquic" --scheme dcquic --warmup 2
fi
# Open loop: 10 KB calls arriving as a Poisson process at 2,000/s (kernel TCP's closed loop runs
# ~15,000/s here), over 16 threads; latency from each arrival, queueing included.
if on poisson; then
    row 10KB "kernel TCP, Poisson 2000/s" --scheme kernel-tcp --poisson 2000
    row 10KB "tcp over UDP, Poisson 2000/s" --scheme tcp --poisson 2000
    row 10KB "mptcp, Poisson 2000/s" --scheme mptcp --poisson 2000
    row 10KB "fuso, Poisson 2000/s" --scheme fuso --poisson 2000
    row 10KB "cloudburst, Poisson 2000/s" --scheme cloudburst --poisson 2000
    row 10KB "dcquic, Poisson 2000/s" --scheme dcquic --poisson 2000
fi
# A fresh connection for every call: set-up included. The kernel's opens a new socket with the TLS
# configuration it has; DCQUIC's a new connection on its client's runtime thread and sockets
# (`Client::reconnect`), and "fresh client" a new client too (thread, sockets, configuration).
if on fresh; then
    row 10KB "kernel TCP + TLS 1.3, fresh" --scheme kernel-tls --fresh
    row 10KB "dcquic, fresh" --scheme dcquic --fresh
    row 10KB "dcquic, fresh client" --scheme dcquic --fresh-client
fi
# With loss (the runtime's seeded send hook on each side; kernel TCP with loss needs the testbed).
if on loss; then
    for size in 100B 10KB 100KB; do
        row "$size" "tcp over UDP, 1% loss" --scheme tcp --loss 0.01
        row "$size" "mptcp, 1% loss on path 0 of 4" --scheme mptcp --loss 0.01 --loss-path 0
        row "$size" "fuso, 1% loss on path 0 of 4" --scheme fuso --loss 0.01 --loss-path 0
        row "$size" "cloudburst, 1% loss on path 0 of 4" --scheme cloudburst --loss 0.01 --loss-path 0
    done
fi
