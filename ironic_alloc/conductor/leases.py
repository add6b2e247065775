"""Leases of holds: the expiry of allocations and reservations whose
lease ended, and the start of a deploy, which ends the lease of its
node's hold and must name the node's reservation.

Expiry is judged by the database clock, in SQL, never by a conductor's
clock.  Every conductor runs the expiry task: each release is one
transaction whose guarded DELETE (the lease still passed) decides which
of them released a hold, so each hold is released once, and a conductor
killed at any line leaves either the hold and its node as they were or
both released.
"""

from oslo_log import log

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.common import notifications
from ironic_alloc.common import states
from ironic_alloc.conductor import groups
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import allocation_group as group_obj

LOG = log.getLogger(__name__)

# Holds released per query of one expiry pass; a pass queries again until
# none is left, so a backlog does not wait for the next interval.
EXPIRY_BATCH = 100

RESERVATION_KEY = states.RESERVATION_KEY


class LeaseExpiry:
    """The periodic release of the holds whose lease ended.

    :param backend: the conductor's allocation backend, which releases
        what it holds for a released hold (as after a DELETE).
    """

    def __init__(self, backend):
        self.dbapi = db_api.get_instance()
        self._backend = backend

    def release_expired(self):
        """Release every hold whose lease ended, the allocation groups
        whose lease ended as a whole; returns how many holds this
        conductor released."""
        released = self._release_expired_groups()
        while True:
            ids = self.dbapi.get_expired_holds(EXPIRY_BATCH)
            done = [hold for hold in map(self._release, ids)
                    if hold is not None]
            released += sum(not hold.lease_cleared for hold in done)
            # NOTE: a batch in which nothing was released (or had its
            # lease removed) was taken by other conductors or is busy (a
            # node locked by a conductor): the next pass tries again.
            if len(ids) < EXPIRY_BATCH or not done:
                return released

    def _release_expired_groups(self):
        """Release the groups whose lease ended, each group and all its
        members in one transaction (its members never expire alone);
        returns how many members this conductor released."""
        released = 0
        while True:
            ids = self.dbapi.get_expired_groups(EXPIRY_BATCH)
            done = [group for group in map(self._release_group, ids)
                    if group is not None]
            released += sum(len(group.released) for group in done)
            if len(ids) < EXPIRY_BATCH or not done:
                return released

    def _release_group(self, group_id):
        context = ia_context.get_admin_context()
        before = None
        if notifications.enabled('info'):
            try:
                before = group_obj.AllocationGroup.get(context, id=group_id)
            except exception.AllocationGroupNotFound:
                return None
        group = self.dbapi.release_expired_group(group_id)
        if group is None:
            return None
        if group.lease_cleared:
            LOG.warning('Allocation group %(group)s keeps its members: its '
                        'lease ended at %(end)s (UTC, database clock), but '
                        'a member\'s node is deployed (%(nodes)s), so the '
                        'lease was removed; the group ends when it is '
                        'deleted',
                        {'group': group.uuid, 'end': group.expires_at,
                         'nodes': ', '.join('%s in %s' % node
                                            for node in group.deployed)})
            return group
        if before is not None:
            group_obj.notify(context, before, 'lease_expire', 'success',
                             notifications.CONDUCTOR_SERVICE)
        LOG.info('Allocation group %(group)s released with its %(count)d '
                 'members (nodes %(nodes)s): its lease ended at %(end)s '
                 '(UTC, database clock)',
                 {'group': group.uuid, 'count': len(group.released),
                  'nodes': ', '.join(m.node_uuid for m in group.released
                                     if m.node_uuid) or 'none',
                  'end': group.expires_at})
        # NOTE: as after the group's DELETE: what the backend holds
        # outside the database goes after the rows.
        groups.release_members(
            self._backend,
            [(member.uuid, member.node_id) for member in group.released])
        return group

    def _release(self, hold_id):
        """Release one hold whose lease ended; returns what the database
        did (None: nothing)."""
        before = _read_for_notification(hold_id)
        hold = self.dbapi.release_expired_hold(hold_id)
        if hold is None:
            return None
        if hold.lease_cleared:
            # NOTE: a deployed node's hold ends at tear-down; an ended
            # lease found on it (a write from before this rule, or a path
            # that moved the node without a deploy) is removed, never
            # acted on, and never found again.
            LOG.warning('%(kind)s %(hold)s keeps node %(node)s: its lease '
                        'ended at %(end)s (UTC, database clock), but the '
                        'node is in provision state "%(state)s", so the '
                        'lease was removed; the hold ends at tear-down',
                        {'kind': hold.kind.capitalize(), 'hold': hold.uuid,
                         'node': hold.node_uuid, 'end': hold.expires_at,
                         'state': hold.node_state})
            return hold
        if before is not None:
            allocation_obj.notify(
                ia_context.get_admin_context(), before, before.kind,
                'lease_expire', 'success',
                notifications.CONDUCTOR_SERVICE, node_uuid=hold.node_uuid)
        LOG.info('%(kind)s %(hold)s released (node %(node)s): its lease '
                 'ended at %(end)s (UTC, database clock)',
                 {'kind': hold.kind.capitalize(), 'hold': hold.uuid,
                  'node': hold.node_uuid or 'none', 'end': hold.expires_at})
        # NOTE: as after a DELETE: the rows are gone first, then the
        # backend lets go of what it holds outside the database; a
        # release that fails there is repaired by its periodic work.
        self._backend.release(hold.uuid)
        if hold.node_id is not None:
            self._backend.node_id_changed(hold.node_id)
        return hold


def _read_for_notification(hold_id):
    """The hold as its lease-expiry notification reports it, read before
    the release deletes it; None when that notification is not sent (or
    the hold is gone already)."""
    if not notifications.enabled('info'):
        return None
    try:
        # NOTE: by id, a row of either kind.
        return allocation_obj.Allocation.get_by_id(
            ia_context.get_admin_context(), hold_id)
    except exception.AllocationNotFound:
        return None


def check_deploy(node, hold):
    """The deploy guard: a node held by a reservation is deployed only by
    a request that names the reservation in the node's
    ``instance_info.reservation_uuid``; a reservation named there must
    hold the node.

    :param node: the node row (uuid, instance_info).
    :param hold: its hold row (uuid, kind), or None.
    :raises: ReservationRequired, ReservationNotHolding (409).
    """
    given = (node.instance_info or {}).get(RESERVATION_KEY)
    reservation = None
    if hold is not None and hold.kind == states.RESERVATION_KIND:
        reservation = hold.uuid
    if reservation is not None and given != reservation:
        raise exception.ReservationRequired(
            node=node.uuid, reservation=reservation,
            given='none' if given is None else repr(given))
    if given is not None and reservation is None:
        raise exception.ReservationNotHolding(
            reservation=given, node=node.uuid,
            holder='held by allocation %s' % hold.uuid if hold is not None
            else 'not held')


def begin_deploy(node, host, values):
    """Write the start of a deploy to ``node`` (locked by ``host``),
    ending the lease of its hold in the same transaction, once the deploy
    guard (check_deploy) passed.

    :raises: ReservationRequired, ReservationNotHolding, NodeChanged.
    """
    node.begin_deploy(host, values, check_deploy)
