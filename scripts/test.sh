#!/usr/bin/env bash
# README command 2: sets up the machine, then runs every check and test. Needs root (eBPF tests load real probes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
start=$SECONDS
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings
echo "== dc-report's crate links neither aya nor the tracer (it builds without the eBPF object, runs without root)"
if ! report_tree=$(cargo tree -p report -e normal --prefix none); then
  echo "test.sh: cargo tree -p report failed" >&2
  exit 1
fi
if grep -E '^(aya|tracer)' <<<"$report_tree" >&2; then
  echo "test.sh: the report crate depends on the crates above (cargo tree -p report -e normal -i CRATE says through what)" >&2
  exit 1
fi
echo "== cargo test"
cargo test --release --no-fail-fast
echo "== the Debian package: built, installed into a scratch root, each binary run"
scripts/package-deb.sh --check
echo "== pytest (pipelines/python)"
"${DC_VENV:-/opt/datacrumbs-venv}/bin/python" -m pytest -q pipelines/python/tests
echo "test.sh: all checks passed in $((SECONDS - start)) s after setup"
