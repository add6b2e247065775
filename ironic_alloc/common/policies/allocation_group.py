"""Rules of /v1/allocation_groups (ironic_alloc extension 1.3).

A group's rules read like the allocation ones: its owner is the project
of the project-scoped caller who made it (``allocation.owner`` in the
target).  On top of the group's rule, every member is checked as if it
were made one by one: a new member by the allocation create rules (and
``create_restricted`` for another owner), a release or a hand-over by
``baremetal:allocation:delete`` on the allocation it ends.
"""

from oslo_policy import policy

from ironic_alloc.common.policies import base

GROUP = '/allocation_groups/{allocation_group_ident}'


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=base.SCOPES)


rules = [
    _rule('baremetal:allocation_group:get',
          'rule:system_reader or rule:allocation_owner_reader',
          'Show an allocation group and its members. Callers without it '
          'are answered 404.',
          [('GET', GROUP)]),
    _rule('baremetal:allocation_group:list',
          'rule:system_reader or rule:project_reader',
          'List allocation groups (a project caller sees its project\'s).',
          [('GET', '/allocation_groups')]),
    _rule('baremetal:allocation_group:list_all', 'rule:system_reader',
          'List the allocation groups of every project.',
          [('GET', '/allocation_groups')]),
    _rule('baremetal:allocation_group:create',
          'rule:system_member or rule:project_member',
          'Create an allocation group. Each member is also checked by the '
          'rules of the allocation it creates or ends.',
          [('POST', '/allocation_groups')]),
    _rule('baremetal:allocation_group:update',
          'rule:system_member or rule:allocation_owner_member',
          'Change the lease of an allocation group (and so of every '
          'member).',
          [('PATCH', GROUP)]),
    _rule('baremetal:allocation_group:delete',
          'rule:system_member or rule:allocation_owner_member',
          'Delete an allocation group, releasing every member.',
          [('DELETE', GROUP)]),
]
