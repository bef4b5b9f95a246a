#!/usr/bin/env bash
# The cost of a workspace checkpoint (issue 31's target: an incremental
# checkpoint of 10,000 files in <= 50 ms, only changed content added).
# Builds the example in release and runs it in a temporary directory:
#   bash bench/checkpoint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p mecha-checkpoint --example checkpoint_bench
