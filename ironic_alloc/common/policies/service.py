"""Rules of /v1/conductors and /v1/drivers: operators only."""

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
]
