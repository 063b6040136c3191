#!/usr/bin/env bash
# Rebuilds the committed eBPF object, tracer/src/bpf/tracer-ebpf.bpfel.o, from tracer-ebpf. Run it after changing
# tracer-ebpf; tracer/tests/it/ebpf_object.rs fails until the committed object matches its source. Needs the eBPF
# toolchain (nightly rust-src and bpf-linker: scripts/setup.sh --test installs them).
# Usage: scripts/build-ebpf.sh [OUTPUT]   (default: the committed object's path)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/tracer/src/bpf/tracer-ebpf.bpfel.o}
TARGET_DIR=${DC_EBPF_TARGET_DIR:-$ROOT/target/ebpf}
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
# The flags aya-build passes, plus path remapping: the object's BTF line info names source files, and it must not
# depend on where the repository or the cargo registry sit. The host's release build keeps no debug info (Cargo.toml);
# the eBPF object and its dependencies (core, aya-ebpf) keep the line tables it was built with, so that the object does
# not change with the host's profile.
sep=$'\x1f'
flags="--cfg=bpf_target_arch=\"x86_64\"${sep}-Cdebuginfo=2${sep}-Clink-arg=--btf"
flags+="${sep}--remap-path-prefix=$ROOT=/datacrumbs${sep}--remap-path-prefix=$CARGO_HOME=/cargo"
cd "$ROOT"
env -u RUSTC -u RUSTC_WORKSPACE_WRAPPER -u RUSTFLAGS CARGO_ENCODED_RUSTFLAGS="$flags" \
  rustup run nightly cargo build --quiet --package tracer-ebpf -Z build-std=core --bins --release \
  --config 'profile.release.debug="line-tables-only"' \
  --config 'profile.release.package."*".debug="line-tables-only"' \
  --target bpfel-unknown-none --target-dir "$TARGET_DIR"
install -m 0644 "$TARGET_DIR/bpfel-unknown-none/release/tracer-ebpf" "$OUT"
