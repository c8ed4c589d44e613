#!/usr/bin/env bash
# Checks that a change leaves every result table as it was: runs experiment files through
# tailcut-flowdigest and compares each scheme's digest (flow and port records, all fields) with the
# recorded ones in tests/identity/digests.txt.
#
#   scripts/identity.sh check [FILE.toml...]    compare with the recorded digests (default: every file listed there)
#   scripts/identity.sh record FILE.toml...     (re)record the digests of these files
#
# To locate a difference, dump the records of one file from both builds and diff them:
#   target/release/tailcut-flowdigest --dump DIR FILE.toml
set -euo pipefail
cd "$(dirname "$0")/.."
db=tests/identity/digests.txt
bin=${CARGO_TARGET_DIR:-target}/release/tailcut-flowdigest
build() { cargo build --release -q -p tailcut-sim --bin tailcut-flowdigest; }

case "${1:-}" in
record)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 record FILE.toml..." >&2; exit 2; }
    build
    mkdir -p "$(dirname "$db")"
    touch "$db"
    new=$(mktemp)
    printf '%s\n' "$@" | xargs -P "${JOBS:-2}" -n 1 "$bin" >"$new" || {
        echo "FAIL: a file did not run"
        exit 1
    }
    # Keep the lines of files not re-recorded, replace the others, keep the file sorted.
    { awk 'NR == FNR { redo[$1]; next } !($1 in redo)' "$new" "$db"; cat "$new"; } | sort >"$db.tmp"
    mv "$db.tmp" "$db"
    echo "recorded $(wc -l <"$new") scheme digests of $# files into $db"
    rm -f "$new"
    ;;
check)
    shift
    build
    if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(cut -d' ' -f1 "$db" | sort -u); fi
    # Files run in parallel (JOBS, default 2); a full check takes ~6 min of CPU.
    got=$(printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-2}" -n 1 "$bin" | sort) || {
        echo "FAIL: a file did not run"
        exit 1
    }
    want=$(printf '%s\n' "${files[@]}" | awk 'NR == FNR { keep[$1]; next } $1 in keep' - "$db" | sort)
    if [ "$got" == "$want" ]; then
        echo "identical: ${#files[@]} files, $(echo "$got" | wc -l) scheme tables"
    else
        echo "results changed (< recorded, > now):"
        diff <(echo "$want") <(echo "$got") || true
        exit 1
    fi
    ;;
*)
    echo "usage: $0 check [FILE.toml...] | record FILE.toml..." >&2
    exit 2
    ;;
esac
