"""Rules of /v1/chassis: the operators of the deployment only.

As in Ironic, chassis are system resources: system readers see them,
system members change them, system admins create and delete them.  The
check strings name system-scoped personas, so a project-scoped token is
refused whatever the scope types (listed as for every other rule here).
"""

from oslo_policy import policy

from ironic_alloc.common.policies import base

CHASSIS = '/chassis/{chassis_id}'


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=base.SCOPES)


rules = [
    _rule('baremetal:chassis:get', 'rule:system_reader',
          'List and show chassis. The nodes of a chassis '
          '(/chassis/{chassis_id}/nodes) are listed under the rules of '
          'the node list, as in Ironic.',
          [('GET', '/chassis'), ('GET', '/chassis/detail'),
           ('GET', CHASSIS)]),
    _rule('baremetal:chassis:create', 'rule:system_admin',
          'Create a chassis.', [('POST', '/chassis')]),
    _rule('baremetal:chassis:update', 'rule:system_member',
          'Change the description or extra of a chassis.',
          [('PATCH', CHASSIS)]),
    _rule('baremetal:chassis:delete', 'rule:system_admin',
          'Delete a chassis that no node belongs to.',
          [('DELETE', CHASSIS)]),
]
