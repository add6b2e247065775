"""Claiming nodes in OpenStack Placement ([allocation]backend = placement).

An allocation's candidates come from our database, from the same matcher
as the database backend's (``dbapi.get_allocation_candidates``: every
criterion and operator of the allocation), read from a random point of the
candidate index.  Placement is not asked for candidates: it is told which
node the allocation takes.  Each candidate's provider is claimed, one unit
of the node's custom resource class as Placement consumer
``allocation.uuid`` (``PUT /allocations/{consumer}``), and the claim is
followed by the database backend's own conditional reservation of the
node; a claim whose reservation loses is released.  The claim alone is
never trusted: openstack-placement on PostgreSQL with several workers can
give a one-unit provider to two consumers at once.  Our database stays
the one truth of who holds a node; Placement keeps its other users (Nova,
reporting tools) informed.

A claim Placement refuses because another consumer holds the provider
moves on to the next candidate.  When that consumer is not one of our
allocations in progress (Nova, or a claim of ours left over), the
provider is remembered in the conductor's ``ForeignHolds`` and later
searches skip it until the next full pass, which reads every such hold
again.  A refusal with nothing holding the provider means Placement lags
behind our database (a sync still queued or failed): the provider is
synced on the spot and claimed once more.

Claims that no allocation holds any more (a release during a Placement
outage, a conductor that died between claim and reservation) are found
by ``release_stale_claims``, which the periodic sync runs: Placement's own
list of consumers per provider is the record of what is left to release.
It releases only claims made by ironic_alloc (user ``CLAIM_USER``), and
reports the other consumers' holds for ``ForeignHolds``.
"""

import collections
import random
import threading
import time

from oslo_log import log
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.common import states
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
# this user, which tells our claims from other consumers'.
UNOWNED_PROJECT = 'ironic-alloc-unowned'
CLAIM_USER = 'ironic-alloc'

# How many times one candidate is claimed again after Placement answered
# placement.concurrent_update (another writer changed the provider or the
# consumer in between).
_CLAIM_ATTEMPTS = placement.CONCURRENT_UPDATE_ATTEMPTS
_PAGE = 500

# How many foreign holds a conductor remembers: a Placement shared with a
# large Nova may hold many providers, and a forgotten hold only costs one
# refused claim when a search meets it again.
FOREIGN_HOLDS_KEPT = 10000

# What one claim came to.
CLAIMED = 'claimed'
# Placement refused the unit with a 409: in use, reserved, or no
# inventory of the class on the provider.
REFUSED = 'refused'
# Placement does not know the provider (a 400).
UNKNOWN = 'unknown'
# The consumer held a claim of its own already, made before a restart or
# a take-over, and the node of that claim was reserved instead.
RESUMED = 'resumed'
# Claimed in a request shared with other allocations' claims.
_SHARED = 'shared'


def _known(client, path):
    """True unless Placement answers 404 for ``path``."""
    return client.request('GET', path,
                          expected=(200, 204, 404)).status_code != 404


def _consumer_path(allocation_uuid):
    return '/allocations/%s' % allocation_uuid


def claimed_providers(client, allocation_uuid):
    """(provider uuids, consumer generation) of a consumer's claims; the
    generation is None when the consumer holds nothing."""
    body = client.get(_consumer_path(allocation_uuid))
    return set(body.get('allocations') or {}), body.get('consumer_generation')


def consumers_of(client, provider_uuid):
    """The consumers holding anything on a provider (none when the
    provider is gone)."""
    body = client.get('/resource_providers/%s/allocations' % provider_uuid,
                      expected=(200, 404))
    return set((body or {}).get('allocations') or {})


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


def consumer_body(allocations, generation, project_id, user_id=CLAIM_USER,
                  consumer_type=None):
    """One consumer's claims as Placement takes them: the body of ``PUT
    /allocations/{consumer}`` or one value of ``POST /allocations``
    (``allocations`` {provider: {'resources': ...}}, empty to release;
    a ``generation`` of None: the consumer must not exist yet)."""
    return {'allocations': allocations,
            'consumer_generation': generation,
            'project_id': project_id, 'user_id': user_id,
            'consumer_type': consumer_type or CONSUMER_TYPE}


