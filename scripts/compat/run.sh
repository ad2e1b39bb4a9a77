#!/usr/bin/env bash
# Run OpenHands' own Python client (ActionExecutionClient) against a freshly built sandboxd.
#
#   scripts/compat/run.sh [extra args for openhands_client_check.py]
#
# Steps: make sure a Python 3.12 venv with openhands-ai exists (created once, reused), build
# sandboxd, start it on a free port with the reference's start command line, run
# openhands_client_check.py against it, stop sandboxd.
#
# Environment (all optional):
#   OPENHANDS_VERSION   openhands-ai version to install (default 0.62.0; 0.62.x .. 1.6.0 ship the V0 client)
#   OH_VENV             venv directory (default /tmp/oh-venv); reinstalled only if the version differs
#   PYTHON312           a Python 3.12 interpreter to create the venv with (default: pyenv's 3.12.x)
#   SANDBOXD_BIN        use this sandboxd binary instead of building one
#   SANDBOXD_SRC        Cargo workspace to build sandboxd from (default: this repository)
#   CARGO_TARGET_DIR    cargo target dir for the build (default: <SANDBOXD_SRC>/target)
#   NO_CHANGE_TIMEOUT_SECONDS   passed to sandboxd and the check (default 3, to keep the run short)
#   KEEP_TMP=1          keep the temp dir (workspace, HOME, sandboxd logs) for inspection
#
# Exit codes: 0 all checks passed; 1 a check failed; 2 sandboxd did not come up / check could not
# connect; 3 no Python 3.12 found; 4 pip install failed; 5 sandboxd build failed.
set -uo pipefail

LOG_TAG=compat
# shellcheck source=python.sh
source "$(dirname "${BASH_SOURCE[0]}")/python.sh"
VENV="${OH_VENV:-/tmp/oh-venv}"

if ! venv_reused; then
    if ! is_py312 "$VENV/bin/python"; then
        PY="$(find_py312)" || { log "no Python 3.12 found (pyenv versions/3.12.*, or set PYTHON312)"; exit 3; }
        log "creating venv $VENV with $PY"
        rm -rf "$VENV"
        "$PY" -m venv "$VENV" || { log "venv creation failed"; exit 3; }
        # Python 3.12.1's bundled pip 23.2 crashes (InvalidRequirement) while backtracking
        # through openhands-ai 1.x's dependency tree; a current pip does not.
        "$VENV/bin/pip" install -q --upgrade pip || { log "pip upgrade failed"; exit 4; }
    fi
    log "pip install openhands-ai==$VERSION into $VENV (takes several minutes the first time)"
    start=$SECONDS
    PIP_LOG="$VENV/pip-install.log"
    if ! "$VENV/bin/pip" install "openhands-ai==$VERSION" >"$PIP_LOG" 2>&1; then
        tail -n 30 "$PIP_LOG" >&2
        log "pip install openhands-ai==$VERSION failed (full log: $PIP_LOG)"
        exit 4
    fi
    log "installed in $((SECONDS - start)) s; venv size $(du -sh "$VENV" | cut -f1)"
fi

# ----------------------------------------------------------------------------------- build
if [ -n "${SANDBOXD_BIN:-}" ]; then
    BIN="$SANDBOXD_BIN"
    [ -x "$BIN" ] || { log "SANDBOXD_BIN=$BIN is not executable"; exit 5; }
else
    SRC="${SANDBOXD_SRC:-$REPO}"
    TARGET="${CARGO_TARGET_DIR:-$SRC/target}"
    log "building sandboxd (release) in $SRC, target dir $TARGET"
    (cd "$SRC" && CARGO_TARGET_DIR="$TARGET" cargo build --release -q -p sandboxd) ||
        { log "cargo build failed"; exit 5; }
    BIN="$TARGET/release/sandboxd"
fi

# ----------------------------------------------------------------------------------- start
NCT="${NO_CHANGE_TIMEOUT_SECONDS:-3}"
TMP="$(mktemp -d /tmp/sandboxd-compat.XXXXXX)"
mkdir -p "$TMP/workspace" "$TMP/home"
KEY="compat-$RANDOM$RANDOM"
PORT="$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
SD_PID=""

cleanup() {
    if [ -n "$SD_PID" ] && kill -0 "$SD_PID" 2>/dev/null; then
        kill -TERM "$SD_PID" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$SD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$SD_PID" 2>/dev/null && kill -KILL "$SD_PID" 2>/dev/null
        wait "$SD_PID" 2>/dev/null
    fi
    if [ "${KEEP_TMP:-0}" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The reference's start command line (as DockerRuntime/RemoteRuntime send it, with CodeActAgent's
# plugins). HOME points into the temp dir: the check's setup_initial_env() writes ~/.bashrc and
# the global git config, as OpenHands does on a fresh sandbox.
USER_NAME="$(id -un)"
USER_ID="$(id -u)"
log "starting $BIN on 127.0.0.1:$PORT (workspace $TMP/workspace)"
HOME="$TMP/home" SESSION_API_KEY="$KEY" NO_CHANGE_TIMEOUT_SECONDS="$NCT" \
    "$BIN" "$PORT" --working-dir "$TMP/workspace" --plugins agent_skills jupyter \
    --username "$USER_NAME" --user-id "$USER_ID" --no-enable-browser \
    >"$TMP/sandboxd.out" 2>"$TMP/sandboxd.err" &
SD_PID=$!

# No waiting here on purpose: like LocalRuntime/DockerRuntime, the client polls /alive itself
# and its first action follows the first 2xx.
"$VENV/bin/python" "$HERE/openhands_client_check.py" \
    --url "http://127.0.0.1:$PORT" --api-key "$KEY" --working-dir "$TMP/workspace" \
    --no-change-timeout "$NCT" --setup-env --jupyter "$@"
rc=$?

if [ $rc -ne 0 ]; then
    if ! kill -0 "$SD_PID" 2>/dev/null; then log "sandboxd is not running any more"; fi
    log "sandboxd stdout:"; sed 's/^/    /' "$TMP/sandboxd.out" >&2
    log "sandboxd stderr (last 40 lines):"; tail -n 40 "$TMP/sandboxd.err" | sed 's/^/    /' >&2
fi
log "check exit code $rc"
exit $rc
