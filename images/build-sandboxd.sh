#!/usr/bin/env bash
# Builds the sandboxd binary that goes into sandbox images: release, statically linked against
# glibc, stripped. Prints the binary's path as the last line of stdout; everything else goes to
# stderr. See images/README.md for why static glibc (and not musl).
set -euo pipefail

usage() {
  cat <<EOF
Usage: $(basename "$0") [--help]

Builds sandboxd for images (static glibc, stripped) and prints the binary's path.

Environment:
  CARGO_TARGET_DIR  cargo's target directory (default: <workspace>/target)
EOF
}

case "${1:-}" in
  "") ;;
  -h | --help) usage; exit 0 ;;
  *) echo "build-sandboxd.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "$0")/.." && pwd)"
target=x86_64-unknown-linux-gnu
target_dir="${CARGO_TARGET_DIR:-$root/target}"
bin="$target_dir/$target/release/sandboxd"

# With an explicit --target, RUSTFLAGS apply to the target crates only: build scripts and
# proc-macros stay dynamic host binaries.
cd "$root"
RUSTFLAGS="-C target-feature=+crt-static -C strip=symbols" \
  cargo build --release --locked -p sandboxd --target "$target" >&2

# A static binary has no interpreter and no NEEDED libraries; refuse anything else.
description="$(file -b "$bin")"
case "$description" in
  *"statically linked"* | *"static-pie linked"*) ;;
  *) echo "build-sandboxd.sh: $bin is not static: $description" >&2; exit 1 ;;
esac
if ldd "$bin" 2>&1 | grep -q '=>'; then
  echo "build-sandboxd.sh: $bin links shared libraries:" >&2
  ldd "$bin" >&2
  exit 1
fi
echo "build-sandboxd.sh: $description" >&2
echo "build-sandboxd.sh: $(du -h "$bin" | cut -f1) $bin" >&2
echo "$bin"
