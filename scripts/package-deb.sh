#!/usr/bin/env bash
# Builds a Debian package of the dc-* binaries, for users who only want the tool:
#   scripts/package-deb.sh            writes target/debian/datacrumbs_VERSION_ARCH.deb and prints its path
#   scripts/package-deb.sh --check    also installs it with dpkg into a scratch root (whose empty dpkg database lacks
#                                     libc6, hence --force-depends there) and runs each binary's --version
# dpkg-deb (Debian's own packager) writes it; the package is only a file list and a control file, so cargo-deb, with
# its own build to install first, would add minutes to CI for nothing more.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BINS=(dc-trace dc-features dc-model dc-pipeline dc-report)
cargo build --release --quiet -p tracer --bin dc-trace -p features --bin dc-features -p models --bin dc-model \
  -p pipelines --bin dc-pipeline -p report --bin dc-report
VERSION=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="tracer"))')
ARCH=$(dpkg --print-architecture)
STAGE=$ROOT/target/debian/datacrumbs_${VERSION}_$ARCH
DEB=$STAGE.deb
rm -rf "$STAGE"
install -d "$STAGE/DEBIAN" "$STAGE/usr/bin" "$STAGE/usr/share/doc/datacrumbs"
for b in "${BINS[@]}"; do
  install -m 0755 -s "target/release/$b" "$STAGE/usr/bin/$b"
done
install -m 0644 README.md "$STAGE/usr/share/doc/datacrumbs/README.md"
cat >"$STAGE/DEBIAN/control" <<CONTROL
Package: datacrumbs
Version: $VERSION
Architecture: $ARCH
Maintainer: datacrumbs developers <datacrumbs@localhost>
Depends: libc6 (>= 2.36)
Section: utils
Priority: optional
Description: multi-layer eBPF I/O profiler and analysis pipeline
 dc-trace records every I/O call of a workload at every layer of the storage stack with eBPF;
 dc-features builds a per-call feature matrix; dc-model ranks each layer's features against bandwidth;
 dc-pipeline and dc-report tie them together into a report.
CONTROL
dpkg-deb --root-owner-group --build "$STAGE" "$DEB" >/dev/null
echo "$DEB"
if [ "${1:-}" = "--check" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  install -d "$scratch/var/lib/dpkg/info" "$scratch/var/lib/dpkg/updates"
  touch "$scratch/var/lib/dpkg/status"
  dpkg --root="$scratch" --force-not-root --force-script-chrootless --force-depends --log=/dev/null -i "$DEB" \
    >/dev/null 2>"$scratch/dpkg.err" || { cat "$scratch/dpkg.err" >&2; exit 1; }
  for b in "${BINS[@]}"; do
    v=$("$scratch/usr/bin/$b" --version)
    if [ "$v" != "$b $VERSION" ]; then
      echo "package-deb: the installed $b printed '$v' for --version, not '$b $VERSION'" >&2
      exit 1
    fi
    echo "$v"
  done
fi
