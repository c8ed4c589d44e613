#!/bin/sh
# Runs every FUSO experiment file and keeps the report of each in experiments/fuso/results/.
#   sh experiments/fuso/run_all.sh      (from the repository root; builds the report example first)
set -e
cargo build --release -p tailcut-sim --example fuso_report
for f in experiments/fuso/net_*.toml experiments/fuso/edge_*.toml experiments/fuso/subflows_*.toml \
         experiments/fuso/incast_*.toml experiments/fuso/fail_cong_*.toml experiments/fuso/fattree_*.toml; do
    n=$(basename "$f" .toml)
    ./target/release/examples/fuso_report "$f" > "experiments/fuso/results/$n.txt"
done
