#!/usr/bin/env bash
# Issue #41: the speed-up bound of a conservative parallel engine, measured on a sequential run
# (tailcut-partition; docs/performance.md, "Parallel speed-up bound (issue #41)").
#
#   scripts/partition-bound.sh identity [FILE.toml...]   counted runs give the recorded digests
#                                                         (tests/identity/digests.txt; default: six files;
#                                                         `$(cut -d' ' -f1 tests/identity/digests.txt | sort -u)`
#                                                         for all of them)
#   scripts/partition-bound.sh table [OUT_DIR]            the docs' table: benchmarks (c), (d), (d) at
#                                                         20 ms and the k = 32 web-search file, one after
#                                                         the other (~25 min on the 2-core VM; perf profile)
#   scripts/partition-bound.sh callgrind                 instructions per packet-hop of benchmark (a), as
#                                                         scripts/callgrind.sh, from $CARGO_TARGET_DIR
#
# Builds go to $CARGO_TARGET_DIR (default target/), unlike scripts/identity.sh and callgrind.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
tgt=${CARGO_TARGET_DIR:-target}
db=tests/identity/digests.txt
maps=pod,pod+core,leaf,4

case "${1:-}" in
identity)
    shift
    cargo build --release -q -p tailcut-sim --bin tailcut-partition
    if [ $# -gt 0 ]; then files=("$@"); else
        files=(experiments/bench/fat_tree_permutation.toml experiments/cp/outcast.toml
            experiments/cloudburst/leafspine_core_failed.toml experiments/tracks/case1_20.toml
            experiments/dcquic/migration.toml experiments/baselines/replicated_dctcp.toml)
    fi
    got=$(printf '%s\n' "${files[@]}" |
        xargs -P "${JOBS:-2}" -n 1 "$tgt/release/tailcut-partition" --digest --quiet --partitions "$maps" | sort) || {
        echo "FAIL: a file did not run"
        exit 1
    }
    want=$(printf '%s\n' "${files[@]}" | awk 'NR == FNR { keep[$1]; next } $1 in keep' - "$db" | sort)
    if [ -z "$want" ]; then
        echo "no recorded digests for these files in $db" >&2
        exit 2
    fi
    if [ "$got" == "$want" ]; then
        echo "identical with the partition count on ($maps): ${#files[@]} files, $(echo "$got" | wc -l) scheme tables"
    else
        echo "results changed (< recorded, > counted):"
        diff <(echo "$want") <(echo "$got") || true
        exit 1
    fi
    ;;
table)
    out=${2:-partition-bound}
    mkdir -p "$out"
    cargo build --profile perf -q -p tailcut-sim --bin tailcut-partition
    bin=$tgt/perf/tailcut-partition
    "$bin" --markdown --partitions pod,pod+core,32,64,128 experiments/bench/fat_tree16_permutation.toml \
        >"$out/c.txt" 2>"$out/c.err"
    "$bin" --markdown --partitions pod,pod+core,32,64,128 experiments/bench/fat_tree16_websearch.toml \
        >"$out/d.txt" 2>"$out/d.err"
    # (d) cut to its first 20 ms, the k = 32 file's length.
    sed 's/^max_time = .*/max_time = "20ms"/; s/^until = .*/until = "20ms"/' \
        experiments/bench/fat_tree16_websearch.toml >"$out/d20.toml"
    "$bin" --markdown --partitions pod,pod+core,32,64,128 "$out/d20.toml" >"$out/d20.txt" 2>"$out/d20.err"
    # At k = 32, 32 parts are the pods.
    "$bin" --markdown --partitions pod,pod+core,64,128 experiments/bench/fat_tree32_websearch.toml \
        >"$out/k32.txt" 2>"$out/k32.err"
    cat "$out"/c.txt "$out"/d.txt "$out"/d20.txt "$out"/k32.txt
    ;;
callgrind)
    command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
    cargo build --release -q -p tailcut-sim --bin tailcut-bench
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    sed 's/^max_time = .*/max_time = "20ms"/' experiments/bench/fat_tree_permutation.toml >"$tmp/bench.toml"
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$tgt/release/tailcut-bench" "$tmp/bench.toml" \
        >"$tmp/bench.txt" 2>"$tmp/valgrind.txt"
    ir=$(grep -m1 '^summary:' "$tmp/cg.out" | awk '{print $2}')
    hops=$(grep -m1 -oE 'hops +[0-9]+' "$tmp/bench.txt" | awk '{print $2}')
    echo "benchmark (a) at 20ms: $ir instructions, $hops packet-hops, $(echo "scale=2; $ir / $hops" | bc) instructions per packet-hop"
    ;;
*)
    echo "usage: $0 identity [FILE.toml...] | table [OUT_DIR] | callgrind" >&2
    exit 2
    ;;
esac
