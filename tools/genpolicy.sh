#!/bin/bash
# Write etc/ironic_alloc/policy.yaml.sample: every default rule of the
# "ironic_alloc" oslo.policy.policies entry point, commented out.
set -eu
cd "$(dirname "$0")/.."
exec oslopolicy-sample-generator \
    --config-file tools/config/ironic-alloc-policy-generator.conf
