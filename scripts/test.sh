#!/usr/bin/env bash
# README command 2: every check and test. The ones that need no setup run first, so that a mistake fails in minutes:
# fmt, the import circles, clippy, dc-report's dependencies and the tests that need neither root nor the test machine's
# packages. Then the machine is set up for the rest, as root (the eBPF tests load real probes; the VM tests boot
# kernels under QEMU).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/setup.sh --toolchain
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== import circles"
python3 scripts/check-circles.py
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
echo "== cargo test, what needs no setup: every crate's unit tests and doc tests, features' and models' integration tests, and the two that lower the process's file-size limit"
cargo test --release --no-fail-fast --lib --bins
cargo test --release --no-fail-fast --doc
cargo test --release --no-fail-fast -p features -p models --test it
cargo test --release --no-fail-fast -p datasets --test full_disk
echo "test.sh: the checks that need no setup passed in $((SECONDS - start)) s; now the machine's setup"
scripts/setup.sh --test
after_setup=$SECONDS
echo "== the circle checker's own tests"
"${DC_VENV:-/opt/datacrumbs-venv}/bin/python" -m pytest -q scripts/test_check_circles.py
echo "== cargo test, the rest: the tracer's, the trace format's, dc-report's and dc-pipeline's integration tests (root, VMs)"
cargo test --release --no-fail-fast -p tracer -p datasets -p report -p pipelines --test it
echo "== the tracer's cgroup test, in a process of its own (it interrupts the process it runs in)"
cargo test --release --no-fail-fast -p tracer --test cgroup
echo "== the Debian package: built, installed into a scratch root, each binary run"
scripts/package-deb.sh --check
echo "== pytest (pipelines/python)"
"${DC_VENV:-/opt/datacrumbs-venv}/bin/python" -m pytest -q pipelines/python/tests
echo "test.sh: all checks passed in $((SECONDS - start)) s, $((SECONDS - after_setup)) s of them after setup"
