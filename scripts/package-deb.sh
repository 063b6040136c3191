#!/usr/bin/env bash
# Builds a Debian package of the dc-* binaries, for users who only want the tool:
#   scripts/package-deb.sh            writes target/debian/datacrumbs_VERSION_ARCH.deb and prints its path
#   scripts/package-deb.sh --check    also installs it with dpkg into a scratch root (whose empty dpkg database lacks
#                                     libc6, hence --force-depends there), runs each binary's --version and checks
#                                     that each binary's man page is installed and renders
# The man pages (one per binary and one per subcommand) are written from the binaries' clap definitions by
# scripts/manpages, and installed gzipped under usr/share/man/man1, so `man dc-report` works once it is installed.
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
MAN=$STAGE/usr/share/man/man1
install -d "$STAGE/DEBIAN" "$STAGE/usr/bin" "$STAGE/usr/share/doc/datacrumbs" "$MAN"
for b in "${BINS[@]}"; do
  install -m 0755 -s "target/release/$b" "$STAGE/usr/bin/$b"
done
install -m 0644 README.md "$STAGE/usr/share/doc/datacrumbs/README.md"
find docs -name '*.md' -exec install -D -m 0644 {} "$STAGE/usr/share/doc/datacrumbs/{}" \;
cargo run --release --quiet -p manpages -- "$MAN"
chmod 0644 "$MAN"/*.1
gzip -9n "$MAN"/*.1
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
  listing=$(dpkg-deb -c "$DEB")
  for b in "${BINS[@]}"; do
    v=$("$scratch/usr/bin/$b" --version)
    if [ "$v" != "$b $VERSION" ]; then
      echo "package-deb: the installed $b printed '$v' for --version, not '$b $VERSION'" >&2
      exit 1
    fi
    echo "$v"
    page=usr/share/man/man1/$b.1.gz
    if ! grep -q " \./$page\$" <<<"$listing"; then
      echo "package-deb: $DEB holds no man page $page" >&2
      exit 1
    fi
    roff=$(zcat "$scratch/$page")
    if ! grep -q "^\.TH $b " <<<"$roff"; then
      echo "package-deb: the installed $page is not the man page of $b" >&2
      exit 1
    fi
    if command -v man >/dev/null; then
      rendered=$(MANWIDTH=80 man -l "$scratch/$page" 2>&1) || true
      if ! grep -q "^NAME" <<<"$rendered"; then
        echo "package-deb: the installed $page does not render with man: $rendered" >&2
        exit 1
      fi
    fi
  done
  echo "man pages: $(grep -c '/usr/share/man/man1/.*\.1\.gz$' <<<"$listing")"
fi
