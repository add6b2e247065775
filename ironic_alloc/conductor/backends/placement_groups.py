"""Allocation groups on the Placement backend: the claims of a solved
group in one ``POST /allocations`` (Placement's "POST multiple
allocations"), made before the group's one database commit.

One request carries, keyed by consumer (an allocation's uuid):

* every new member: one unit of its node's class on the node's provider,
  consumer generation null (the consumer does not exist yet);
* every hand-over: the source allocation X emptied, and the new member
  given the unit X held on the node's provider, so that Placement never
  holds neither claim;
* every release (the released half of a swap too): X emptied.

Placement writes all of it or nothing.  A 409 leaves nothing written: a
capacity refusal names the nodes that other consumers hold (remembered
in the conductor's ``ForeignHolds`` as a single claim's refusal is, see
``placement_claims``), and the group is solved again without them; a
generation conflict is sent again with fresh generations.

Leftovers: a conductor that died between the POST and the commit leaves
claims for members whose rows are still allocating.  As for a single
allocation (``placement_claims``), no read looks for them first: the
POST, whose members carry generation null, is refused with
``placement.concurrent_update`` when such a consumer exists.  Then the
members' claims are dropped and hand-over units given back to their
sources, in one POST, and the claim is sent again.

``restore`` undoes a POST whose commit did not happen (hand-over units
back to their sources, new consumers emptied), again in one POST.

A group that fails (whether or not it got as far as its POST) has the
same leftovers dropped by ``drop_failed``: without it a hand-over's
unit would stay with the failed member while its source still holds the
node in our database, which the periodic sync never repairs (it leaves
held nodes alone).
"""

import collections

from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.conductor.backends import placement_claims
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)

# What one group's POST wrote: ``written`` {consumer: {provider:
# resources}} (empty: the consumer was emptied), ``previous`` {consumer:
# its body before, or None when it held nothing}.
GroupClaims = collections.namedtuple('GroupClaims', 'written previous')


def _read(client, consumer):
    """A consumer's claims as ``GET /allocations/{consumer}`` gives them
    (``allocations`` {provider: resources}, generation None when it
    holds nothing)."""
    body = client.get('/allocations/%s' % consumer)
    body['allocations'] = {
        rp: {'resources': claim['resources']}
        for rp, claim in (body.get('allocations') or {}).items()}
    return body


def _emptied(body):
    return placement_claims.consumer_body(
        {}, body.get('consumer_generation'), body['project_id'],
        body['user_id'], body.get('consumer_type'))