def claim_body(allocation, provider_uuid, resource_class,
               consumer_generation=None):
    """The body of ``PUT /allocations/{allocation.uuid}`` claiming one unit
    of ``resource_class`` on one provider (a consumer generation of None:
    the consumer must not exist yet)."""
    return consumer_body(
        {provider_uuid: {'resources': {resource_class: 1}}},
        consumer_generation, allocation.owner or UNOWNED_PROJECT)


class ForeignHolds:
    """The providers of our free nodes that another consumer holds in
    Placement, as one conductor last saw them (module doc).

    The candidate search skips them; a refused claim adds one, the full
    pass replaces them all with what it found.  Bounded by
    FOREIGN_HOLDS_KEPT: the oldest are forgotten first.
    """

    def __init__(self, kept=FOREIGN_HOLDS_KEPT):
        self._lock = threading.Lock()
        self._held = collections.OrderedDict()
        self._kept = kept

    def __contains__(self, provider_uuid):
        with self._lock:
            return provider_uuid in self._held

    def __len__(self):
        with self._lock:
            return len(self._held)

    def add(self, provider_uuid):
        with self._lock:
            self._held[provider_uuid] = None
            self._held.move_to_end(provider_uuid)
            while len(self._held) > self._kept:
                self._held.popitem(last=False)

    def discard(self, provider_uuid):
        with self._lock:
            self._held.pop(provider_uuid, None)

    def refresh(self, provider_uuids):
        """Replace what is remembered by what a full pass found."""
        with self._lock:
            self._held = collections.OrderedDict.fromkeys(
                sorted(provider_uuids)[:self._kept])


