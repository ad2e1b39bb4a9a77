#!/usr/bin/env bash
# Builds the image of agentd itself, for running `agentd serve` on a cluster (deploy/kubernetes):
# the static agentd (images/build-static.sh agentd) in an otherwise empty root filesystem with
# the CA certificates, a non-root user and a writable /tmp, imported with `docker import` (no
# registry, no base image). Push it where the cluster's nodes pull from.
set -euo pipefail

usage() {
  cat <<EOF2
Usage: $(basename "$0") [--tag TAG] [--help]

Builds agentd statically and imports it as TAG (default: agentd:VERSION, the workspace version)
into the local Docker engine. The image runs as uid/gid 65532 with ENTRYPOINT agentd.

Options:
  --tag TAG   image tag to create
  --help      show this help

Environment:
  CARGO_TARGET_DIR  cargo's target directory (default: <workspace>/target)
EOF2
}

root="$(cd "$(dirname "$0")/../.." && pwd)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)"
tag="agentd:$version"
while (($#)); do
  case "$1" in
    --tag)
      [ $# -ge 2 ] || { echo "build.sh: --tag needs a value" >&2; exit 2; }
      tag="$2"
      shift 2
      ;;
    --tag=*) tag="${1#--tag=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in docker tar; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool is required" >&2; exit 1; }
done
certs=/etc/ssl/certs/ca-certificates.crt
[ -r "$certs" ] || { echo "build.sh: $certs is missing (apt install ca-certificates)" >&2; exit 1; }

bin="$("$root/images/build-static.sh" agentd | tail -n1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{usr/local/bin,etc/ssl/certs,tmp,var/lib/agentd,home/agentd}
install -m 0755 "$bin" "$rootfs/usr/local/bin/agentd"
install -m 0644 "$certs" "$rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nagentd:x:65532:65532:agentd:/home/agentd:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nagentd:x:65532:\n' >"$rootfs/etc/group"
printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
chmod 1777 "$rootfs/tmp"
tar -C "$rootfs" --numeric-owner --owner=0 --group=0 \
  --exclude=./var/lib/agentd --exclude=./home/agentd -cf "$work/rootfs.tar" .
# The state directory and home belong to the user the image runs as.
tar -C "$rootfs" --numeric-owner --owner=65532 --group=65532 --no-recursion \
  -rf "$work/rootfs.tar" ./var/lib/agentd ./home/agentd

docker import \
  --change 'USER 65532:65532' \
  --change 'ENV HOME=/home/agentd XDG_STATE_HOME=/var/lib/agentd' \
  --change 'WORKDIR /home/agentd' \
  --change 'ENTRYPOINT ["/usr/local/bin/agentd"]' \
  --change 'CMD ["--help"]' \
  --change "LABEL org.opencontainers.image.version=$version" \
  "$work/rootfs.tar" "$tag" >/dev/null
# The image must start: a static binary that cannot run here would fail on the cluster too.
docker run --rm --network none "$tag" --version >&2
echo "build.sh: built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))" >&2
echo "$tag"
