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
# Idempotent (see tools/lib/tool-venv.sh).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/lib/tool-venv.sh
source "$ROOT/tools/lib/tool-venv.sh"

# Usable once installed: prints keystone-manage's version.
check_keystone() {
    "$1/bin/keystone-manage" --version && [[ -x $1/bin/gunicorn ]]
}

tool_venv keystone "${IRONIC_ALLOC_KEYSTONE_VENV:-$ROOT/.venv-keystone}" \
    "$ROOT/tools/keystone-requirements.txt" \
    "$ROOT/tools/keystone-constraints.txt" \
    check_keystone
