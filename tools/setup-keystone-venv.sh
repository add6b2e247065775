#!/bin/bash
# Create or update the virtualenv of the real Keystone used by the
# "keystone" test tier (ironic_alloc/tests/keystone): keystone and gunicorn
# from tools/keystone-requirements.txt, every version pinned by
# tools/keystone-constraints.txt (OpenStack 2026.1's upper-constraints).
#
# Keystone's dependencies differ from the service's pins, so it gets a
# virtualenv of its own; the tests run keystone-manage and gunicorn from it
# and never import it.
#
# Usage: tools/setup-keystone-venv.sh
# Environment:
#   IRONIC_ALLOC_KEYSTONE_VENV  where the virtualenv goes (default:
#                               .venv-keystone in the repository root)
#   PYTHON                      interpreter to build it with (default:
#                               python3)
#
# Idempotent: when the virtualenv was already built from the same files
# with the same interpreter (a stamp file records the hash of all three)
# it does nothing and exits 0.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REQUIREMENTS=$ROOT/tools/keystone-requirements.txt
CONSTRAINTS=$ROOT/tools/keystone-constraints.txt
VENV=${IRONIC_ALLOC_KEYSTONE_VENV:-$ROOT/.venv-keystone}
PYTHON=${PYTHON:-python3}
STAMP=$VENV/.ironic-alloc-keystone-requirements

log() { echo "setup-keystone-venv: $*"; }

python_path=$(command -v "$PYTHON") || {
    log "no interpreter '$PYTHON' found" >&2
    exit 1
}
"$python_path" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    log "python >= 3.10 is required ($python_path is older)" >&2
    exit 1
}

wanted=$({
    cat "$REQUIREMENTS" "$CONSTRAINTS"
    "$python_path" -c 'import sys; print(sys.version)'
} | sha256sum | cut -d' ' -f1)

if [[ -f $STAMP && $(cat "$STAMP") == "$wanted" ]] &&
        [[ -x $VENV/bin/keystone-manage && -x $VENV/bin/gunicorn ]]; then
    log "$VENV is up to date"
    exit 0
fi

if [[ ! -x $VENV/bin/python ]] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
    log "creating $VENV with $python_path"
    rm -rf "$VENV"
    "$python_path" -m venv "$VENV"
fi

# NOTE: the stamp goes first so that an interrupted install is redone.
rm -f "$STAMP"
log "installing $REQUIREMENTS with $CONSTRAINTS"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$VENV/bin/python" -m pip install --quiet -c "$CONSTRAINTS" \
    -r "$REQUIREMENTS"
"$VENV/bin/python" -m pip check
"$VENV/bin/keystone-manage" --version
echo "$wanted" >"$STAMP"
log "$VENV is ready"
