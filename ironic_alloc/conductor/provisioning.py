"""Provision and power actions of the fake driver.

There is no hardware behind this service: an action passes through its
intermediate state(s) (for [conductor]fake_action_delay seconds each) and
succeeds.  The state machine itself lives in common/states.py.
"""

import time

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)

# Actions refused while the node is in maintenance (Ironic does the same).
_NOT_IN_MAINTENANCE = ('provide', 'deploy', 'rebuild', 'undeploy', 'adopt')
_PROTECTED_FORBIDS = ('rebuild', 'undeploy')


def plan_action(node, action):
    """Check an action against the node and return its Transition.

    :raises: InvalidStateRequested, NodeInMaintenance, NodeProtected,
        NodeIsRetired.
    """
    transition = states.PROVISION_ACTIONS.get((node.provision_state, action))
    if transition is None:
        raise exception.InvalidStateRequested(
            action=action, node=node.uuid, state=node.provision_state)
    if node.maintenance and action in _NOT_IN_MAINTENANCE:
        raise exception.NodeInMaintenance(op=action, node=node.uuid)
    if node.protected and action in _PROTECTED_FORBIDS:
        raise exception.NodeProtected(node=node.uuid)
    if node.retired:
        # NOTE: Ironic's retirement (API 1.61): a retired node is never
        # made available again; tear-down ends in manageable.
        if action == 'provide':
            raise exception.NodeIsRetired(op=action, node=node.uuid)
        if transition.success == states.AVAILABLE:
            transition = transition._replace(target=states.MANAGEABLE,
                                             success=states.MANAGEABLE)
    return transition


def start_values(transition):
    """Node values written when an action starts."""
    return {'provision_state': transition.working,
            'target_provision_state': transition.target,
            'last_error': None}


def finish_values(node, action, transition, on_state=None):
    """Perform the fake action and return the node's final values.

    :param on_state: callback(values) that writes an intermediate state
        (undeploy passes through cleaning on its way to available).
    """
    _pause()
    values = {'provision_state': transition.success,
              'target_provision_state': None}
    if action == 'manage' and node.power_state is None:
        # NOTE: like Ironic's fake power interface, verification learns a
        # power state; nodes without one are never allocated.
        values['power_state'] = states.POWER_OFF
    elif action in ('deploy', 'rebuild', 'adopt'):
        values['power_state'] = states.POWER_ON
    elif action == 'undeploy':
        if on_state is not None:
            on_state({'provision_state': states.UNDEPLOY_CLEANING_STEP,
                      'target_provision_state': transition.success})
            _pause()
        values.update(instance_uuid=None, instance_info={},
                      instance_name=None)
        # NOTE: as in Ironic, tearing down leaves powered on a node whose
        # powering off is disabled.
        if not node.disable_power_off:
            values['power_state'] = states.POWER_OFF
    elif action == 'provide':
        values['power_state'] = node.power_state or states.POWER_OFF
    return values


def check_power_target(new_state):
    """:raises: InvalidParameterValue for an unknown power target."""
    if new_state not in states.POWER_TARGETS:
        raise exception.InvalidParameterValue(
            err='Unsupported target_state: %s. Valid targets are: %s'
            % (new_state, ', '.join(sorted(states.POWER_TARGETS))))


def power_target(new_state):
    """The power state a power action ends in."""
    return states.POWER_TARGETS[new_state]


def power_values(new_state, timeout=None):
    """Final values of a power action.

    :param timeout: seconds the action may take (None: no bound).  The
        fake hardware takes ``[conductor]fake_action_delay`` seconds.
    :raises: PowerStateFailure when that is longer than ``timeout``.
    """
    delay = CONF.conductor.fake_action_delay
    if timeout is not None and delay > timeout:
        time.sleep(timeout)
        raise exception.PowerStateFailure(pstate=power_target(new_state),
                                          timeout=timeout)
    _pause()
    return {'power_state': power_target(new_state),
            'target_power_state': None, 'last_error': None}


def _pause():
    if CONF.conductor.fake_action_delay:
        time.sleep(CONF.conductor.fake_action_delay)
