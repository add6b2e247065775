#!/bin/bash
# Install ironic_alloc into .venv (when needed) and run it in standalone
# mode: the API and a conductor in one process on http://127.0.0.1:6385,
# with an SQLite database under ~/.local/state/ironic-alloc, no
# authentication and in-process RPC.  Stop it with Ctrl-C.
#
# Usage: tools/run-standalone.sh [ironic-alloc options, e.g. --debug or
#                                 --config-file FILE]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/ensure-venv.sh
source "$ROOT/tools/ensure-venv.sh"

ensure_venv requirements.txt

echo "[$(date +%H:%M:%S)] ironic-alloc-dbsync upgrade" >&2
"$VENV/bin/ironic-alloc-dbsync" "$@" upgrade

URL=http://127.0.0.1:6385
HDR='X-OpenStack-Ironic-API-Version: 1.79'
cat <<USAGE

ironic_alloc is starting on $URL (the default; see [api]host_ip/port).
From another terminal:

  # list nodes
  curl -s -H '$HDR' $URL/v1/nodes

  # enroll a node, then make it available
  curl -s -H '$HDR' -H 'Content-Type: application/json' \\
       -d '{"name": "node-0", "driver": "fake-hardware", "resource_class": "baremetal"}' \\
       $URL/v1/nodes
  curl -s -X PUT -H '$HDR' -H 'Content-Type: application/json' \\
       -d '{"target": "manage"}' $URL/v1/nodes/node-0/states/provision
  curl -s -X PUT -H '$HDR' -H 'Content-Type: application/json' \\
       -d '{"target": "provide"}' $URL/v1/nodes/node-0/states/provision

  # allocate an available node of resource class "baremetal"
  curl -s -H '$HDR' -H 'Content-Type: application/json' \
       -d '{"resource_class": "baremetal"}' $URL/v1/allocations
  curl -s -H '$HDR' $URL/v1/allocations

  # the same with the OpenStack client (python-openstackclient and
  # python-ironicclient, installed in another virtualenv)
  openstack baremetal --os-auth-type none --os-endpoint $URL node list

Stop it with Ctrl-C.

USAGE

exec "$VENV/bin/ironic-alloc" "$@"
