#!/usr/bin/env bash
# mecha's benchmark: the release binary against the mock model server
# (mecha-mock-model, on 127.0.0.1; nothing leaves the machine). Run from
# anywhere:
#   bash bench/run.sh [--runs 30] [--rounds 100] [--repeat 3]
# Measures start-up to the first model request, peak memory, the first
# request's size (Anthropic and OpenAI), harness CPU per tool round, four
# `sleep 1` calls in one turn, start-up with 10/100/1,000 skills, what
# bwrap adds to a shell call, and showing and resuming a 10,000-message
# session, the TUI's CPU while a long answer streams and its memory after
# 500 turns, and
# prints them against the targets, plus a
# table to paste into the README. A missed target is not an error; the exit
# status is non-zero only when something could not be measured.
# Needs Python 3.11 (stdlib only). See bench/bench.py for the method.
set -euo pipefail
cd "$(dirname "$0")/.."
# Two builds, not one `-p mecha-cli -p mecha-testkit`: together, cargo would
# unify features and give `mecha` the mock's hyper server; apart, `mecha` is
# exactly what `cargo install` builds. Both stay cached, so no rebuild churn.
cargo build --release -q -p mecha-cli
cargo build --release -q -p mecha-testkit
exec python3 bench/bench.py \
    --mecha "$PWD/target/release/mecha" \
    --mock "$PWD/target/release/mecha-mock-model" "$@"