class _Claimer:
    """Claims, then reserves in the database, one allocation's node."""

    def __init__(self, context, client, allocation, criteria,
                 conductor_id, holds, batcher, synced=None):
        self.context = context
        self.batcher = batcher
        self.client = client
        self.allocation = allocation
        self.criteria = criteria
        self.conductor_id = conductor_id
        self.holds = holds
        self.synced = synced
        self.resource_class = placement_sync.placement_resource_class(
            allocation.resource_class)
        # NOTE: claims are sent for a consumer that does not exist yet
        # (generation null).  Placement answers a consumer that exists
        # with placement.concurrent_update: the first claim is how a claim
        # made earlier for this allocation is found, with no read before.
        self.consumer_generation = None
        self.claims_sent = 0
        self.resumed = None
        # The last 400 Placement answered a claim with, and whether the
        # resource class was known then.
        self.unknown = None
        self.class_known = None

    def take(self, node_id, node_uuid):
        """Claim the node's provider, then reserve the node.

        :returns: the id of the node reserved, or None.  It is another
            node when the allocation held a claim already (a restart, a
            take-over) and that node could be reserved.
        :raises: AllocationLost (the claim released when the allocation
            is gone), Placement errors.
        """
        if not self.batcher.begin(node_uuid):
            # NOTE: another allocation of this conductor is claiming it.
            return None
        try:
            outcome = self._claim_shared(node_uuid)
            if outcome == REFUSED and not self._held_by_others(node_uuid):
                # NOTE: nothing holds the provider, yet its unit is
                # refused: it is reserved, or has another class, in a
                # Placement that lags behind our database.
                outcome = self._repair_and_claim(node_uuid)
            elif outcome == UNKNOWN:
                outcome = self._repair_and_claim(node_uuid)
            if outcome == RESUMED:
                return self.resumed
            if outcome == CLAIMED and self.reserve_claimed(node_id):
                return node_id
            return None
        finally:
            self.batcher.end(node_uuid)

    def _claim_shared(self, provider_uuid):
        """_claim(), in a request shared with the claims of concurrent
        allocations (placement_batch) when the consumer is to be new."""
        if self.consumer_generation is not None:
            return self._claim(provider_uuid)
        outcome = self.batcher.claim(
            self.allocation.uuid, provider_uuid,
            claim_body(self.allocation, provider_uuid, self.resource_class),
            lambda: self._claim(provider_uuid), _SHARED)
        if outcome == _SHARED:
            self.claims_sent += 1
            return CLAIMED
        return outcome

    def _claim(self, provider_uuid):
        """One provider's claim, again after concurrent_update refusals.

        :returns: CLAIMED, REFUSED, UNKNOWN or RESUMED.
        """
        for attempt in range(1, _CLAIM_ATTEMPTS + 1):
            first = self.claims_sent == 0
            self.claims_sent += 1
            try:
                self.client.put(
                    _consumer_path(self.allocation.uuid),
                    claim_body(self.allocation, provider_uuid,
                               self.resource_class,
                               self.consumer_generation),
                    expected=(204,))
                self.consumer_generation = None
                return CLAIMED
            except exception.PlacementRequestFailed as exc:
                if exc.status != 400:
                    raise
                self.unknown = exc
                # NOTE: Placement answers 400 for a resource class it does
                # not know, and for a provider it does not know; in the
                # second case it keeps the consumer it made before it
                # looked, empty, at generation 0.
                self.class_known = _known(
                    self.client, '/resource_classes/%s' % self.resource_class)
                self.consumer_generation = 0 if self.class_known else None
                return UNKNOWN
            except exception.PlacementConflict as exc:
                if exc.error_code != placement.CONCURRENT_UPDATE:
                    LOG.debug('Allocation %(alloc)s: provider %(rp)s not '
                              'claimable: %(exc)s',
                              {'alloc': self.allocation.uuid,
                               'rp': provider_uuid, 'exc': exc})
                    return REFUSED
            held, generation = claimed_providers(self.client,
                                                 self.allocation.uuid)
            if held == {provider_uuid}:
                # NOTE: our own claim whose answer was lost.
                self.consumer_generation = None
                return CLAIMED
            if held:
                if not (first and len(held) == 1):
                    release(self.client, self.allocation.uuid)
                elif self._resume(next(iter(held))):
                    return RESUMED
                self.consumer_generation = None
            elif generation is not None:
                self.consumer_generation = generation
            else:
                # NOTE: an empty consumer is either absent (another
                # writer changed the provider in between) or the empty
                # record a refused claim left: try the other one.
                self.consumer_generation = (
                    0 if self.consumer_generation is None else None)
            LOG.debug('Allocation %(alloc)s: claim of %(rp)s raced '
                      '(attempt %(n)d)', {'alloc': self.allocation.uuid,
                                          'rp': provider_uuid, 'n': attempt})
        return REFUSED

    def _resume(self, provider_uuid):
        """Reserve the node of the one claim the allocation held already,
        or release that claim.

        :returns: True when the node was reserved (``self.resumed``).
        """
        node = _node_by_uuid(self.context, provider_uuid)
        if node is not None and self.reserve_claimed(node.id):
            LOG.info('Allocation %(alloc)s reused its Placement claim '
                     'of node %(node)s', {'alloc': self.allocation.uuid,
                                          'node': node.uuid})
            self.resumed = node.id
            return True
        if node is None:
            release(self.client, self.allocation.uuid)
        return False

    def _held_by_others(self, provider_uuid):
        return bool(other_holders(self.context, self.client, self.holds,
                                  provider_uuid, {self.allocation.uuid}))

    def _repair_and_claim(self, provider_uuid):
        """Sync a provider that lags behind its node, then claim it once
        more."""
        placement_sync.sync_node(self.context, self.client, provider_uuid,
                                 self.synced)
        outcome = self._claim(provider_uuid)
        if outcome != UNKNOWN:
            return outcome
        # NOTE: the sync could not give the provider a unit of the class
        # (resource classes that collide, a node changed meanwhile): the
        # node is not to be had now.  Any other 400 is ours to report.
        if self.class_known:
            raise self.unknown
        return REFUSED

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
            if allocation_by_uuid(self.context,
                                   self.allocation.uuid) is None:
                release_quietly(self.client, self.allocation.uuid)
            raise
        # NOTE: Placement said yes, our guard said no (the node changed,
        # another allocation won it, or Placement gave it twice).
        LOG.info('Allocation %(alloc)s claimed node %(node)s in Placement '
                 'but could not reserve it; releasing the claim',
                 {'alloc': self.allocation.uuid, 'node': node_id})
        release(self.client, self.allocation.uuid)
        self.consumer_generation = None
        return False

    def release_earlier_claim(self):
        """Release a claim made earlier for the allocation (before a
        restart or a take-over) when no claim was sent this time, which
        would have found it."""
        if self.claims_sent == 0:
            release(self.client, self.allocation.uuid)


