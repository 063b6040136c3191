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
echo "== cargo test's one build: every default member's unit, binary and integration tests"
# One build for every step below, which then runs the binaries it built: a `cargo test -p A -p B` resolves features for
# A and B alone, so each step compiled the workspace and parquet again (four builds, 8 of a cold run's 36 minutes,
# docs/measurements.md, "One test build").
binaries=target/release/test-binaries.tsv
cargo test --release --no-run --lib --bins --tests --message-format=json-render-diagnostics |
  python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        url, _, fragment = m["package_id"].rpartition("#")
        name = fragment.split("@")[0] if "@" in fragment else url.rsplit("/", 1)[-1]
        print(name, m["target"]["name"], m["executable"], os.path.dirname(m["manifest_path"]), sep="\t")
' >"$binaries"
failed=()
# run_tests PACKAGE TARGET: the tests cargo test would run for `-p PACKAGE --lib` (TARGET is the package's own name,
# with - as _), `--bin TARGET` or `--test TARGET`, from the package's directory, as cargo test runs them.
run_tests() {
  local rows
  rows=$(awk -F '\t' -v p="$1" -v t="$2" '$1 == p && $2 == t' "$binaries")
  if [[ -z $rows ]]; then
    echo "test.sh: no test binary $2 of package $1 in $binaries" >&2
    exit 1
  fi
  while IFS=$'\t' read -r _ _ exe dir; do
    echo "== $1 $2 (${exe#"$PWD"/})"
    if ! (cd "$dir" && "$exe"); then
      failed+=("$1 $2")
    fi
  done <<<"$rows"
}
fail_if_failed() {
  if ((${#failed[@]})); then
    printf 'test.sh: failed: %s\n' "${failed[@]}" >&2
    exit 1
  fi
}
echo "== cargo test, what needs no setup: every crate's unit tests and doc tests, features' and models' integration tests, and the two that lower the process's file-size limit"
while IFS=$'\t' read -r package target _ _; do
  if [[ $target != it && $target != full_disk && $target != cgroup ]]; then
    run_tests "$package" "$target"
  fi
done < <(sort -u -t $'\t' -k1,2 "$binaries")
cargo test --release --no-fail-fast --doc
run_tests features it
run_tests models it
run_tests datasets full_disk
fail_if_failed
echo "test.sh: the checks that need no setup passed in $((SECONDS - start)) s; now the machine's setup"
scripts/setup.sh --test
after_setup=$SECONDS
echo "== the circle checker's own tests"
"${DC_VENV:-/opt/datacrumbs-venv}/bin/python" -m pytest -q scripts/test_check_circles.py
echo "== cargo test, the rest: the tracer's, the trace format's, dc-report's and dc-pipeline's integration tests (root, VMs)"
for package in tracer datasets report pipelines; do
  run_tests "$package" it
done
echo "== the tracer's cgroup test, in a process of its own (it interrupts the process it runs in)"
run_tests tracer cgroup
fail_if_failed
echo "== the Debian package: built, installed into a scratch root, each binary run"
scripts/package-deb.sh --check
echo "== pytest (pipelines/python)"
"${DC_VENV:-/opt/datacrumbs-venv}/bin/python" -m pytest -q pipelines/python/tests
echo "test.sh: all checks passed in $((SECONDS - start)) s, $((SECONDS - after_setup)) s of them after setup"