class _GroupClaim:
    """Builds, sends and diagnoses one group's POST."""

    def __init__(self, context, client, holds, synced, plan, rows):
        self.context = context
        self.client = client
        self.holds = holds
        self.synced = synced
        self.plan = plan
        self.rows = rows
        # NOTE: the new members of a failed group (drop_failed) have no
        # node.
        node_ids = [m['node_id'] for m in plan['new'] + plan['handovers']
                    if m['node_id'] is not None]
        self.node_uuids = node_obj.Node.uuids_by_id(context, node_ids)
        # {member: the consumer generation sent for it}: null (a new
        # consumer), or 0 once a refusal suggests the empty record an
        # earlier refused request left, as placement_claims._Claimer
        # tries.
        self.generations = {}
        # {provider: the member claiming it}
        self.claimant = {}

    def _provider(self, member):
        try:
            return self.node_uuids[member['node_id']]
        except KeyError:
            raise exception.AllocationGroupClaimRefused(
                reason='Node %s of member %s was deleted.'
                       % (member['node_id'], member['uuid']),
                node_ids=[member['node_id']]) from None

    def _member_entry(self, uuid, provider, resources):
        row = self.rows[uuid]
        return placement_claims.consumer_body(
            {provider: {'resources': resources}},
            self.generations.get(uuid),
            row.owner or placement_claims.UNOWNED_PROJECT)

    def build(self):
        """:returns: (the POST's body, GroupClaims of what it writes)."""
        body = {}
        previous = {}
        self.claimant = {}
        for member in self.plan['releases']:
            before = _read(self.client, member['uuid'])
            if before['allocations']:
                body[member['uuid']] = _emptied(before)
                previous[member['uuid']] = before
        for member in self.plan['handovers']:
            provider = self._provider(member)
            source = member['from_uuid']
            before = _read(self.client, source)
            resources = before['allocations'].get(provider, {}).get(
                'resources') or {self._class_of(member['uuid']): 1}
            if before['allocations']:
                kept = {rp: claim for rp, claim
                        in before['allocations'].items() if rp != provider}
                entry = _emptied(before)
                entry['allocations'] = kept
                body[source] = entry
                previous[source] = before
            _unreserve(self.client, provider, resources)
            body[member['uuid']] = self._member_entry(member['uuid'],
                                                      provider, resources)
            previous[member['uuid']] = None
            self.claimant[provider] = member['uuid']
        for member in self.plan['new']:
            provider = self._provider(member)
            body[member['uuid']] = self._member_entry(
                member['uuid'], provider,
                {self._class_of(member['uuid']): 1})
            previous[member['uuid']] = None
            self.claimant[provider] = member['uuid']
        written = {consumer: dict(entry['allocations'])
                   for consumer, entry in body.items()}
        return body, GroupClaims(written, previous)

    def _class_of(self, uuid):
        rc = placement_sync.placement_resource_class(
            self.rows[uuid].resource_class)
        if rc is None:
            raise exception.AllocationBackendFailed(
                reason='Member %s: resource class %s has no Placement '
                       'name.' % (uuid, self.rows[uuid].resource_class))
        return rc

    def send(self):
        """POST the claims, again after a generation conflict, or once
        more after syncing providers Placement did not know or offer yet.

        :returns: GroupClaims.
        :raises: AllocationGroupClaimRefused, Placement errors.
        """
        synced = False
        for attempt in range(1, placement.CONCURRENT_UPDATE_ATTEMPTS + 1):
            body, claims = self.build()
            if not body:
                return claims
            try:
                self.client.post('/allocations', body, expected=(204,))
                return claims
            except exception.PlacementRequestFailed as exc:
                # NOTE: a 400 names a provider (or class) Placement does
                # not know yet: it lags behind our database.
                if exc.status != 400 or synced:
                    raise
                refusal = exc
            except exception.PlacementConflict as exc:
                if exc.error_code == placement.CONCURRENT_UPDATE:
                    LOG.debug('Group claim raced (attempt %(n)d): %(exc)s',
                              {'n': attempt, 'exc': exc})
                    self.drop_leftovers()
                    continue
                self._held_by_others()
                if synced:
                    raise exception.AllocationGroupClaimRefused(
                        reason='Placement refused the claims of the group: '
                               '%s' % exc) from None
                refusal = exc
            # NOTE: nothing else holds the providers, yet Placement refused
            # them: a provider reserved, missing or without the class in a
            # Placement that lags behind our database.  Synced now, the
            # claims are sent once more.
            LOG.info('Placement refused the claims of a group (%s); '
                     'syncing its nodes', refusal)
            synced = True
            for provider in sorted(self.claimant):
                placement_sync.sync_node(self.context, self.client,
                                         provider, self.synced)
        raise exception.AllocationGroupClaimRefused(
            reason='Placement kept refusing the claims of the group as '
                   'changed underneath.')

    def _held_by_others(self):
        """After a capacity refusal: the providers other consumers hold
        (remembered as foreign holds when those are not allocations of
        ours in progress).

        :raises: AllocationGroupClaimRefused naming them, when there are.
        """
        taken = {}
        for provider, member in sorted(self.claimant.items()):
            # NOTE: the source of a hand-over holds its unit until the
            # POST moves it.
            ours = set(self.claimant.values()) | {
                m['from_uuid'] for m in self.plan['handovers']
                if m['uuid'] == member}
            others = placement_claims.other_holders(
                self.context, self.client, self.holds, provider, ours)
            if others:
                taken[provider] = (member, others)
        if not taken:
            return
        node_ids = {node_id for node_id, uuid in self.node_uuids.items()
                    if uuid in taken}
        provider, (member, others) = sorted(taken.items())[0]
        raise exception.AllocationGroupClaimRefused(
            reason='Placement refused node %s for member %s: it is held '
                   'by consumer(s) %s.' % (provider, member,
                                           ', '.join(sorted(others))),
            node_ids=node_ids)

    def drop_leftovers(self):
        """Drop the claims members hold from an earlier attempt (a
        conductor that died after its POST), giving hand-over units back
        to their sources, in one POST."""
        body = {}
        sources = {m['uuid']: m for m in self.plan['handovers']}
        for uuid in sorted(m['uuid'] for m in self.plan['new']
                           + self.plan['handovers']):
            current = _read(self.client, uuid)
            if not current['allocations']:
                # NOTE: absent, or the empty record a refused request
                # left: the other generation is tried next.
                self.generations[uuid] = (
                    0 if self.generations.get(uuid) is None else None)
                continue
            self.generations[uuid] = None
            body[uuid] = _emptied(current)
            member = sources.get(uuid)
            if member is None:
                continue
            source = _read(self.client, member['from_uuid'])
            provider = self.node_uuids.get(member['node_id'])
            if source['allocations'] or provider not in current[
                    'allocations']:
                continue
            holder = placement_claims.allocation_by_uuid(
                self.context, member['from_uuid'])
            if holder is None or holder.node_id != member['node_id']:
                continue
            body[member['from_uuid']] = placement_claims.consumer_body(
                {provider: current['allocations'][provider]},
                source.get('consumer_generation'),
                holder.owner or placement_claims.UNOWNED_PROJECT)
        if body:
            LOG.info('Dropping the Placement claims left by an earlier '
                     'attempt for %s', ', '.join(sorted(body)))
            self.client.post('/allocations', body, expected=(204,))


