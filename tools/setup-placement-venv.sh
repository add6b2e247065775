#!/bin/bash
# Create or update the virtualenv of the real OpenStack Placement used by
# the "placement" test tier (ironic_alloc/tests/placement):
# openstack-placement, gunicorn and psycopg2 from
# tools/placement-requirements.txt, every version pinned by
# tools/placement-constraints.txt.
#
# Placement's dependencies differ from the service's pins, so it gets a
# virtualenv of its own (the same layout as tools/setup-keystone-venv.sh);
# the tests run placement-manage and gunicorn from it and only talk HTTP
# to the result.
#
# Usage: tools/setup-placement-venv.sh
# Environment:
#   IRONIC_ALLOC_PLACEMENT_VENV  where the virtualenv goes (default:
#                                .venv-placement in the repository root)
#   PYTHON                       interpreter to build it with (default:
#                                python3)
#
# Idempotent: when the virtualenv was already built from the same files
# with the same interpreter (a stamp file records the hash of all three)
# it does nothing and exits 0.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REQUIREMENTS=$ROOT/tools/placement-requirements.txt
CONSTRAINTS=$ROOT/tools/placement-constraints.txt
VENV=${IRONIC_ALLOC_PLACEMENT_VENV:-$ROOT/.venv-placement}
PYTHON=${PYTHON:-python3}
STAMP=$VENV/.ironic-alloc-placement-requirements

log() { echo "setup-placement-venv: $*"; }

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
        [[ -x $VENV/bin/placement-manage && -x $VENV/bin/gunicorn ]]; then
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
"$VENV/bin/python" -c 'import placement.wsgi, psycopg2'
"$VENV/bin/placement-manage" --version
echo "$wanted" >"$STAMP"
log "$VENV is ready"
