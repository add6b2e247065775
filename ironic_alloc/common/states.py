"""Node provision and power states, with Ironic's names and transitions.

The table ``PROVISION_ACTIONS`` is the one place that says which action is
legal in which state, which intermediate state the node passes through
while a conductor works, and where it ends on success or failure.
"""

import collections

from ironic_alloc.common import exception

# Provision states (wire names are Ironic's).
NOSTATE = None
ENROLL = 'enroll'
VERIFYING = 'verifying'
MANAGEABLE = 'manageable'
AVAILABLE = 'available'
ACTIVE = 'active'
DEPLOYING = 'deploying'
DEPLOYWAIT = 'wait call-back'
DEPLOYFAIL = 'deploy failed'
DELETING = 'deleting'
DELETED = 'deleted'
CLEANING = 'cleaning'
CLEANWAIT = 'clean wait'
CLEANFAIL = 'clean failed'
ERROR = 'error'
REBUILD = 'rebuild'
ADOPTING = 'adopting'
ADOPTFAIL = 'adopt failed'
INSPECTING = 'inspecting'
INSPECTWAIT = 'inspect wait'
INSPECTFAIL = 'inspect failed'

# Provision actions (verbs of PUT /v1/nodes/{node}/states/provision).
VERBS = collections.OrderedDict([
    ('manage', 'manage'),
    ('provide', 'provide'),
    ('active', 'deploy'),
    ('deploy', 'deploy'),        # alias of 'active' since 1.73
    ('deleted', 'undeploy'),
    ('undeploy', 'undeploy'),    # alias of 'deleted' since 1.73
    ('rebuild', 'rebuild'),
    ('abort', 'abort'),
    ('adopt', 'adopt'),
])

# Verbs Ironic has that this service refuses with a clear 400.
UNSUPPORTED_VERBS = ('inspect', 'clean', 'rescue', 'unrescue', 'service',
                     'unhold')

Transition = collections.namedtuple(
    'Transition', ['working', 'target', 'success', 'failure'])
"""One provision action from one state.

working: provision_state while a conductor performs the action;
target: target_provision_state shown meanwhile;
success / failure: provision_state when the action finishes.
"""

# (state, action) -> Transition.  Actions are the canonical names of VERBS.
PROVISION_ACTIONS = {
    (ENROLL, 'manage'): Transition(VERIFYING, MANAGEABLE, MANAGEABLE,
                                   ENROLL),
    (MANAGEABLE, 'manage'): None,  # a no-op in Ironic too: rejected below
    (MANAGEABLE, 'provide'): Transition(CLEANING, AVAILABLE, AVAILABLE,
                                        CLEANFAIL),
    (MANAGEABLE, 'adopt'): Transition(ADOPTING, ACTIVE, ACTIVE, ADOPTFAIL),
    (ADOPTFAIL, 'adopt'): Transition(ADOPTING, ACTIVE, ACTIVE, ADOPTFAIL),
    (ADOPTFAIL, 'manage'): Transition(MANAGEABLE, None, MANAGEABLE,
                                      MANAGEABLE),
    (AVAILABLE, 'manage'): Transition(MANAGEABLE, None, MANAGEABLE,
                                      MANAGEABLE),
    (AVAILABLE, 'deploy'): Transition(DEPLOYING, ACTIVE, ACTIVE, DEPLOYFAIL),
    (ACTIVE, 'rebuild'): Transition(DEPLOYING, ACTIVE, ACTIVE, DEPLOYFAIL),
    (ACTIVE, 'undeploy'): Transition(DELETING, AVAILABLE, AVAILABLE,
                                     ERROR),
    (DEPLOYFAIL, 'deploy'): Transition(DEPLOYING, ACTIVE, ACTIVE,
                                       DEPLOYFAIL),
    (DEPLOYFAIL, 'rebuild'): Transition(DEPLOYING, ACTIVE, ACTIVE,
                                        DEPLOYFAIL),
    (DEPLOYFAIL, 'undeploy'): Transition(DELETING, AVAILABLE, AVAILABLE,
                                         ERROR),
    (ERROR, 'undeploy'): Transition(DELETING, AVAILABLE, AVAILABLE, ERROR),
    (ERROR, 'rebuild'): Transition(DEPLOYING, ACTIVE, ACTIVE, DEPLOYFAIL),
    (CLEANFAIL, 'manage'): Transition(MANAGEABLE, None, MANAGEABLE,
                                      MANAGEABLE),
    (INSPECTFAIL, 'manage'): Transition(MANAGEABLE, None, MANAGEABLE,
                                        MANAGEABLE),
    (DEPLOYWAIT, 'abort'): Transition(DEPLOYFAIL, None, DEPLOYFAIL,
                                      DEPLOYFAIL),
    (CLEANWAIT, 'abort'): Transition(CLEANFAIL, None, CLEANFAIL, CLEANFAIL),
    (INSPECTWAIT, 'abort'): Transition(INSPECTFAIL, None, INSPECTFAIL,
                                       INSPECTFAIL),
}
PROVISION_ACTIONS = {k: v for k, v in PROVISION_ACTIONS.items() if v}

