#!/usr/bin/env bash
# Builds one of the workspace's binaries for images: release, statically linked against glibc,
# stripped. Prints the binary's path as the last line of stdout; everything else goes to
# stderr. See images/README.md for why static glibc (and not musl).
set -euo pipefail

usage() {
  cat <<EOF2
Usage: $(basename "$0") PACKAGE [--help]

Builds PACKAGE's binary of the same name (sandboxd or agentd) for images (static glibc,
stripped) and prints its path.

Environment:
  CARGO_TARGET_DIR  cargo's target directory (default: <workspace>/target)
EOF2
}

case "${1:-}" in
  sandboxd | agentd) package="$1" ;;
  -h | --help) usage; exit 0 ;;
  "") echo "build-static.sh: which package? (sandboxd or agentd; see --help)" >&2; exit 2 ;;
  *) echo "build-static.sh: unknown package: $1 (sandboxd or agentd; see --help)" >&2; exit 2 ;;
esac
(($# <= 1)) || { echo "build-static.sh: unexpected argument: $2 (see --help)" >&2; exit 2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
target=x86_64-unknown-linux-gnu
target_dir="${CARGO_TARGET_DIR:-$root/target}"
bin="$target_dir/$target/release/$package"

# With an explicit --target, RUSTFLAGS apply to the target crates only: build scripts and
# proc-macros stay dynamic host binaries.
cd "$root"
RUSTFLAGS="-C target-feature=+crt-static -C strip=symbols" \
  cargo build --release --locked -p "$package" --bin "$package" --target "$target" >&2

# A static binary has no interpreter and no NEEDED libraries; refuse anything else.
description="$(file -b "$bin")"
case "$description" in
  *"statically linked"* | *"static-pie linked"*) ;;
  *) echo "build-static.sh: $bin is not static: $description" >&2; exit 1 ;;
esac
if ldd "$bin" 2>&1 | grep -q '=>'; then
  echo "build-static.sh: $bin links shared libraries:" >&2
  ldd "$bin" >&2
  exit 1
fi
echo "build-static.sh: $description" >&2
echo "build-static.sh: $(du -h "$bin" | cut -f1) $bin" >&2
echo "$bin"
