#!/usr/bin/env bash
# Drive `agentd serve` with OpenHands' own RemoteRuntime (openhands-ai, default 0.62.0):
# connect, a bash command, a file edit, close (remote_runtime_check.py).
#
#   scripts/compat/remote_runtime.sh
#
# Steps: make sure a cached Python 3.12 venv with openhands-ai exists (installed once with uv,
# from PyPI; reused afterwards), start `agentd serve` on a free port with a random key and a
# warm pool of 1, run the check with SANDBOX_REMOTE_RUNTIME_API_URL / SANDBOX_API_KEY /
# SANDBOX_RUNTIME_CONTAINER_IMAGE set, stop the service and remove its sandboxes.
#
# Environment (all optional):
#   OPENHANDS_VERSION   openhands-ai version (default 0.62.0)
#   OH_VENV             venv directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/agentd/oh-venv-VERSION)
#   PYTHON312           a Python 3.12 interpreter (default: pyenv's 3.12.x)
#   AGENTD_BIN          the agentd binary (default: build it with cargo)
#   AGENTD_SANDBOXD_BIN the sandboxd put into the image (see images/build-sandboxd.sh)
#   AGENTD_IMAGE        base or sandbox image of the sandboxes (default sandboxd-base:bookworm)
#   AGENTD_SERVE_ARGS   more arguments of agentd serve, split on spaces (e.g. --front-door)
#
# Exit codes: 0 all checks passed; 1 a check failed; 2 agentd serve did not start; 3 no Python
# 3.12 found; 4 installing openhands-ai failed; 5 building agentd failed.
set -uo pipefail

LOG_TAG=remote-compat
# shellcheck source=python.sh
source "$(dirname "${BASH_SOURCE[0]}")/python.sh"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agentd"
VENV="${OH_VENV:-$CACHE/oh-venv-$VERSION}"

# ------------------------------------------------------------------------------ the venv
# Checks that run at once (the compat tests run in parallel) install the venv once: the first
# takes the lock and installs, the others wait for it and then reuse its venv. Without the lock
# one removed the uv it was installing with while the other used it.
mkdir -p "$CACHE" "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if ! venv_reused; then
    PY="$(find_py312)" || { log "no Python 3.12 found (pyenv versions/3.12.*, or set PYTHON312)"; exit 3; }
    start=$SECONDS
    # uv resolves and installs openhands-ai's ~250 packages in seconds; pip takes minutes.
    UV="$CACHE/uv-tool/bin/uv"
    if [ ! -x "$UV" ]; then
        log "installing uv into $CACHE/uv-tool"
        rm -rf "$CACHE/uv-tool"
        "$PY" -m venv "$CACHE/uv-tool" && "$CACHE/uv-tool/bin/pip" install -q uv || UV=""
    fi
    rm -rf "$VENV"
    LOG="$CACHE/oh-install-$VERSION.log"
    if [ -n "$UV" ]; then
        log "uv: openhands-ai==$VERSION into $VENV"
        "$UV" venv -q -p "$PY" "$VENV" >"$LOG" 2>&1 &&
            VIRTUAL_ENV="$VENV" "$UV" pip install "openhands-ai==$VERSION" >>"$LOG" 2>&1
    else
        log "pip: openhands-ai==$VERSION into $VENV (several minutes)"
        "$PY" -m venv "$VENV" >"$LOG" 2>&1 &&
            "$VENV/bin/pip" install -q --upgrade pip >>"$LOG" 2>&1 &&
            "$VENV/bin/pip" install "openhands-ai==$VERSION" >>"$LOG" 2>&1
    fi
    if ! venv_ok; then
        tail -n 30 "$LOG" >&2
        log "installing openhands-ai==$VERSION failed (log: $LOG)"
        exit 4
    fi
    log "installed in $((SECONDS - start)) s; venv size $(du -sh "$VENV" | cut -f1)"
fi
exec 9>&-

# ------------------------------------------------------------------------------ the service
AGENTD="${AGENTD_BIN:-}"
if [ -z "$AGENTD" ]; then
    (cd "$REPO" && cargo build -q -p agentd) || { log "building agentd failed"; exit 5; }
    AGENTD="${CARGO_TARGET_DIR:-$REPO/target}/debug/agentd"
fi
TMP="$(mktemp -d)"
NAME="compat-$$"
KEY="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
SUDO_KEY="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
SERVICE_PID=""
cleanup() {
    if [ -n "$SERVICE_PID" ]; then
        kill -TERM "$SERVICE_PID" 2>/dev/null
        wait "$SERVICE_PID" 2>/dev/null
    fi
    ids="$(docker ps -aq --filter "label=dev.sandboxd.serve.name=$NAME")"
    [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT

mkfifo "$TMP/out"
# Root starts allowed; sudo for the second key only.
printf '[serve]\nsudo_keys = ["%s"]\n' "$SUDO_KEY" >"$TMP/agentd.toml"
"$AGENTD" serve --listen 127.0.0.1:0 --api-key "$KEY" --api-key "$SUDO_KEY" --name "$NAME" \
    --state-dir "$TMP/state" --pool-size 1 --idle-timeout 0 --allow-root --config "$TMP/agentd.toml" \
    ${AGENTD_IMAGE:+--image "$AGENTD_IMAGE"} ${AGENTD_SERVE_ARGS:-} >"$TMP/out" 2>"$TMP/serve.log" &
SERVICE_PID=$!
URL=""
if read -r -t 120 line <"$TMP/out"; then URL="${line#agentd serve listening on }"; fi
if [ -z "$URL" ] || [ "$URL" = "$line" ]; then
    tail -n 30 "$TMP/serve.log" >&2
    log "agentd serve did not start"
    exit 2
fi
log "agentd serve at $URL"

SANDBOX_REMOTE_RUNTIME_API_URL="$URL" SANDBOX_API_KEY="$KEY" SUDO_API_KEY="$SUDO_KEY" \
    BASE_IMAGE="${AGENTD_IMAGE:-sandboxd-base:bookworm}" \
    SANDBOX_RUNTIME_CONTAINER_IMAGE="ghcr.io/all-hands-ai/runtime:$VERSION-nikolaik" \
    LOG_LEVEL="${LOG_LEVEL:-warning}" \
    "$VENV/bin/python" "$HERE/remote_runtime_check.py"
status=$?
if [ $status -ne 0 ]; then
    log "check failed; service log:"
    tail -n 40 "$TMP/serve.log" >&2
    exit 1
fi