def other_holders(context, client, holds, provider_uuid, ours):
    """The consumers other than ``ours`` that hold a provider; when none
    of them is an allocation of ours in progress, the provider is
    remembered in ``holds`` (the conductor's ForeignHolds)."""
    consumers = consumers_of(client, provider_uuid) - set(ours)
    if consumers and not any(_in_progress(context, consumer)
                             for consumer in consumers):
        LOG.info('Node %(node)s is held in Placement by %(consumers)s; '
                 'it is skipped until the next full pass',
                 {'node': provider_uuid,
                  'consumers': ', '.join(sorted(consumers))})
        holds.add(provider_uuid)
    return consumers


def _node_by_uuid(context, node_uuid):
    try:
        return node_obj.Node.get_by_uuid(context, node_uuid)
    except exception.NodeNotFound:
        return None


def _in_progress(context, allocation_uuid):
    """Whether ``allocation_uuid`` is an allocation of ours that is being
    processed or holds its node."""
    allocation = allocation_by_uuid(context, allocation_uuid)
    return allocation is not None and allocation.state in (
        states.ALLOCATING, states.ALLOCATION_ACTIVE)


def candidate_batch(context, criteria, pivot):
    """[(node id, node uuid)] of at most one batch of candidates from our
    database, in uuid order from ``pivot`` on, round the index."""
    ids = dbapi.get_allocation_candidates(
        criteria, CONF.conductor.allocation_candidate_batch, pivot=pivot)
    uuids = node_obj.Node.uuids_by_id(context, ids) if ids else {}
    return [(node_id, uuids[node_id]) for node_id in ids
            if node_id in uuids]


def first_candidates(context, allocation, criteria):
    """What reserve_some_node() reads first, in the allocation's read
    transaction: (ids of the node named like the allocation, tried first;
    the first batch of candidates from a random point of the index, or
    None when a named node was found: it is searched only if that node
    cannot be had)."""
    named = []
    if allocation.name:
        named = dbapi.get_allocation_candidates(criteria, 1,
                                                name=allocation.name)
    if named:
        return named, None
    # NOTE: a random starting point spreads concurrent allocations over
    # the candidate index so they rarely fight for one node.
    return named, candidate_batch(context, criteria,
                                  uuidutils.generate_uuid())


def reserve_some_node(context, client, allocation, criteria,
                      conductor_id, holds, batcher, synced=None,
                      first=None):
    """Pick, claim and reserve a node for an allocation.

    The node named like the allocation is tried first, then batches of
    candidates from a random point of our database's candidate index.
    Providers remembered in ``holds`` are skipped: a batch holding nothing
    else is followed by the next part of the index, round it once at
    most.  A batch whose candidates were all taken by concurrent
    allocations is followed by another random batch, as with the database
    backend.  A named node is tried even when it is remembered as held.

    :param holds: the conductor's ForeignHolds.
    :param batcher: the conductor's placement_batch.ClaimBatcher.
    :param synced: the conductor's SyncedProviders, for providers synced
        on the spot.
    :param first: first_candidates(), read in the allocation's read
        transaction.
    :returns: the reserved node id or None when candidates ran out.
    :raises: AllocationLost, PlacementUnavailable, PlacementRequestFailed.
    """
    claimer = _Claimer(context, client, allocation, criteria,
                       conductor_id, holds, batcher, synced)
    if claimer.resource_class is None:
        return None
    named, batch = first or first_candidates(context, allocation, criteria)
    if named:
        uuids = node_obj.Node.uuids_by_id(context, named)
        for node_id in named:
            if node_id in uuids:
                taken = claimer.take(node_id, uuids[node_id])
                if taken is not None:
                    return taken
    for attempt in range(CONF.conductor.allocation_attempts):
        if batch is None:
            batch = candidate_batch(context, criteria,
                                    uuidutils.generate_uuid())
        taken, tried = _walk(claimer, batch)
        if taken is not None:
            return taken
        if not tried:
            # NOTE: the whole index is held by other consumers, or empty.
            break
        batch = None
        # Every candidate tried was taken meanwhile (or locked): look
        # again elsewhere.
        time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
    claimer.release_earlier_claim()
    return None


