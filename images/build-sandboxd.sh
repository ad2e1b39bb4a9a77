#!/usr/bin/env bash
# Builds the sandboxd binary that goes into sandbox images (images/build-static.sh sandboxd):
# release, statically linked against glibc, stripped. Prints the binary's path as the last line
# of stdout; everything else goes to stderr.
set -euo pipefail
case "${1:-}" in
  "") ;;
  -h | --help)
    echo "Usage: $(basename "$0") [--help]"
    echo
    echo "Builds sandboxd for images (static glibc, stripped) and prints the binary's path."
    echo "CARGO_TARGET_DIR: cargo's target directory (default: <workspace>/target)"
    exit 0
    ;;
  *) echo "build-sandboxd.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
esac
exec "$(dirname "$0")/build-static.sh" sandboxd
