"""Allocation processing: picking and reserving a node through the
conductor's backend (``conductor/backends``), failing and deleting.

Every write here is conditional on the allocation still being allocating
and owned by this conductor (conductor_affinity), so a conductor presumed
dead that comes back can never overwrite a take-over.
"""

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.common import matching
from ironic_alloc.common import metrics
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj

LOG = log.getLogger(__name__)

dbapi = db_api.get_instance()

# Provision states a node may be in when its allocation is deleted (unless
# the node is in maintenance); the same as for changing a node.
DEALLOCATION_STATES = states.UPDATE_ALLOWED_STATES


def criteria_of(allocation):
    """What the backends search for (matching.criteria())."""
    # NOTE: the API validated the expressions before the row was written.
    return matching.criteria(allocation.resource_class, allocation.traits,
                             allocation.candidate_nodes, allocation.owner,
                             allocation.match)


def do_allocate(context, allocation_id, conductor_id, backend):
    """Find and reserve a node for an allocation, or set it to error.

    :param backend: the conductor's allocation backend.
    :returns: the node id reserved, or None.
    """
    # NOTE: the allocation and what the backend reads first (the database
    # backend: the first candidates) share one read transaction: a
    # connection check-out and two round trips fewer.
    with dbapi.reading():
        try:
            allocation = allocation_obj.Allocation.get_by_id(context,
                                                             allocation_id)
        except exception.AllocationNotFound:
            return None
        if (allocation.state != states.ALLOCATING
                or allocation.conductor_affinity != conductor_id):
            return None
        criteria = criteria_of(allocation)
        prefetched = backend.prefetch(allocation, criteria)
    try:
        node_id = backend.reserve(context, allocation, criteria,
                                  conductor_id, prefetched)
    except exception.AllocationLost:
        LOG.info('Allocation %s was deleted or taken over while being '
                 'processed', allocation.uuid)
        return None
    except exception.AllocationBackendFailed as exc:
        # NOTE: what the backend may hold for the allocation goes now, or
        # with the backend's periodic work (the allocation is in error,
        # so it no longer holds anything).
        if _fail(context, allocation, conductor_id, str(exc),
                 metrics.FAILURE_BACKEND):
            backend.release(allocation.uuid)
        return None
    if node_id is not None:
        LOG.info('Allocation %(alloc)s reserved node %(node)s',
                 {'alloc': allocation.uuid, 'node': node_id})
        metrics.allocation_active(allocation.created_at)
        notify_outcome(context, allocation.id, 'process', 'success')
        return node_id
    explanation = explain(criteria)
    _fail(context, allocation, conductor_id, 'No candidate node: %s. %s' % (
        backend.explain(criteria), matching.funnel_line(explanation)),
        metrics.FAILURE_NO_CANDIDATE, explanation)
    return None


def explain(criteria):
    """The funnel of an allocation that found no node, as it is kept
    with the allocation (its ``explanation``).

    NOTE: an allocation with an owner is explained over the nodes that
    owner owns or leases: the explanation is shown to the owner's
    project, which never sees counts of other projects' nodes.
    """
    funnel = dbapi.explain_allocation(criteria, project=criteria['owner'])
    funnel.pop('examples')
    funnel['project'] = criteria['owner']
    return funnel


def _fail(context, allocation, conductor_id, reason, failure,
          explanation=None):
    """Set the allocation to error unless it is no longer ours.

    :param failure: the class of the reason for the metrics (one of
        metrics.FAILURE_REASONS).
    :returns: True when it was set.
    """
    if not dbapi.fail_allocation(allocation.id, conductor_id, reason,
                                 explanation=explanation):
        return False
    metrics.allocation_failed(failure)
    LOG.info('Allocation %(alloc)s failed: %(reason)s',
             {'alloc': allocation.uuid, 'reason': reason})
    notify_outcome(context, allocation.id, 'process', 'error')
    return True


def notify_outcome(context, allocation_id, action, status):
    """ironic_alloc's notification of what a conductor did with an
    allocation (``ironic_alloc.allocation.<action>.<status>``), with the
    allocation as the database now has it.  Read only when that
    notification is sent."""
    level = 'error' if status == 'error' else 'info'
    if not notifications.enabled(level):
        return
    with notifications.never_failing('allocation', action, status):
        try:
            allocation, node_uuid = \
                allocation_obj.Allocation.get_with_node_uuid(
                    context, id=allocation_id)
        except exception.AllocationNotFound:
            # NOTE: deleted meanwhile: its delete notifications tell.
            return
        allocation_obj.notify(context, allocation, 'allocation', action,
                              status, notifications.CONDUCTOR_SERVICE,
                              node_uuid=node_uuid)


def destroy(context, allocation_id, backend,
            node_states=DEALLOCATION_STATES):
    """Delete an allocation, freeing its node, then release what the
    backend holds for it.

    The backend releases after the row is gone: a release that fails (an
    external service down) leaves state that no allocation holds, which
    the backend's periodic work repairs; the node is free in our database
    at once.

    :param node_states: provision states the node must be in unless it is
        in maintenance; None: any.
    :returns: the id of the node the allocation had, or None.
    :raises: InvalidState when the node is deployed and not in
        maintenance, AllocationNotFound.
    """
    uuid, node_id = allocation_obj.Allocation.destroy_by_id(
        context, allocation_id, node_states=node_states)
    LOG.info('Allocation %(alloc)s deleted (node id %(node)s)',
             {'alloc': uuid, 'node': node_id})
    backend.release(uuid)
    return node_id
