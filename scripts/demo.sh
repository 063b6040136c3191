#!/usr/bin/env bash
# README command 1: sets up the machine, then runs the default pipeline end to end: trace the built-in I/O
# benchmark under dc-trace, build its feature matrix, rank the layers, write the report and print its path.
# Needs root (eBPF).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --bins
exec target/release/dc-pipeline run pipelines/examples/default.toml --out out/demo "$@"
