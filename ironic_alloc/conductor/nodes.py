"""Rules for changing and deleting nodes, checked under the node lock."""

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.objects import allocation as allocation_obj

# Fields that may change while a provision action is running.
_CHANGEABLE_WHILE_WORKING = frozenset(['maintenance', 'maintenance_reason',
                                       'fault', 'extra', 'description'])


def check_update(node, changes):
    """:raises: InvalidState, NodeAssociated."""
    if (node.provision_state in states.WORKING_STATES
            and set(changes) - _CHANGEABLE_WHILE_WORKING):
        raise exception.InvalidState(
            'Node %s can not be updated while a state transition is in '
            'progress.' % node.uuid)
    if changes.get('protected') and node.provision_state != states.ACTIVE:
        raise exception.InvalidState(
            'Protection can only be set on nodes in provision state '
            '"active"; node %s is "%s".' % (node.uuid,
                                            node.provision_state))
    _check_protected(node, changes)
    _check_retired(node, changes)
    new_instance = changes.get('instance_uuid')
    if (new_instance and node.instance_uuid
            and new_instance != node.instance_uuid):
        raise exception.NodeAssociated(node=node.uuid,
                                       instance=node.instance_uuid)


def check_reservation(context, node, changes):
    """A node held by a reservation keeps the reservation's instance: a
    change or removal of its instance_uuid is refused, naming the
    reservation (the reservation is deleted instead).  Read under the
    node's lock, which every reservation's write is guarded by, so the
    hold cannot appear or change during the update.

    :raises: NodeReserved.
    """
    if 'instance_uuid' not in changes or node.allocation_id is None:
        return
    try:
        holder = allocation_obj.Allocation.get_by_id(context,
                                                     node.allocation_id)
    except exception.AllocationNotFound:
        return
    if holder.kind == 'reservation':
        action = ('changing its instance_uuid'
                  if changes['instance_uuid'] else
                  'removing its instance_uuid')
        raise exception.NodeReserved(node=node.uuid,
                                     reservation=holder.uuid,
                                     action=action)


def _check_protected(node, changes):
    """Ironic's rules for ``protected_reason`` (API 1.48): it is set only
    on a protected node, and unsetting ``protected`` clears it in
    ``changes``.

    :raises: InvalidParameterValue.
    """
    protected = changes.get('protected', node.protected)
    if changes.get('protected_reason') and not protected:
        raise exception.InvalidParameterValue(
            err='protected_reason can only be set on a protected node.')
    if 'protected' in changes and not protected:
        changes['protected_reason'] = None


def _check_retired(node, changes):
    """Ironic's rules for ``retired`` (API 1.61); unsetting ``retired``
    also clears ``retired_reason`` in ``changes``.

    :raises: InvalidState, InvalidParameterValue.
    """
    retired = changes.get('retired', node.retired)
    if changes.get('retired_reason') and not retired:
        raise exception.InvalidParameterValue(
            err='retired_reason can only be set on a retired node.')
    if 'retired' in changes:
        if not retired:
            changes['retired_reason'] = None
        elif (not node.retired
              and node.provision_state == states.AVAILABLE):
            # NOTE: an available node could be allocated any moment: it
            # is moved to manageable before it is retired.
            raise exception.InvalidState(
                'Node %s can not be retired in provision state "%s". Move '
                'it to "%s" first.' % (node.uuid, states.AVAILABLE,
                                       states.MANAGEABLE))


def check_destroy(node):
    """:raises: NodeProtected, InvalidState, NodeAssociated."""
    if node.protected:
        raise exception.NodeProtected(node=node.uuid)
    if node.maintenance:
        return
    if node.provision_state not in states.DELETE_ALLOWED_STATES:
        raise exception.InvalidState(
            'Can not delete node "%(node)s" while it is in provision state '
            '"%(state)s". Valid provision states to start deletion are: '
            '%(valid)s, or set the node into maintenance mode.'
            % {'node': node.uuid, 'state': node.provision_state,
               'valid': ', '.join(sorted(states.DELETE_ALLOWED_STATES))})
    if node.instance_uuid:
        raise exception.NodeAssociated(node=node.uuid,
                                       instance=node.instance_uuid)
