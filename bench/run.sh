#!/usr/bin/env bash
# Measures what mecha promises to be cheap at. Run from anywhere:
#   bash bench/run.sh
# Prints start-up time, peak memory and the size of the tool list the model
# is sent. Figures are for the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p mecha-cli
bin="$PWD/target/release/mecha"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MECHA_HOME="$work/home"
mkdir -p "$MECHA_HOME" "$work/ws"
cd "$work/ws"

runs=200
start=$(date +%s%N)
for _ in $(seq "$runs"); do "$bin" tools --schema >/dev/null; done
end=$(date +%s%N)
echo "start-up (mecha tools --schema, mean of $runs): $(( (end - start) / runs / 1000 )) µs"

rss=$(/usr/bin/time -f %M "$bin" tools --schema 2>&1 >/dev/null | tail -1)
echo "peak memory (mecha tools --schema): ${rss} KB"

echo "tool list sent to the model: $("$bin" tools --schema | wc -c) bytes"
echo "binary size: $(stat -c %s "$bin") bytes"
