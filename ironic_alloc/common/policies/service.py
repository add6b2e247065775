"""Rules of /v1/conductors, /v1/drivers and /metrics: operators only."""

from oslo_policy import policy

from ironic_alloc.common.policies import base


def _rule(name, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str='rule:system_reader', description=description,
        operations=[{'method': 'GET', 'path': p} for p in operations],
        scope_types=base.SCOPES)


rules = [
    _rule('baremetal:conductor:get', 'List and show conductors.',
          ['/conductors', '/conductors/{hostname}']),
    _rule('baremetal:driver:get', 'List and show drivers.',
          ['/drivers', '/drivers/{driver_name}']),
    _rule('baremetal:driver:get_properties',
          'Show the properties a driver accepts.',
          ['/drivers/{driver_name}/properties']),
    _rule('baremetal:metrics:get',
          'Read the Prometheus metrics of the service (every API '
          'worker\'s counters, allocations by state).',
          ['/metrics']),
]