# Undeploy passes through cleaning on its way back to available, as
# Ironic's automated cleaning does.
UNDEPLOY_CLEANING_STEP = CLEANING

# States a conductor is working in: a node found in one of these without a
# live lock holder was abandoned by a dead conductor.
WORKING_STATES = frozenset([VERIFYING, CLEANING, DEPLOYING, DELETING,
                            ADOPTING, INSPECTING])

# Where an abandoned action ends (Ironic fails it the same way).
ABANDONED_TO = {
    VERIFYING: ENROLL,
    CLEANING: CLEANFAIL,
    DEPLOYING: DEPLOYFAIL,
    DELETING: ERROR,
    ADOPTING: ADOPTFAIL,
    INSPECTING: INSPECTFAIL,
}

# Node fields may be changed only in these states (plus in maintenance).
UPDATE_ALLOWED_STATES = frozenset([
    DEPLOYFAIL, INSPECTING, INSPECTFAIL, INSPECTWAIT, CLEANFAIL, ERROR,
    VERIFYING, ADOPTFAIL, ENROLL, MANAGEABLE, AVAILABLE,
])

# A hold may have a lease, and its lease may release it, only while its
# node is in one of these states (the states in which DELETE frees a node),
# in maintenance or not: in any other the node is deployed or on its way
# in or out of a deployment, and its hold ends at tear-down, never by
# itself.  Unlike DELETE, maintenance is no exception: an expiry is
# nobody's decision.  The database layer applies the rule in SQL
# (statements.HOLD_LEASABLE); a refusal is LeaseOnDeployedNode.
LEASE_ALLOWED_STATES = UPDATE_ALLOWED_STATES

# A node may be deleted only in these states (or in maintenance).
DELETE_ALLOWED_STATES = frozenset([
    AVAILABLE, MANAGEABLE, ENROLL, ADOPTFAIL, CLEANFAIL, INSPECTFAIL,
])

ALL_PROVISION_STATES = frozenset([
    ENROLL, VERIFYING, MANAGEABLE, AVAILABLE, ACTIVE, DEPLOYING, DEPLOYWAIT,
    DEPLOYFAIL, DELETING, CLEANING, CLEANWAIT, CLEANFAIL, ERROR, ADOPTING,
    ADOPTFAIL, INSPECTING, INSPECTWAIT, INSPECTFAIL,
])

# Power states.
POWER_ON = 'power on'
POWER_OFF = 'power off'
REBOOT = 'rebooting'
SOFT_POWER_OFF = 'soft power off'
SOFT_REBOOT = 'soft rebooting'
POWER_TARGETS = {
    POWER_ON: POWER_ON,
    POWER_OFF: POWER_OFF,
    REBOOT: POWER_ON,
    SOFT_POWER_OFF: POWER_OFF,
    SOFT_REBOOT: POWER_ON,
}


def check_power_off_allowed(node, target):
    """The rule of disable_power_off (Bare Metal API 1.95), checked by the
    API and again by the conductor under the node lock.

    :raises: PowerOffDisabled (409) for a power ``target`` ending off on
        a node whose disable_power_off is set.
    """
    if node.disable_power_off and POWER_TARGETS.get(target) == POWER_OFF:
        raise exception.PowerOffDisabled(pstate=target, node=node.uuid)

# Allocation states.
ALLOCATING = 'allocating'
ALLOCATION_ACTIVE = 'active'
ALLOCATION_ERROR = 'error'
ALLOCATION_STATES = (ALLOCATING, ALLOCATION_ACTIVE, ALLOCATION_ERROR)

# Node provision states in which an allocation may be backfilled (1.58).
BACKFILL_STATES = (ACTIVE, DEPLOYING, DEPLOYWAIT)

# Provision states in which an allocation group may hand a node over from
# one allocation to another: those in which Ironic allows an allocation.
HANDOVER_STATES = (AVAILABLE,) + BACKFILL_STATES

# States of an allocation group (extension 1.3): allocating until one
# commit holds every member's node (active) or it fails holding nothing
# (error).
GROUP_ALLOCATING = ALLOCATING
GROUP_ACTIVE = ALLOCATION_ACTIVE
GROUP_ERROR = ALLOCATION_ERROR
GROUP_STATES = (GROUP_ALLOCATING, GROUP_ACTIVE, GROUP_ERROR)

# Kinds of members of an allocation group.
MEMBER_NEW = 'new'
MEMBER_HANDOVER = 'handover'
MEMBER_RELEASE = 'release'

# Kinds of holds (allocations.kind): an Ironic allocation, or a
# reservation of the reservations extension.  Both hold their node the
# same way; a reservation binds its node to its own instance_uuid.
ALLOCATION_KIND = 'allocation'
RESERVATION_KIND = 'reservation'

# The instance_info key a deploy of a reserved node names its
# reservation by (the conductor's deploy guard checks it; the API masks
# it from those who may not see that reservation).
RESERVATION_KEY = 'reservation_uuid'

# The faults a node can be given, as in Ironic: the ``fault`` list filter
# accepts only these (none is ever set here, since no hardware is driven,
# so a list by a valid fault is empty).
FAULTS = ('power failure', 'clean failure', 'rescue abort failure',
          'service failure')
