#!/bin/bash
# Create or update the virtualenv of the client tools used by the "clients"
# test tier (ironic_alloc/tests/clients): openstacksdk, python-ironicclient,
# python-openstackclient and metalsmith, pinned in
# tools/client-requirements.txt, and this project's own OSC plugin
# (ironic_alloc/cli, the "cli" extra), installed from this tree.
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
# Idempotent (see tools/lib/tool-venv.sh).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/lib/tool-venv.sh
source "$ROOT/tools/lib/tool-venv.sh"

# Usable once installed: prints the version of the openstack command.
check_clients() {
    "$1/bin/python" -c 'import openstack, metalsmith' &&
        "$1/bin/openstack" --version
}

# The requirements of the "cli" extra that are missing from the virtualenv
# (or at a version outside their bounds), one a line; nothing when all are
# there.
missing_cli_requirements() {
    "$1/bin/python" - <<'PYTHON'
import importlib.metadata as metadata

from packaging import requirements

for text in metadata.requires('ironic-alloc') or ():
    req = requirements.Requirement(text)
    if req.marker is None or 'extra' not in str(req.marker):
        continue
    if not req.marker.evaluate({'extra': 'cli'}):
        continue
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        print('%s (not installed)' % text)
        continue
    if not req.specifier.contains(version, prereleases=True):
        print('%s (%s installed)' % (text, version))
PYTHON
}

VENV=${IRONIC_ALLOC_CLIENT_VENV:-$ROOT/.venv-clients}

# NOTE: the plugin is installed without the service's requirements (see
# below), which "pip check" would report as missing: it is taken out while
# tool_venv installs and checks the pinned clients alone.
if [[ -x $VENV/bin/python ]] &&
        "$VENV/bin/python" -m pip show --quiet ironic-alloc >/dev/null 2>&1; then
    "$VENV/bin/python" -m pip uninstall --quiet --yes ironic-alloc
fi

tool_venv client "$VENV" "$ROOT/tools/client-requirements.txt" '' \
    check_clients

# This tree's OSC plugin, editable so that the tests run the code they come
# with.  --no-deps: the service's requirements (oslo.db, SQLAlchemy,
# Pecan...) have nothing to do with a client and their pins would fight
# with the clients' exact ones; the extra's own requirements
# (python-openstackclient, osc-lib) are among the pinned clients, which is
# checked instead of "pip check".
echo "setup-client-venv: installing the OSC plugin of $ROOT"
PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$VENV/bin/python" -m pip install --quiet --no-deps --editable "$ROOT"
missing=$(missing_cli_requirements "$VENV")
if [[ -n $missing ]]; then
    echo "setup-client-venv: the \"cli\" extra needs what the client" \
        "requirements do not give:" >&2
    echo "$missing" >&2
    exit 1
fi
"$VENV/bin/openstack" baremetal reservation list --help >/dev/null
echo "setup-client-venv: the OSC plugin is installed"
