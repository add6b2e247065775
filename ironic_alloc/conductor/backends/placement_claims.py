"""Claiming nodes in OpenStack Placement ([allocation]backend = placement).

An allocation claims one unit of its node's custom resource class on the
node's resource provider, as Placement consumer ``allocation.uuid``.  The
claim alone is never trusted: openstack-placement on PostgreSQL with
several workers can give a one-unit provider to two consumers at once.
So every claim is followed by the database backend's own conditional
reservation of the node, and a claim whose reservation loses is released
again.  Our database stays the one truth of who holds a node;
Placement only narrows the search and keeps other users of Placement
(Nova...) informed.

Claims that no allocation holds any more (a release during a Placement
outage, a conductor that died between claim and reservation) are found
by ``release_stale_claims``, which the periodic sync runs: Placement's own
list of consumers per provider is the record of what is left to release.
"""

import random

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.common import states
from ironic_alloc.conductor.backends import database
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

dbapi = db_api.get_instance()

# Placement's consumer type of our claims (1.38): the allocation's uuid
# becomes the node's instance_uuid.
CONSUMER_TYPE = 'INSTANCE'
# Placement wants a project and a user for every consumer; allocations
# without an owner are booked under this project, and every claim under
# this user.
UNOWNED_PROJECT = 'ironic-alloc-unowned'
CLAIM_USER = 'ironic-alloc'

# How many times one candidate is claimed again after Placement answered
# placement.concurrent_update (another writer changed the provider or the
# consumer in between).
_CLAIM_ATTEMPTS = placement.CONCURRENT_UPDATE_ATTEMPTS
_PAGE = 500


def _known(client, path):
    """True unless Placement answers 404 for ``path``."""
    return client.request('GET', path,
                          expected=(200, 204, 404)).status_code != 404


def _consumer_path(allocation_uuid):
    return '/allocations/%s' % allocation_uuid


def claimed_providers(client, allocation_uuid):
    """(provider uuids, consumer generation) of a consumer's claims."""
    body = client.get(_consumer_path(allocation_uuid))
    return set(body.get('allocations') or {}), body.get('consumer_generation')


def release(client, allocation_uuid):
    """Delete every claim of a consumer; nothing to delete is fine.

    :raises: PlacementUnavailable, PlacementRequestFailed.
    """
    client.delete(_consumer_path(allocation_uuid), expected=(204, 404))


def release_quietly(client, allocation_uuid):
    """``release``, logging a failure instead of raising: the periodic
    sync releases what is left (module doc)."""
    try:
        release(client, allocation_uuid)
        return True
    except exception.IronicAllocException as exc:
        LOG.warning('The Placement claim of allocation %(alloc)s stays '
                    'until the next periodic sync: %(exc)s',
                    {'alloc': allocation_uuid, 'exc': exc})
        return False


def _claim_body(allocation, provider_uuid, resource_class):
    return {'allocations': {provider_uuid: {
                'resources': {resource_class: 1}}},
            'consumer_generation': None,
            'project_id': allocation.owner or UNOWNED_PROJECT,
            'user_id': CLAIM_USER,
            'consumer_type': CONSUMER_TYPE}


def claim(client, allocation, provider_uuid, resource_class):
    """Claim one unit of ``resource_class`` on one provider.

    :returns: True when the consumer holds the provider, False when the
        provider has no free unit (taken, reserved, another class).
    :raises: PlacementUnavailable, PlacementRequestFailed.
    """
    body = _claim_body(allocation, provider_uuid, resource_class)
    for attempt in range(1, _CLAIM_ATTEMPTS + 1):
        try:
            client.put(_consumer_path(allocation.uuid), body,
                       expected=(204,))
            return True
        except exception.PlacementRequestFailed as exc:
            # NOTE: Placement answers 400 for a class it does not know
            # (no provider has it yet).
            if exc.status == 400 and not _known(
                    client, '/resource_classes/%s' % resource_class):
                return False
            raise
        except exception.PlacementConflict as exc:
            if exc.error_code != placement.CONCURRENT_UPDATE:
                # NOTE: "capacity exceeded" (or an inventory that is not
                # there): another consumer has the node.
                LOG.debug('Allocation %(alloc)s: provider %(rp)s not '
                          'claimable: %(exc)s', {'alloc': allocation.uuid,
                                                 'rp': provider_uuid,
                                                 'exc': exc})
                return False
            # NOTE: the consumer may exist already: our own earlier PUT
            # whose answer was lost, or one of a dead conductor.
            held, _gen = claimed_providers(client, allocation.uuid)
            if held == {provider_uuid}:
                return True
            if held:
                release(client, allocation.uuid)
            LOG.debug('Allocation %(alloc)s: claim of %(rp)s raced '
                      '(attempt %(n)d)', {'alloc': allocation.uuid,
                                          'rp': provider_uuid, 'n': attempt})
    return False


