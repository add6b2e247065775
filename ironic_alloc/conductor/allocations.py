"""Allocation processing: picking and reserving a node.

Every write here is conditional on the allocation still being allocating
and owned by this conductor (conductor_affinity), so a conductor presumed
dead that comes back can never overwrite a take-over.
"""

import random
import time

from oslo_log import log
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conductor import placement_claims
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj

LOG = log.getLogger(__name__)

dbapi = db_api.get_instance()

# Provision states a node may be in when its allocation is deleted (unless
# the node is in maintenance); the same as for changing a node.
DEALLOCATION_STATES = states.UPDATE_ALLOWED_STATES


def criteria_of(allocation):
    return {'resource_class': allocation.resource_class,
            'traits': list(allocation.traits or []),
            'candidate_uuids': list(allocation.candidate_nodes or []),
            'owner': allocation.owner}


def do_allocate(context, allocation_id, conductor_id,
                placement_client=None):
    """Find and reserve a node for an allocation, or set it to error.

    :param placement_client: with [allocation]backend = placement, the
        client through which nodes are claimed in Placement first.
    :returns: the node id reserved, or None.
    """
    # NOTE: the allocation and the first candidate search share one read
    # transaction: a connection check-out and two round trips fewer.
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
        first = (_first_candidates(allocation, criteria)
                 if placement_client is None else None)
    try:
        if first is not None:
            node_id = _reserve_some_node(allocation, criteria, conductor_id,
                                         *first)
        else:
            node_id = placement_claims.reserve_some_node(
                context, placement_client, allocation, criteria,
                conductor_id)
    except exception.AllocationLost:
        LOG.info('Allocation %s was deleted or taken over while being '
                 'processed', allocation.uuid)
        return None
    except (exception.PlacementUnavailable,
            exception.PlacementRequestFailed) as exc:
        # NOTE: keystoneauth1's timeout and retries bound each request;
        # the allocation fails instead of waiting for Placement.  A claim
        # that may have been made is released now or by the periodic
        # sync (the allocation is in error, so no longer holds it).
        if _fail(allocation, conductor_id,
                 'Placement could not be used: %s' % exc):
            placement_claims.release_quietly(placement_client,
                                             allocation.uuid)
        return None
    if node_id is not None:
        LOG.info('Allocation %(alloc)s reserved node %(node)s',
                 {'alloc': allocation.uuid, 'node': node_id})
        return node_id
    reason = 'No candidate node: %s.' % dbapi.explain_no_candidates(criteria)
    _fail(allocation, conductor_id, reason)
    return None


def _fail(allocation, conductor_id, reason):
    """Set the allocation to error unless it is no longer ours.

    :returns: True when it was set.
    """
    if not dbapi.fail_allocation(allocation.id, conductor_id, reason):
        return False
    LOG.info('Allocation %(alloc)s failed: %(reason)s',
             {'alloc': allocation.uuid, 'reason': reason})
    return True


def _search(criteria):
    # NOTE: a random starting point spreads concurrent allocations over the
    # candidate index so they rarely fight for one row.
    return dbapi.get_allocation_candidates(
        criteria, CONF.conductor.allocation_candidate_batch,
        pivot=uuidutils.generate_uuid())


def _first_candidates(allocation, criteria):
    """:returns: (ids of the node named like the allocation, tried first;
    the first batch of candidates, or None when a named node was found:
    it is searched only if that node cannot be reserved)."""
    named = []
    if allocation.name:
        named = dbapi.get_allocation_candidates(criteria, 1,
                                                name=allocation.name)
    return named, (None if named else _search(criteria))


def _reserve_some_node(allocation, criteria, conductor_id, named, batch):
    """:param named, batch: from _first_candidates().
    :returns: the reserved node id or None when candidates ran out."""
    for node_id in named:
        if dbapi.reserve_node_for_allocation(allocation.id, conductor_id,
                                             node_id, criteria):
            return node_id
    for attempt in range(CONF.conductor.allocation_attempts):
        if batch is None:
            batch = _search(criteria)
        if not batch:
            return None
        for node_id in batch:
            if dbapi.reserve_node_for_allocation(
                    allocation.id, conductor_id, node_id, criteria):
                return node_id
        batch = None
        # Every candidate was taken meanwhile (or locked): look again.
        time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    return None


def destroy(context, allocation_id, placement_client=None,
            node_states=DEALLOCATION_STATES):
    """Delete an allocation, freeing its node, and release its Placement
    claim when ``placement_client`` is given.

    The claim is released after the row is gone: a release that fails
    (Placement down) leaves a claim that no allocation holds, which the
    periodic sync releases; the node is free in our database at once.

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
    if placement_client is not None:
        placement_claims.release_quietly(placement_client, uuid)
    return node_id
