#!/usr/bin/env bash
# Takes a fresh Debian 12 machine of this project's kind to one that runs the demo (no argument: tracefs, nothing
# else; the Rust toolchain is preinstalled and the eBPF object is committed); with --toolchain to one that runs
# scripts/test.sh's first stage (cargo fmt, clippy, the circle check, the tests that need no setup); or with --test to
# one that builds and tests everything (the VMs' kernels, the oracles, the eBPF toolchain, the Python package).
# Idempotent: every step checks whether its work is already done, so a second run takes seconds.
set -euo pipefail

log() { printf 'setup: %s\n' "$*" >&2; }

mount_tracefs() {
  if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
    log "mounting tracefs"
    mount -t tracefs nodev /sys/kernel/tracing || log "tracefs mount failed; the tracer will retry and report"
  fi
}

# cargo fmt and clippy: rustup's components (a minimal profile leaves them out); the circle check: python3.
toolchain() {
  local installed
  if ! command -v cargo >/dev/null 2>&1 || ! command -v rustup >/dev/null 2>&1; then
    log "cargo and rustup are missing: install Rust (https://rustup.rs) first; this project's machines have it"
    exit 1
  fi
  installed=$(rustup component list --installed)
  for c in rustfmt clippy; do
    if ! grep -q "^$c" <<<"$installed"; then
      log "installing the $c component"
      rustup component add "$c"
    fi
  done
  command -v python3 >/dev/null 2>&1 || { log "python3 is missing (Debian 12 has it)"; exit 1; }
  log "cargo, rustfmt, clippy, python3: present"
}

case "${1:-}" in
  "") mount_tracefs; log "ready to run the demo"; exit 0 ;;
  --toolchain) toolchain; mount_tracefs; log "ready for the first stage of scripts/test.sh"; exit 0 ;;
  --test) toolchain ;;
  *) log "unknown argument '$1' (expected nothing, --toolchain or --test)"; exit 2 ;;
esac

