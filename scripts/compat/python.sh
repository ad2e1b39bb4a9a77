# Sourced by the compat scripts: their directory (HERE), the repository (REPO), the openhands-ai
# version (VERSION), `log` (tagged with the script's LOG_TAG), finding a Python 3.12 and checking
# a cached openhands-ai venv. Needs LOG_TAG set before, and VENV set after, sourcing.

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VERSION="${OPENHANDS_VERSION:-0.62.0}"

log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }

is_py312() { [ -x "$1" ] && "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' 2>/dev/null; }

# Prints a Python 3.12 interpreter: PYTHON312, else pyenv's newest 3.12.x.
find_py312() {
    if [ -n "${PYTHON312:-}" ]; then
        is_py312 "$PYTHON312" && { echo "$PYTHON312"; return 0; }
        log "PYTHON312=$PYTHON312 is not a Python 3.12 interpreter"
        return 1
    fi
    local root="${PYENV_ROOT:-$HOME/.pyenv}" cand
    if command -v pyenv >/dev/null 2>&1; then root="$(pyenv root 2>/dev/null || echo "$root")"; fi
    for cand in $(ls -d "$root"/versions/3.12* 2>/dev/null | sort -rV); do
        is_py312 "$cand/bin/python3.12" && { echo "$cand/bin/python3.12"; return 0; }
    done
    return 1
}

# Whether $VENV is a Python 3.12 venv with openhands-ai $VERSION.
venv_ok() {
    is_py312 "$VENV/bin/python" &&
        "$VENV/bin/python" - "$VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version('openhands-ai') == sys.argv[1] else 1)
PY
}

# Whether $VENV already has openhands-ai $VERSION, said in the log when it has.
venv_reused() { venv_ok && log "venv $VENV already has openhands-ai $VERSION"; }
