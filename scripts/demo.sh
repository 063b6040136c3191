#!/usr/bin/env bash
# README command 1: sets up the machine, then runs the default pipeline end to end: trace the built-in I/O
# benchmark under dc-trace, build its feature matrix, rank the layers, write the report and print its path.
# Each phase prints its elapsed time, and the last line the total. Needs root (eBPF).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
phase_start=$SECONDS
phase() {
  printf 'demo: %-6s %4d s\n' "$1" $((SECONDS - phase_start)) >&2
  phase_start=$SECONDS
}
scripts/setup.sh
phase setup
cargo build --release -p pipelines --bin dc-pipeline
phase build
target/release/dc-pipeline run pipelines/examples/default.toml --out out/demo "$@"
phase run
printf 'demo: total  %4d s\n' $((SECONDS - start)) >&2
