#!/usr/bin/env bash
# Builds the sandbox image with a browser (sandboxd-base:bookworm-browser): the base image
# (images/base/build.sh) plus Debian's Chromium, installed with apt from the Debian mirror in a
# `docker build` FROM the local base image (no registry). Skips when the tag exists and was built
# by this version of the Dockerfile from the current base image (--force rebuilds).
set -euo pipefail

usage() {
  cat <<USAGE
Usage: $(basename "$0") [--base TAG] [--tag TAG] [--force] [--help]

Options:
  --base TAG  the base image (default: sandboxd-base:bookworm; build it first)
  --tag TAG   image tag to create (default: sandboxd-base:bookworm-browser)
  --force     rebuild even when TAG is up to date
USAGE
}

base="sandboxd-base:bookworm"
tag="sandboxd-base:bookworm-browser"
force=0
while (($#)); do
  case "$1" in
    --base) base="${2:?--base needs a value}"; shift 2 ;;
    --tag) tag="${2:?--tag needs a value}"; shift 2 ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "browser/build.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
docker image inspect "$base" >/dev/null 2>&1 || {
  echo "browser/build.sh: the base image $base is missing (images/base/build.sh)" >&2
  exit 1
}
# The recipe: this Dockerfile on this base image.
recipe="$(cat "$dir/Dockerfile" <(docker image inspect --format '{{.Id}}' "$base") | sha256sum | cut -c1-16)"
label=dev.sandboxd.browser.recipe
if [ "$force" -eq 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  built_with="$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$tag")"
  if [ "$built_with" = "$recipe" ]; then
    echo "browser/build.sh: $tag is up to date" >&2
    exit 0
  fi
fi
started=$SECONDS
DOCKER_CLI_HINTS=false docker build --quiet --build-arg "BASE=$base" --label "$label=$recipe" -t "$tag" "$dir" >/dev/null
echo "browser/build.sh: built $tag in $((SECONDS - started)) s" \
  "($(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%d MB", $1 / 1e6}'))" >&2
