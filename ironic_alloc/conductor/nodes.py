"""Rules for changing and deleting nodes, checked under the node lock."""

from ironic_alloc.common import exception
from ironic_alloc.common import states

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
    new_instance = changes.get('instance_uuid')
    if (new_instance and node.instance_uuid
            and new_instance != node.instance_uuid):
        raise exception.NodeAssociated(node=node.uuid,
                                       instance=node.instance_uuid)


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
