#!/usr/bin/env bash
# Runs the test steps again and again, optionally with every core kept busy, and counts failures:
# the evidence that a test holds on any machine, not only on a quiet one (issue #44).
#
#   scripts/soak.sh [--runs N] [--hog] [--only timing] [--log DIR]
#
# --runs N       repetitions (default 20)
# --hog          a busy loop on every core for the whole soak (as a loaded CI machine would be)
# --only timing  only the suites that depend on scheduling: tailcut-net, the testbed's and the T-RACKs
#                agent's real-network tests, and the Python runtime tests (default: all of
#                `cargo test --workspace --release` and `pytest tests/python`)
# --log DIR      where each failing run's output is kept (default target/soak)
#
# Build first (`make test` once, or `cargo test --workspace --release --no-run`): a run here does not
# count build time. Prints one line per run and a summary; exits 1 if any run failed.
set -u
runs=20
hog=0
only=all
log=target/soak
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --hog) hog=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --log) log="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--hog] [--only timing] [--log DIR]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
mkdir -p "$log"
py=.venv/bin/pytest

hogs=()
stop_hogs() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
}
trap stop_hogs EXIT
if [ "$hog" = 1 ]; then
  for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    hogs+=("$!")
  done
fi

one_run() {
  export TAILCUT_REQUIRE_REALNET=1
  if [ "$only" = timing ]; then
    cargo test --release -p tailcut-net &&
      cargo test --release -p tailcut-testbed --test realnet &&
      cargo test --release -p tailcut-tracksd --test realnet &&
      "$py" -q tests/python/test_net.py
  else
    cargo test --workspace --release && "$py" -q tests/python
  fi
}

failed=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  out="$log/run-$i.log"
  if one_run >"$out" 2>&1; then
    echo "run $i/$runs: pass ($(($(date +%s) - start)) s)"
    rm -f "$out"
  else
    failed=$((failed + 1))
    echo "run $i/$runs: FAIL ($(($(date +%s) - start)) s), log $out:"
    grep -E "^test .* FAILED|panicked at|^FAILED|^ERROR" "$out" | head -10 | sed 's/^/    /'
  fi
done
echo "soak: $((runs - failed))/$runs passed (hog=$hog, only=$only)"
[ "$failed" = 0 ]