APT_PACKAGES=(
  bpftrace          # independent oracle for syscall counts in tracer tests
  fio               # external workload example in pipelines; tracer/tests/it/calls.rs traces its io_uring engine
  fio-examples      # fio's own job files (/usr/share/doc/fio/examples): pipelines/examples/fio-examples.toml
  rocksdb-tools     # db_bench: pipelines/examples/rocksdb.toml, pipelines/scenarios/db_bench-sync.toml
  sqlite3           # sqlite's sync per commit: pipelines/tests/it/diagnose_trace.rs, pipelines/scenarios/sqlite-sync-per-commit.toml
  postgresql        # initdb, pg_ctl, postgres: pipelines/examples/pgbench.toml
  postgresql-contrib # pgbench
  qemu-system-x86   # kernel test VM (kprobe/fentry on a second kernel)
  linux-image-amd64 # the second kernel
  busybox-static    # initramfs userland for the VM
  cpio              # initramfs packing
  e2fsprogs         # mkfs.ext4 for the VM's disk image
  binutils          # objcopy --strip-debug for the VM initramfs
  python3-venv      # isolated environment for dftracer-utils
  chromium          # headless browser that loads dc-report's page in pipelines tests
  libcap2-bin       # setcap: tracer/tests/it/caps.rs gives a copy of dc-trace capabilities
  python3-torch     # PyTorch 1.13 for DLIO's data loader (pipelines/examples/dlio-unet3d.toml)
  isal              # igzip -d: the inflate floor features/benches/build.rs prints beside zcat
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages: present"
fi

# The VM's second kernel: Debian 12's 6.12 has CONFIG_FPROBE (kprobe_multi links), which 6.1 lacks;
# its modules are .ko.xz, which the VM's initramfs gets decompressed by xz.
if [ "$(dpkg-query -W -f='${Status}\n' linux-image-6.12-amd64 xz-utils 2>/dev/null |
  grep -c 'install ok installed')" = 2 ]; then
  log "kernel 6.12 for the VM: present"
else
  log "installing the kernel 6.12 for the VM (linux-image-6.12-amd64, xz-utils)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends linux-image-6.12-amd64 xz-utils >/dev/null
fi

# The eBPF toolchain: tracer/tests/it/ebpf_object.rs rebuilds the committed object from tracer-ebpf with it.
if ! grep -q '^rust-src' <<<"$(rustup component list --toolchain nightly --installed 2>/dev/null || true)"; then
  log "installing nightly rust-src"
  rustup component add rust-src --toolchain nightly
else
  log "nightly rust-src: present"
fi

if ! command -v bpf-linker >/dev/null 2>&1; then
  log "building bpf-linker against Rust's own LLVM 22 (about 3 minutes)"
  SR=$(rustc --print sysroot)
  P=$HOME/.cache/rust-llvm
  mkdir -p "$P/lib64"
  ln -sf "$SR"/lib/libLLVM-22-rust-*-stable.so "$P/lib64/libLLVM.so"
  ln -sf "$SR"/lib/libLLVM.so.22.1-rust-*-stable "$P/lib64/"
  # Pinned: the committed eBPF object is checked byte for byte against what this linker builds.
  LLVM_PREFIX=$P cargo install --locked bpf-linker --version 0.13.0 --no-default-features --features llvm-22
else
  log "bpf-linker: present"
fi

VENV=${DC_VENV:-/opt/datacrumbs-venv}
if [ ! -x "$VENV/bin/dftracer_validate" ]; then
  log "installing dftracer-utils into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q dftracer-utils
else
  log "dftracer-utils: present"
fi

# PyDarshan (its wheel bundles libdarshan-util): the oracle of datasets/reference/darshan_fixtures.py.
if ! "$VENV/bin/python" -c "import darshan" 2>/dev/null; then
  log "installing PyDarshan into $VENV"
  "$VENV/bin/pip" install -q darshan
else
  log "PyDarshan: present"
fi

# Drishti, the oracle of pipelines/python/drishti_parity.py (reads Darshan logs through PyDarshan, above).
# grep -q stops reading early, and under pipefail the writer's broken pipe would fail the test (and reinstall every
# run): here and above, the whole output is read first.
if ! grep -qx 'Version: 0.8' <<<"$("$VENV/bin/pip" show drishti-io 2>/dev/null || true)"; then
  log "installing drishti-io 0.8 into $VENV"
  "$VENV/bin/pip" install -q drishti-io==0.8
else
  log "drishti-io: present"
fi

# pyarrow: datasets/reference/kernmlops_fixtures.py writes KernMLOps' Parquet tables with it.
if ! "$VENV/bin/python" -c "import pyarrow" 2>/dev/null; then
  log "installing pyarrow into $VENV"
  "$VENV/bin/pip" install -q pyarrow
else
  log "pyarrow: present"
fi

if ! "$VENV/bin/python" -c 'import lightgbm, sklearn, scipy' 2>/dev/null; then
  log "installing LightGBM and scikit-learn into $VENV (dc-model's reference script and benchmark, datacrumbs.dask.rank)"
  "$VENV/bin/pip" install -q lightgbm scikit-learn scipy numpy
else
  log "LightGBM, scikit-learn: present"
fi

# The Python package (pipelines/python) into the same venv, with what its tests and notebook use. It is rebuilt when
# its sources or those of the crates it calls change: the venv keeps a hash of them.
PY_TEST_PACKAGES=(pytest nbclient ipykernel "dask[dataframe,distributed]" pandas polars duckdb matplotlib)
if ! "$VENV/bin/python" -c "import pytest, nbclient, ipykernel, dask.dataframe, distributed, polars, duckdb, matplotlib" 2>/dev/null; then
  log "installing the Python test packages into $VENV"
  "$VENV/bin/pip" install -q "${PY_TEST_PACKAGES[@]}"
else
  log "Python test packages: present"
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY_STAMP="$VENV/.datacrumbs-python.sha256"
py_sources_hash() {
  cd "$ROOT" &&
    git ls-files -coz --exclude-standard -- Cargo.toml Cargo.lock datasets features models pipelines/python |
    while IFS= read -r -d '' f; do [ ! -f "$f" ] || sha256sum "$f"; done | sha256sum | cut -d' ' -f1
}
py_hash=$(py_sources_hash)
if [ "$(cat "$PY_STAMP" 2>/dev/null)" != "$py_hash" ]; then
  log "building and installing the datacrumbs Python package into $VENV"
  "$VENV/bin/pip" install -q "$ROOT/pipelines/python"
  echo "$py_hash" >"$PY_STAMP"
else
  log "datacrumbs Python package: up to date"
fi

# DLIO 2.0.0 (pipelines/examples/dlio-unet3d.toml) in its own venv. Its wheel requires tensorflow, torch >= 2.2 and
# DALI, so it goes in without dependencies, beside what a PyTorch run imports (pip then warns about the ones left
# out). Debian's torch 1.13 comes in through --system-site-packages, so numpy stays Debian's 1.24.2 (that torch is
# built against numpy 1.x); DLIO imports tensorflow at start even for PyTorch, which an empty package satisfies.
# DFTracer releases after 1.0.2 record nothing under DLIO 2.0.0.
DLIO_VENV=${DC_DLIO_VENV:-/opt/datacrumbs-dlio}
DLIO_PACKAGES=(hydra-core==1.3.8 omegaconf==2.3.1 mpi4py==4.1.2 mpich==5.0.2 pandas==2.2.3 numpy==1.24.2
  psutil==5.9.8 pillow==13.0.0 pyyaml==6.0 pydftracer==1.0.2)
dlio_stamp="dlio-benchmark==2.0.0 ${DLIO_PACKAGES[*]}"
if [ "$(cat "$DLIO_VENV/.datacrumbs-dlio" 2>/dev/null)" != "$dlio_stamp" ]; then
  log "installing DLIO 2.0.0 and DFTracer 1.0.2 into $DLIO_VENV"
  /usr/bin/python3 -m venv --system-site-packages "$DLIO_VENV"
  "$DLIO_VENV/bin/pip" install -q --no-deps dlio-benchmark==2.0.0
  "$DLIO_VENV/bin/pip" install -q "${DLIO_PACKAGES[@]}"
  site=$("$DLIO_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  mkdir -p "$site/tensorflow"
  : >"$site/tensorflow/__init__.py"
  echo "$dlio_stamp" >"$DLIO_VENV/.datacrumbs-dlio"
else
  log "DLIO: present"
fi

mount_tracefs
log "ready to test"
