#!/usr/bin/env bash
# What the bwrap sandbox adds to one shell call (target: under 5 ms), and
# what its start-up probe costs. Alternates a confined and an unconfined
# `bash -c true`, spawned and awaited as the shell tool does (posix_spawn
# for the confined one), confine_program() included, and prints medians.
# Needs bubblewrap. Run from anywhere:
#   bash bench/sandbox.sh [runs, default 200]
# With an image after the runs, the docker backend instead (a container
# per call, its removal included), e.g. the engine tests' mecha-test:local:
#   bash bench/sandbox.sh 10 mecha-test:local
# With --allow-hosts, what `[sandbox] allow_hosts` costs instead: per
# request through the proxy (target: at most 1 ms on loopback), per
# command start, and per request from inside through bridge and proxy:
#   bash bench/sandbox.sh --allow-hosts [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --allow-hosts ]]; then
    shift
    cargo build --release -q -p mecha-cli
    exec cargo run --release -q -p mecha-sandbox --example allow_overhead -- \
        target/release/mecha "$@"
fi
exec cargo run --release -q -p mecha-sandbox --example overhead -- "$@"
