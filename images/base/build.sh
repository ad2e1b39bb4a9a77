#!/usr/bin/env bash
# Builds the sandbox base image (Debian bookworm, the `openhands` user, a Python development box:
# python and python3, pip and venv in a venv the sandbox user owns, the kernel, a compiler
# toolchain, git, curl, sudo) without a registry: debootstrap a rootfs, install the packages in a chroot,
# and `docker import` the result. Skips everything when the tag exists (use --force to rebuild).
# images/base/Dockerfile builds the same image from debian:bookworm-slim where a registry is
# reachable; keep the two in step.
set -euo pipefail

usage() {
  cat <<EOF
Usage: $(basename "$0") [--tag TAG] [--force] [--help]

Builds a Debian bookworm root filesystem with debootstrap and imports it into the local Docker
engine as TAG (default: sandboxd-base:bookworm). Must run as root. Needs debootstrap, docker
and access to a Debian mirror.

Options:
  --tag TAG   image tag to create (default: sandboxd-base:bookworm)
  --force     rebuild even when TAG already exists
  --help      show this help

Environment:
  DEBIAN_MIRROR           Debian mirror (default: http://deb.debian.org/debian)
  DEBIAN_SECURITY_MIRROR  security archive (default: DEBIAN_MIRROR with /debian replaced
                          by /debian-security, as on deb.debian.org)
  TMPDIR                  where the temporary work directory goes (default: /tmp)
EOF
}

tag="sandboxd-base:bookworm"
force=0
while (($#)); do
  case "$1" in
    --tag)
      [ $# -ge 2 ] || { echo "build.sh: --tag needs a value" >&2; exit 2; }
      tag="$2"
      shift 2
      ;;
    --tag=*) tag="${1#--tag=}"; shift ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

suite=bookworm
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
mirror="${mirror%/}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}"
# What the image offers on top of minbase: what an agent expects of a Python development box.
# python3-cffi-backend is listed explicitly because python3-zmq (ipykernel) depends on virtual
# packages it provides. Keep in step with the Dockerfile.
packages=(
  bash coreutils ca-certificates curl wget git procps ripgrep sudo tini less file jq patch
  unzip zip xz-utils build-essential pkg-config
  python3 python-is-python3 python3-dev python3-pip python3-venv
  python3-ipykernel python3-cffi-backend
)
# The agent's Python: a venv (with the system packages, so the kernel finds ipykernel) that the
# sandbox user owns and that comes first on PATH, so `python`, `pip`, `%pip install` in the kernel
# and `python -m venv` work without root and without PEP 668's refusal of the system Python.
venv=/opt/venv
sandbox_user=openhands
sandbox_uid=1000
sandbox_gid=1000
image_path=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { echo "build.sh: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "must run as root (debootstrap and chroot need it)"; exit 1; }
for tool in debootstrap docker tar chroot mount; do
  command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }
done

# The recipe is this script: an image built by another version of it is rebuilt.
recipe="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)"
recipe_label=dev.sandboxd.base.recipe
if [ "$force" -eq 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  built_with="$(docker image inspect --format "{{ index .Config.Labels \"$recipe_label\" }}" "$tag")"
  if [ "$built_with" = "$recipe" ]; then
    log "$tag already exists; nothing to do (--force rebuilds it)"
    exit 0
  fi
  log "$tag was built by another version of this script (${built_with:-none}); rebuilding"
fi
old_id="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"

work="$(mktemp -d "${TMPDIR:-/tmp}/sandboxd-base.XXXXXX")"
rootfs="$work/rootfs"

unmount_all() {
  if mountpoint -q "$rootfs/proc" 2>/dev/null; then
    umount "$rootfs/proc" || umount -l "$rootfs/proc" || true
  fi
}
cleanup() {
  unmount_all
  # Never rm -rf through a mount that is still there.
  if grep -q " $work/" /proc/mounts; then
    log "mounts remain under $work; not removing it"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step_names=()
step_secs=()
step_start=0
step() {
  step_start=$(date +%s)
  step_names+=("$1")
  log "== $1"
}
step_done() { step_secs+=($(($(date +%s) - step_start))); }
total_start=$(date +%s)

# Runs a command inside the rootfs with a clean environment.
in_root() {
  env -i PATH="$image_path" HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    chroot "$rootfs" "$@"
}

step "debootstrap minbase ($suite from $mirror)"
# Minimal first, packages later with apt inside the chroot: debootstrap's own resolver cannot
# follow virtual packages and fetches one file at a time.
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror"
step_done

step "configure apt and dpkg"
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
EOF
# Never install documentation (as in debian:bookworm-slim); copyright files stay.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/excludes" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
# No daemon may start inside the build chroot.
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
mount -t proc proc "$rootfs/proc"
step_done

step "apt-get install ${packages[*]}"
in_root apt-get update -qq
in_root apt-get -y -qq -o Dpkg::Use-Pty=0 upgrade
in_root apt-get -y -qq -o Dpkg::Use-Pty=0 install --no-install-recommends "${packages[@]}"
in_root python3 -c 'import ipykernel, zmq' # fail early if the kernel cannot start
step_done

step "user $sandbox_user ($sandbox_uid:$sandbox_gid), sudo, /workspace"
in_root groupadd --gid "$sandbox_gid" "$sandbox_user"
in_root useradd --uid "$sandbox_uid" --gid "$sandbox_gid" --create-home \
  --home-dir "/home/$sandbox_user" --shell /bin/bash "$sandbox_user"
echo "$sandbox_user ALL=(ALL) NOPASSWD:ALL" >"$rootfs/etc/sudoers.d/$sandbox_user"
chmod 0440 "$rootfs/etc/sudoers.d/$sandbox_user"
in_root visudo -cq -f "/etc/sudoers.d/$sandbox_user"
mkdir -p "$rootfs/workspace"
chown "$sandbox_uid:$sandbox_gid" "$rootfs/workspace"
step_done

step "venv $venv (python, pip; owned by $sandbox_user)"
in_root /usr/bin/python3 -m venv --system-site-packages "$venv"
in_root "$venv/bin/python" -c 'import ipykernel, zmq, pip'
chown -R "$sandbox_uid:$sandbox_gid" "$rootfs$venv"
# Login shells reset PATH in /etc/profile; put the venv back in front for them.
cat >"$rootfs/etc/profile.d/00-venv.sh" <<EOF
export VIRTUAL_ENV=$venv
case ":\$PATH:" in *":$venv/bin:"*) ;; *) PATH="$venv/bin:\$PATH" ;; esac
export PATH
EOF
step_done

step "clean up"
in_root apt-get clean
unmount_all
rm -f "$rootfs/usr/sbin/policy-rc.d"
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
  "$rootfs"/var/lib/dpkg/*-old "$rootfs"/tmp/* "$rootfs"/var/tmp/* "$rootfs"/root/.cache
# Documentation debootstrap unpacked before the dpkg excludes existed.
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/groff/* \
  "$rootfs"/usr/share/lintian/* "$rootfs"/usr/share/locale/*
find "$rootfs/var/log" -type f -delete
# Docker provides these per container.
: >"$rootfs/etc/resolv.conf"
: >"$rootfs/etc/hostname"
rm -f "$rootfs/etc/machine-id" "$rootfs/var/lib/dbus/machine-id"
step_done

step "docker import $tag"
tar --numeric-owner -C "$rootfs" -c --exclude='./dev/*' --exclude='./proc/*' \
  --exclude='./sys/*' . |
  docker import \
    --change "ENV PATH=$image_path" \
    --change 'ENV LANG=C.UTF-8' \
    --change "ENV VIRTUAL_ENV=$venv" \
    --change "LABEL $recipe_label=$recipe" \
    --change "LABEL dev.sandboxd.writable=$venv" \
    --change 'ENTRYPOINT ["/usr/bin/tini", "--"]' \
    --change 'CMD ["/bin/bash"]' \
    --message "sandboxd base: debootstrap $suite minbase + ${packages[*]}" \
    - "$tag" >/dev/null
new_id="$(docker image inspect --format '{{.Id}}' "$tag")"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker image rm "$old_id" >/dev/null 2>&1 || log "old image $old_id is still in use; kept"
fi
step_done

size="$(docker image inspect --format '{{.Size}}' "$tag")"
log "built $tag ($new_id), $((size / 1000000)) MB"
for i in "${!step_names[@]}"; do
  printf 'build.sh: %6ss  %s\n' "${step_secs[$i]}" "${step_names[$i]}" >&2
done
printf 'build.sh: %6ss  total\n' "$(($(date +%s) - total_start))" >&2
