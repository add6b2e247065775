"""Rules of /v1/reservations (ironic_alloc extension 1.2).

A reservation is stored as an allocation of kind 'reservation' and its
rules read like the allocation ones: its owner is the project of the
project-scoped caller who made it (``allocation.owner`` in the target).
A project member reserves only nodes its project owns or leases (others
are "not found"), and sees only its project's reservations; system
readers see them all.
"""

from oslo_policy import policy

from ironic_alloc.common.policies import base

RESERVATION = '/reservations/{reservation_uuid}'


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=base.SCOPES)


rules = [
    _rule('baremetal:reservation:get',
          'rule:system_reader or rule:allocation_owner_reader',
          'Show a reservation. Callers without it are answered 404.',
          [('GET', RESERVATION)]),
    _rule('baremetal:reservation:list', 'rule:project_reader',
          'List the reservations of the caller\'s own project.',
          [('GET', '/reservations')]),
    _rule('baremetal:reservation:list_all', 'rule:system_reader',
          'List the reservations of every project.',
          [('GET', '/reservations')]),
    _rule('baremetal:reservation:create',
          'rule:system_member or rule:project_member',
          'Reserve a node. A project caller\'s reservation is owned by its '
          'project and may hold only a node the project owns or leases.',
          [('POST', '/reservations')]),
    _rule('baremetal:reservation:update',
          'rule:system_member or rule:allocation_owner_member',
          'Renew the lease of a reservation.',
          [('PATCH', RESERVATION)]),
    _rule('baremetal:reservation:delete',
          'rule:system_member or rule:allocation_owner_member',
          'Delete a reservation, freeing its node.',
          [('DELETE', RESERVATION)]),
]