def _walk(claimer, batch):
    """Claim the candidates of ``batch`` that no foreign hold keeps, and
    read on past batches of held ones only.

    :returns: (the reserved node id or None, whether any was tried).
    """
    seen = set()
    while batch:
        fresh = [(node_id, node_uuid) for node_id, node_uuid in batch
                 if node_id not in seen]
        if not fresh:
            # NOTE: round the whole index.
            return None, False
        seen.update(node_id for node_id, _uuid in fresh)
        tried = False
        for node_id, node_uuid in fresh:
            if node_uuid in claimer.holds:
                continue
            tried = True
            taken = claimer.take(node_id, node_uuid)
            if taken is not None:
                return taken, True
        if tried:
            return None, True
        # NOTE: not a scan: these nodes passed the matcher, and the next
        # batch starts where this one ended.
        batch = candidate_batch(claimer.context, claimer.criteria,
                                batch[-1][1])
    return None, False


# What a full pass's release of stale claims did.
StaleClaims = collections.namedtuple('StaleClaims', 'released foreign')


def release_stale_claims(context, client, managed=None):
    """Release the claims that no allocation holds: on every managed
    provider whose node has no allocation or is gone, each claim made by
    ironic_alloc (user CLAIM_USER) for a consumer that is no allocation of
    ours any more, or one that ended in error or holds another node.
    Claims of allocations still being processed are left alone, and so
    are other consumers' (Nova's...): those providers are reported as
    foreign holds.  A node with an allocation is skipped, and so is a
    provider Placement offers (its one unit is free, so nothing claims
    it): one Placement read per other free node only, and one per consumer
    found there that is not an allocation of ours in progress.  A claim
    left on a node with an allocation is found once the node is free
    again.

    :param managed: the uuids of the managed providers, when the caller
        has just listed them.
    :returns: StaleClaims: the number of consumers released, the set of
        providers that other consumers hold.
    :raises: PlacementUnavailable, PlacementRequestFailed.
    """
    if managed is None:
        managed = placement_sync.managed_providers(client)
    managed = list(managed)
    unclaimed = _offered_providers(context, client)
    released = 0
    foreign = set()
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
                count, held = _release_stale_on(context, client,
                                                provider_uuid, node)
                released += count
                if held:
                    foreign.add(provider_uuid)
    return StaleClaims(released, foreign)


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
    """:returns: (claims released, whether another consumer holds the
    provider)."""
    released = 0
    foreign = False
    for consumer in consumers_of(client, provider_uuid):
        allocation = allocation_by_uuid(context, consumer)
        if allocation is not None and (
                allocation.state == states.ALLOCATING
                or (allocation.state == states.ALLOCATION_ACTIVE
                    and node is not None
                    and allocation.node_id == node.id)):
            continue
        claim = client.get(_consumer_path(consumer))
        if claim.get('allocations') and claim.get('user_id') != CLAIM_USER:
            foreign = True
            continue
        LOG.info('Releasing the stale Placement claim of consumer '
                 '%(consumer)s on provider %(rp)s',
                 {'consumer': consumer, 'rp': provider_uuid})
        placement.retry_concurrent_update(
            _release_provider, client, consumer, provider_uuid)
        released += 1
    return released, foreign


def allocation_by_uuid(context, allocation_uuid):
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
    client.put(_consumer_path(consumer), consumer_body(
        kept, body['consumer_generation'], body['project_id'],
        body['user_id'], body.get('consumer_type')), expected=(204,))
