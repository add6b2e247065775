# shellcheck shell=bash
# Sourced by tools/run-standalone.sh and tools/run-tests.sh.
#
# ensure_venv REQUIREMENTS_FILE...
#   Create the virtualenv $VENV (default: .venv of the repository) when it
#   is missing, and install ironic_alloc into it in editable mode with the
#   given requirement files, always through upper-constraints.txt.  The
#   install is skipped when nothing it depends on changed since the last
#   one.  Needs Python 3.10 or newer ($PYTHON, default python3) and pip.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
VENV=${VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}

_venv_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

_create_venv() {
    if ! command -v "$PYTHON" >/dev/null; then
        _venv_log "$PYTHON not found: install Python 3.10 or newer"
        return 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
        _venv_log "$PYTHON is $("$PYTHON" --version 2>&1); Python 3.10 or newer is needed"
        return 1
    fi
    _venv_log "creating the virtualenv $VENV"
    if "$PYTHON" -m venv "$VENV" 2>/dev/null; then
        return 0
    fi
    # NOTE: Debian and Ubuntu ship venv without ensurepip unless
    # python3-venv is installed; pip can still bring virtualenv.
    rm -rf "$VENV"
    _venv_log "python -m venv is not usable here; using virtualenv"
    "$PYTHON" -m virtualenv --version >/dev/null 2>&1 ||
        "$PYTHON" -m pip install --user --quiet virtualenv ||
        return 1
    "$PYTHON" -m virtualenv --quiet "$VENV"
}

ensure_venv() {
    local files=("$ROOT/upper-constraints.txt" "$ROOT/pyproject.toml"
                 "$ROOT/setup.cfg") args=() req stamp digest
    for req in "$@"; do
        files+=("$ROOT/$req")
        args+=(-r "$ROOT/$req")
    done
    if [[ ! -x $VENV/bin/python ]]; then
        _create_venv || return 1
    fi
    digest=$(cat "${files[@]}" | "$VENV/bin/python" -c \
        'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
    stamp="$VENV/.ironic-alloc-installed-$(echo "$*" | tr -c 'a-z0-9' '_')"
    if [[ -f $stamp && $(cat "$stamp") == "$digest" ]]; then
        return 0
    fi
    _venv_log "installing ironic_alloc and its dependencies into $VENV (a few minutes the first time)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -c "$ROOT/upper-constraints.txt" "${args[@]}" -e "$ROOT" || return 1
    echo "$digest" >"$stamp"
}
