#!/bin/bash
# Create or update the virtualenv of the client tools used by the "clients"
# test tier (ironic_alloc/tests/clients): openstacksdk, python-ironicclient,
# python-openstackclient and metalsmith, pinned in
# tools/client-requirements.txt.
#
# They live apart from the service's virtualenv so that their dependencies
# never fight with ours.  The tests find the virtualenv at the same place
# this script puts it.
#
# Usage: tools/setup-client-venv.sh
# Environment:
#   IRONIC_ALLOC_CLIENT_VENV  where the virtualenv goes (default:
#                             .venv-clients in the repository root)
#   PYTHON                    interpreter to build it with (default: python3)
#
# Idempotent: when the virtualenv was already built from the same
# requirements file with the same interpreter (a stamp file records the
# hash of both) it does nothing and exits 0.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REQUIREMENTS=$ROOT/tools/client-requirements.txt
VENV=${IRONIC_ALLOC_CLIENT_VENV:-$ROOT/.venv-clients}
PYTHON=${PYTHON:-python3}
STAMP=$VENV/.ironic-alloc-client-requirements

log() { echo "setup-client-venv: $*"; }

python_path=$(command -v "$PYTHON") || {
    log "no interpreter '$PYTHON' found" >&2
    exit 1
}
"$python_path" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    log "python >= 3.10 is required ($python_path is older)" >&2
    exit 1
}

wanted=$({
    cat "$REQUIREMENTS"
    "$python_path" -c 'import sys; print(sys.version)'
} | sha256sum | cut -d' ' -f1)

if [[ -f $STAMP && $(cat "$STAMP") == "$wanted" ]] &&
        "$VENV/bin/python" -c 'import openstack, metalsmith' 2>/dev/null &&
        [[ -x $VENV/bin/openstack ]]; then
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
log "installing $REQUIREMENTS"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$VENV/bin/python" -m pip install --quiet -r "$REQUIREMENTS"
"$VENV/bin/python" -m pip check
"$VENV/bin/openstack" --version
echo "$wanted" >"$STAMP"
log "$VENV is ready"
