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

tool_venv client "${IRONIC_ALLOC_CLIENT_VENV:-$ROOT/.venv-clients}" \
    "$ROOT/tools/client-requirements.txt" '' \
    check_clients
