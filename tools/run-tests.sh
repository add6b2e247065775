#!/bin/bash
# Install ironic_alloc and its test dependencies into .venv (when needed)
# and run the unit and functional tests on SQLite, the benchmark's own
# tests (tools/bench/tests), then schemathesis against the standalone
# service (ironic_alloc/tests/fuzzing).  Tests that need PostgreSQL,
# MariaDB, RabbitMQ or the Placement virtualenv skip, with the reason,
# when it is not there (CI=true makes them fail instead; see
# doc/source/contributor/testing.rst).  .ci/run runs every tier with every
# server.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
# shellcheck source=tools/ensure-venv.sh
source "$ROOT/tools/ensure-venv.sh"

ensure_venv requirements.txt test-requirements.txt || exit 1

export OS_STDOUT_CAPTURE=1 OS_STDERR_CAPTURE=1 OS_LOG_CAPTURE=1
status=0
for test_path in ironic_alloc/tests/unit ironic_alloc/tests/functional \
        tools/bench/tests; do
    echo "[$(date +%H:%M:%S)] tests in $test_path" >&2
    "$VENV/bin/stestr" --test-path="./$test_path" run || status=1
done
# NOTE: one worker: the tests share one schemathesis run.
echo "[$(date +%H:%M:%S)] schemathesis tests" >&2
"$VENV/bin/stestr" --test-path=./ironic_alloc/tests/fuzzing run \
    --concurrency=1 || status=1
if ((status)); then
    echo "Some tests failed." >&2
else
    echo "All tests passed." >&2
fi
exit $status
