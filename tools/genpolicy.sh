#!/bin/bash
# Write etc/ironic_alloc/policy.yaml.sample with oslopolicy-sample-generator
# once ironic_alloc registers its policies (an "oslo.policy.policies" entry
# point named ironic_alloc); until then there is nothing to generate.
set -eu
cd "$(dirname "$0")/.."

if python - <<'PY'
import importlib.metadata
import sys

names = {ep.name for ep in
         importlib.metadata.entry_points(group='oslo.policy.policies')}
sys.exit(0 if 'ironic_alloc' in names else 1)
PY
then
    exec oslopolicy-sample-generator \
        --config-file tools/config/ironic-alloc-policy-generator.conf
fi
echo "ironic_alloc registers no policies yet (no oslo.policy.policies" \
     "entry point): no policy sample to generate."