class _Claimer:
    """Claims, then reserves in the database, one allocation's node."""

    def __init__(self, context, client, allocation, criteria,
                 conductor_id):
        self.context = context
        self.client = client
        self.allocation = allocation
        self.criteria = criteria
        self.conductor_id = conductor_id
        self.resource_class = placement_sync.placement_resource_class(
            allocation.resource_class)

    def reserve(self, node_id, node_uuid):
        """Claim the node's provider, then reserve the node.

        :returns: True when both succeeded; the claim is released when the
            reservation lost.
        :raises: AllocationLost (the claim released when the allocation
            is gone), Placement errors.
        """
        if not claim(self.client, self.allocation, node_uuid,
                     self.resource_class):
            return False
        return self.reserve_claimed(node_id)

    def reserve_claimed(self, node_id):
        try:
            if dbapi.reserve_node_for_allocation(
                    self.allocation.id, self.conductor_id, node_id,
                    self.criteria):
                return True
        except exception.AllocationLost:
            # NOTE: a conductor that took the allocation over works with
            # the same consumer: its claim is left alone.  A deleted
            # allocation's claim goes now (or with the full pass).
            if _allocation_by_uuid(self.context,
                                   self.allocation.uuid) is None:
                release_quietly(self.client, self.allocation.uuid)
            raise
        # NOTE: Placement said yes, our guard said no (the node changed,
        # another allocation won it, or Placement gave it twice).
        LOG.info('Allocation %(alloc)s claimed node %(node)s in Placement '
                 'but could not reserve it; releasing the claim',
                 {'alloc': self.allocation.uuid, 'node': node_id})
        release(self.client, self.allocation.uuid)
        return False

    def resume(self):
        """Reuse a claim made earlier for this allocation (a restart, a
        take-over), else release it.

        :returns: the reserved node id or None.
        """
        held, _gen = claimed_providers(self.client, self.allocation.uuid)
        if not held:
            return None
        if len(held) == 1:
            node = _node_by_uuid(self.context, next(iter(held)))
            if node is not None and self.reserve_claimed(node.id):
                LOG.info('Allocation %(alloc)s reused its Placement claim '
                         'of node %(node)s', {'alloc': self.allocation.uuid,
                                              'node': node.uuid})
                return node.id
        release(self.client, self.allocation.uuid)
        return None

    def try_nodes(self, node_ids):
        """Claim and reserve the first of ``node_ids`` (free nodes of our
        database) that works."""
        uuids = node_obj.Node.uuids_by_id(self.context, node_ids)
        for node_id in node_ids:
            if (node_id in uuids and self._claim_repairing(uuids[node_id])
                    and self.reserve_claimed(node_id)):
                return node_id
        return None

    def _claim_repairing(self, node_uuid):
        if claim(self.client, self.allocation, node_uuid,
                 self.resource_class):
            return True
        # NOTE: free in our database, not claimable in Placement: either
        # another consumer has it (a concurrent allocation) or the
        # provider lags behind the node (a sync still queued or failed,
        # a Placement that never saw it).  Repair it and try once more.
        placement_sync.sync_node(self.context, self.client, node_uuid)
        return claim(self.client, self.allocation, node_uuid,
                     self.resource_class)

    def placement_candidates(self):
        """Provider uuids Placement offers, in its (random) order."""
        query = ['resources=%s:1' % self.resource_class,
                 'limit=%d' % CONF.placement.allocation_candidate_limit]
        if self.criteria['traits']:
            query.append('required=%s' % ','.join(
                sorted(set(self.criteria['traits']))))
        try:
            body = self.client.get('/allocation_candidates?'
                                   + '&'.join(query))
        except exception.PlacementRequestFailed as exc:
            if exc.status == 400 and self._unknown_to_placement():
                return []
            raise
        found = []
        for request in body['allocation_requests']:
            for provider_uuid in request['allocations']:
                if provider_uuid not in found:
                    found.append(provider_uuid)
        return found

    def _unknown_to_placement(self):
        """True when Placement knows the resource class or a trait not
        (it answers 400 to a query naming them): no provider has it."""
        paths = ['/resource_classes/%s' % self.resource_class]
        paths += ['/traits/%s' % trait for trait in self.criteria['traits']]
        return not all(_known(self.client, path) for path in paths)


def _node_by_uuid(context, node_uuid):
    try:
        return node_obj.Node.get_by_uuid(context, node_uuid)
    except exception.NodeNotFound:
        return None


def reserve_some_node(context, client, allocation, criteria,
                      conductor_id):
    """Pick, claim and reserve a node for an allocation.

    Explicit candidate nodes and owners are searched in our database and
    their providers claimed directly: a limited, randomised candidate
    list from Placement could miss a few fitting nodes of a large fleet
    and end in a false "no candidate".  The node named like the
    allocation is tried first, as with the database backend.

    :returns: the reserved node id or None when candidates ran out.
    :raises: AllocationLost, PlacementUnavailable, PlacementRequestFailed.
    """
    claimer = _Claimer(context, client, allocation, criteria,
                       conductor_id)
    if claimer.resource_class is None:
        return None
    node_id = claimer.resume()
    if node_id is not None:
        return node_id
    if allocation.name:
        node_id = claimer.try_nodes(dbapi.get_allocation_candidates(
            criteria, 1, name=allocation.name))
        if node_id is not None:
            return node_id
    by_database = bool(criteria['candidate_uuids'] or criteria['owner'])
    for _attempt in range(CONF.conductor.allocation_attempts):
        if not by_database:
            node_id = _try_providers(claimer)
            if node_id is not None:
                return node_id
        # NOTE: when Placement offered nothing that could be had (none
        # fitted, or concurrent allocations took every node offered, as
        # happens when Placement does not randomise its answers and all
        # of them get the same few), or with candidate nodes or an
        # owner, our database's free nodes (a random part of the index)
        # are claimed directly, their providers repaired when they lag
        # behind, rather than answer "no candidate" falsely.
        node_ids = database.search(criteria)
        if not node_ids:
            return None
        node_id = claimer.try_nodes(node_ids)
        if node_id is not None:
            return node_id
    return None


