"""Rules of /v1/allocations and /v1/nodes/{node}/allocation.

A project caller who may not ``baremetal:allocation:get`` an allocation
is answered 404 for it.  Allocations created by a project caller belong
to its project unless ``baremetal:allocation:create_restricted`` allows
it to name another owner, and only land on nodes that owner owns or
leases.
"""

from oslo_policy import policy

from ironic_alloc.common.policies import base

ALLOCATION = '/allocations/{allocation_id}'


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=base.SCOPES)


rules = [
    _rule('baremetal:allocation:get',
          'rule:system_reader or rule:allocation_owner_reader',
          'Show an allocation. Project callers without it are answered '
          '404.',
          [('GET', ALLOCATION), ('GET', '/nodes/{node_ident}/allocation')]),
    _rule('baremetal:allocation:list', 'rule:project_reader',
          'List the allocations of the caller\'s own project.',
          [('GET', '/allocations')]),
    _rule('baremetal:allocation:list_all', 'rule:system_reader',
          'List allocations of every owner; without it, asking for '
          'another owner is a 403.', [('GET', '/allocations')]),
    _rule('baremetal:allocation:create',
          'rule:system_member or rule:project_member',
          'Create an allocation. A project caller\'s allocation is owned '
          'by its project.', [('POST', '/allocations')]),
    _rule('baremetal:allocation:create_restricted', 'rule:system_member',
          'Create an allocation for another owner than the caller\'s '
          'project (403 without it).', [('POST', '/allocations')]),
    _rule('baremetal:allocation:limit_exempt',
          'role:admin or system_scope:all',
          'Create allocations and reservations past the per-project '
          'limits of [limits] (administrators and system scoped callers '
          'by default); other callers get a 403 naming the limit reached.',
          [('POST', '/allocations'), ('POST', '/reservations')]),
    _rule('baremetal:allocation:explain',
          'rule:system_reader or rule:project_reader',
          'Explain a new allocation (POST /v1/allocations/explain, '
          'ironic_alloc extension 1.1): the caller also needs the rules '
          'of listing nodes, and a project caller counts only the nodes '
          'its project owns or leases, as in GET /v1/nodes.',
          [('POST', '/allocations/explain')]),
    _rule('baremetal:allocation:update',
          'rule:system_member or rule:allocation_owner_member',
          'Change the name or extra of an allocation.',
          [('PATCH', ALLOCATION)]),
    _rule('baremetal:allocation:delete',
          'rule:system_member or rule:allocation_owner_member',
          'Delete an allocation, freeing its node.',
          [('DELETE', ALLOCATION),
           ('DELETE', '/nodes/{node_ident}/allocation')]),
]
