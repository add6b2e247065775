"""Re-drive, take-over and hand-back: no allocation and no node lock stays
with a conductor that does not work on it.

The database is the source of truth: an RPC cast only wakes a conductor
up earlier.  Each conductor re-drives its own ``allocating`` rows, takes
over the rows of conductors whose heartbeat is too old (a guarded UPDATE
of ``conductor_affinity``: one winner), hands its rows to a live peer
when it stops, and releases the node locks of dead conductors.
"""

import random

from oslo_log import log

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import metrics
from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor import rpcapi
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)


class TakeOver:

    def __init__(self, registration, allocation_worker):
        self.context = ia_context.get_admin_context()
        self.dbapi = db_api.get_instance()
        self._registration = registration
        self._worker = allocation_worker

    def release_own_locks(self):
        """Release the node locks this host held before a restart: they
        belong to threads that no longer exist; their actions fail."""
        released = node_obj.Node.release_dead_reservations(
            CONF.conductor.heartbeat_timeout, states.ABANDONED_TO,
            hostname=self._registration.host)
        for uuid, _host, state in released:
            LOG.warning('Released the lock of node %(node)s left by a '
                        'previous run of this host (state %(state)s)',
                        {'node': uuid, 'state': state})

    def redrive(self):
        """Restart work on this conductor's allocating rows."""
        for allocation_id in self.dbapi.get_allocating_ids(
                self._registration.id):
            if self._worker.start(allocation_id):
                metrics.allocation_redriven()
        # NOTE: a group's members are driven with their group, never one
        # by one (get_allocating_ids leaves them out).
        for group_id in self.dbapi.get_allocating_group_ids(
                self._registration.id):
            self._worker.start_group(group_id)

    def take_over(self):
        """Take the allocating rows of dead conductors."""
        me = self._registration.id
        alive_ids = [c.id for c in self._registration.alive_conductors()]
        if me not in alive_ids:
            # NOTE: our own heartbeat is late: we may be the dead one.
            return
        for allocation_id, owner in self.dbapi.get_orphan_allocations(
                alive_ids):
            if self.dbapi.take_over_allocation(allocation_id, owner, me):
                LOG.info('Took over allocation %(id)s from dead conductor '
                         '%(owner)s', {'id': allocation_id, 'owner': owner})
                metrics.allocation_taken_over()
                allocations.notify_outcome(ia_context.get_admin_context(),
                                           allocation_id, 'takeover',
                                           'success')
                self._worker.start(allocation_id)
        for group_id, owner in self.dbapi.get_orphan_allocation_groups(
                alive_ids):
            if self.dbapi.take_over_allocation_group(group_id, owner, me):
                LOG.info('Took over allocation group %(id)s from dead '
                         'conductor %(owner)s',
                         {'id': group_id, 'owner': owner})
                self._worker.start_group(group_id)

    def hand_back(self):
        """Give unfinished allocations to a live peer at once, instead of
        leaving them until our heartbeat times out."""
        me = self._registration.id
        try:
            self._hand_back_allocations(me)
        except Exception:
            LOG.exception('Handing back allocations failed; peers take '
                          'them over after the heartbeat timeout')
        try:
            self._hand_back_groups(me)
        except Exception:
            LOG.exception('Handing back allocation groups failed; peers '
                          'take them over after the heartbeat timeout')

    def _hand_back_allocations(self, me):
        client = rpcapi.ConductorAPI()
        self._hand_back(me, 'allocations',
                        self.dbapi.get_allocating_ids(me),
                        self.dbapi.take_over_allocation,
                        client.create_allocation)

    def _hand_back_groups(self, me):
        client = rpcapi.ConductorAPI()
        self._hand_back(me, 'allocation groups',
                        self.dbapi.get_allocating_group_ids(me),
                        self.dbapi.take_over_allocation_group,
                        client.create_allocation_group)

    def _hand_back(self, me, what, left, take_over, wake):
        """Give each row of ``left`` to a random live peer: the guarded
        ``take_over`` moves it (a peer that took it already wins), then
        ``wake`` casts to the new owner."""
        if not left:
            return
        peers = [c for c in self._registration.alive_conductors()
                 if c.id != me]
        if not peers:
            LOG.warning('%(count)d %(what)s stay with this stopped '
                        'conductor: no live peer to hand them to; they '
                        'resume when it restarts or a peer takes them '
                        'over', {'count': len(left), 'what': what})
            return
        for row_id in left:
            peer = random.choice(peers)
            if take_over(row_id, me, peer.id):
                wake(self.context, row_id, peer.hostname)
        LOG.info('Handed %(count)d unfinished %(what)s to live peers',
                 {'count': len(left), 'what': what})

    def release_dead_locks(self):
        """Release the node locks held by dead conductors."""
        try:
            released = node_obj.Node.release_dead_reservations(
                CONF.conductor.heartbeat_timeout, states.ABANDONED_TO)
        except Exception:
            LOG.exception('Releasing locks of dead conductors failed')
            return
        for uuid, host, state in released:
            LOG.warning('Released the lock of node %(node)s held by dead '
                        'conductor %(host)s (state %(state)s)',
                        {'node': uuid, 'host': host, 'state': state})