def _try_providers(claimer):
    """Claim Placement's candidates in turn.

    :returns: the reserved node id, or None.
    """
    offered = claimer.placement_candidates()
    # NOTE: Placement randomises its answers only when configured to
    # (randomize_allocation_candidates); in its default order concurrent
    # allocations would all try the same node first.
    offered = random.sample(offered, len(offered))
    for provider_uuid in offered:
        node = _node_by_uuid(claimer.context, provider_uuid)
        if node is None:
            # NOTE: a provider of a node deleted since the last sync.
            continue
        if claimer.reserve(node.id, node.uuid):
            return node.id
    return None


def release_stale_claims(context, client, managed=None):
    """Release the claims that no allocation holds: on every managed
    provider whose node has no allocation or is gone, each consumer that
    is no allocation of ours any more, or one that ended in error or holds
    another node.  Claims of allocations still being processed are left
    alone.  A node with an allocation is skipped, and so is a provider
    Placement offers (its one unit is free, so nothing claims it): one
    Placement read per other free node only.  A claim left on a node with
    an allocation is found once the node is free again.

    :param managed: the uuids of the managed providers, when the caller
        has just listed them.
    :returns: the number of consumers released.
    :raises: PlacementUnavailable, PlacementRequestFailed.
    """
    if managed is None:
        managed = placement_sync.managed_providers(client)
    managed = list(managed)
    unclaimed = _offered_providers(context, client)
    released = 0
    for start in range(0, len(managed), _PAGE):
        page = [uuid for uuid in managed[start:start + _PAGE]
                if uuid not in unclaimed]
        if not page:
            continue
        nodes = {node.uuid: node for node in node_obj.Node.list(
            context, filters={'uuid_in': page})}
        for provider_uuid in page:
            node = nodes.get(provider_uuid)
            if node is None or node.allocation_id is None:
                released += _release_stale_on(context, client,
                                              provider_uuid, node)
    return released


def _offered_providers(context, client):
    """Managed providers with a free unit of their class, one listing per
    Placement class of the nodes."""
    offered = set()
    classes = {placement_sync.placement_resource_class(name)
               for name in node_obj.Node.resource_classes(context)}
    for rc in sorted(rc for rc in classes if rc):
        response = client.request(
            'GET', '/resource_providers?member_of=%s&resources=%s:1'
            % (placement_sync.MANAGED_AGGREGATE, rc), expected=(200, 400))
        # NOTE: 400 when Placement does not know the class yet: no
        # provider has it.
        if response.status_code == 200:
            offered.update(provider['uuid'] for provider in
                           response.json()['resource_providers'])
    return offered


def _release_stale_on(context, client, provider_uuid, node):
    path = '/resource_providers/%s/allocations' % provider_uuid
    body = client.get(path, expected=(200, 404))
    released = 0
    for consumer in (body or {}).get('allocations') or {}:
        allocation = _allocation_by_uuid(context, consumer)
        if allocation is not None and (
                allocation.state == states.ALLOCATING
                or (allocation.state == states.ALLOCATION_ACTIVE
                    and node is not None
                    and allocation.node_id == node.id)):
            continue
        LOG.info('Releasing the stale Placement claim of consumer '
                 '%(consumer)s on provider %(rp)s',
                 {'consumer': consumer, 'rp': provider_uuid})
        placement.retry_concurrent_update(
            _release_provider, client, consumer, provider_uuid)
        released += 1
    return released


def _allocation_by_uuid(context, allocation_uuid):
    try:
        return allocation_obj.Allocation.get_by_uuid(context,
                                                     allocation_uuid)
    except exception.AllocationNotFound:
        return None


def _release_provider(client, consumer, provider_uuid):
    """Remove one provider from a consumer's claims, keeping the others
    (an allocation active on another node keeps that node's claim)."""
    body = client.get(_consumer_path(consumer))
    kept = {rp: {'resources': claim['resources']}
            for rp, claim in (body.get('allocations') or {}).items()
            if rp != provider_uuid}
    if not kept:
        release(client, consumer)
        return
    client.put(_consumer_path(consumer), {
        'allocations': kept,
        'consumer_generation': body['consumer_generation'],
        'project_id': body['project_id'], 'user_id': body['user_id'],
        'consumer_type': body.get('consumer_type', CONSUMER_TYPE)},
        expected=(204,))
