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
# Idempotent (see tools/lib/tool-venv.sh).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/lib/tool-venv.sh
source "$ROOT/tools/lib/tool-venv.sh"

# Usable once installed: prints placement-manage's version.
check_placement() {
    "$1/bin/python" -c 'import placement.wsgi, psycopg2' &&
        "$1/bin/placement-manage" --version && [[ -x $1/bin/gunicorn ]]
}

tool_venv placement "${IRONIC_ALLOC_PLACEMENT_VENV:-$ROOT/.venv-placement}" \
    "$ROOT/tools/placement-requirements.txt" \
    "$ROOT/tools/placement-constraints.txt" \
    check_placement