def _unreserve(client, provider, resources):
    """A held node's provider has its unit reserved (placement_sync):
    free it for the hand-over, whose unit the source holds meanwhile, so
    nobody else can take it.  The next sync of the node reserves it
    again if it is still wanted so."""
    def step():
        body = client.get('/resource_providers/%s/inventories' % provider,
                          expected=(200, 404))
        inventories = (body or {}).get('inventories') or {}
        if not any(inventories.get(rc, {}).get('reserved')
                   for rc in resources):
            return
        for rc in resources:
            if rc in inventories:
                inventories[rc]['reserved'] = 0
        client.put('/resource_providers/%s/inventories' % provider, {
            'inventories': inventories,
            'resource_provider_generation':
                body['resource_provider_generation']})
    placement.retry_concurrent_update(step)


def claim(context, client, holds, synced, plan, rows):
    """Claim in Placement what a group's plan (groups._plan) gives, in one
    POST.

    :param rows: {member uuid: allocation} of the new and hand-over
        members.
    :returns: GroupClaims, for restore().
    :raises: AllocationGroupClaimRefused (nothing claimed),
        AllocationBackendFailed.
    """
    try:
        return _GroupClaim(context, client, holds, synced, plan,
                           rows).send()
    except (exception.PlacementUnavailable,
            exception.PlacementRequestFailed,
            exception.PlacementConflict) as exc:
        raise exception.AllocationBackendFailed(
            reason='Placement could not be used: %s' % exc)


def drop_failed(context, client, members):
    """After a group failed: drop the claims its new and hand-over
    members hold (an earlier owner's, which died after its POST), giving
    hand-over units back to their sources, in one POST.  Never raises:
    what is left is logged (the periodic sync releases claims no
    allocation holds).

    :param members: groups._failed_members().
    """
    def step():
        _GroupClaim(context, client, None, None, members, {}
                    ).drop_leftovers()
    try:
        placement.retry_concurrent_update(step)
        return True
    except Exception as exc:
        # NOTE: Placement's refusals and our database's errors alike: the
        # group's failure is written already and stands.
        LOG.warning('The Placement claims left for the members of a failed '
                    'allocation group could not be dropped; the periodic '
                    'sync releases those no allocation holds: %s', exc)
        return False


def restore(client, claims):
    """Undo a group's POST: sources get their claims back, new consumers
    are emptied, in one POST.  A consumer somebody changed since (a
    conductor that took the group over) is left alone.  Never raises: what
    is left is logged (the periodic sync releases claims no allocation
    holds)."""
    def step():
        body = {}
        for consumer, written in sorted(claims.written.items()):
            current = _read(client, consumer)
            if current['allocations'] != written:
                continue
            before = claims.previous.get(consumer)
            if before is None:
                if current['allocations']:
                    body[consumer] = _emptied(current)
                continue
            body[consumer] = placement_claims.consumer_body(
                before['allocations'], current.get('consumer_generation'),
                before['project_id'], before['user_id'],
                before.get('consumer_type'))
        if body:
            client.post('/allocations', body, expected=(204,))
    try:
        placement.retry_concurrent_update(step)
        return True
    except exception.IronicAllocException as exc:
        LOG.warning('The Placement claims of an allocation group could not '
                    'be undone; the periodic sync releases those no '
                    'allocation holds: %s', exc)
        return False
