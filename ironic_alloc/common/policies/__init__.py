"""Default policy rules of the Bare Metal API, under Ironic's names.

``list_rules`` is the ``oslo.policy.policies`` entry point read by
oslopolicy-sample-generator and the documentation.
"""

import itertools

from ironic_alloc.common.policies import allocation
from ironic_alloc.common.policies import allocation_group
from ironic_alloc.common.policies import base
from ironic_alloc.common.policies import chassis
from ironic_alloc.common.policies import node
from ironic_alloc.common.policies import reservation
from ironic_alloc.common.policies import service


def list_rules():
    return list(itertools.chain(base.rules, node.rules, allocation.rules,
                                allocation_group.rules, reservation.rules, chassis.rules,
                                service.rules))
