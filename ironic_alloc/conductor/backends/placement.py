"""The Placement backend: nodes are mirrored as resource providers in
OpenStack Placement; an allocation's candidates come from the database
backend's matcher, each is claimed in Placement and then reserved in the
database like with the database backend (``placement_claims``,
``placement_sync``); an allocation group's claims are one POST
/allocations before its commit (``placement_groups``)."""

import threading

import futurist
from oslo_log import log

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.conductor.backends import base
from ironic_alloc.conductor.backends import placement_batch
from ironic_alloc.conductor.backends import placement_claims
from ironic_alloc.conductor.backends import placement_groups
from ironic_alloc.conductor.backends import placement_microversions
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.conf import allocation as allocation_conf
from ironic_alloc.conf import CONF
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)


def new_client(conf=CONF):
    """A Placement client asking for this backend's microversions."""
    return placement.PlacementClient(
        placement_microversions.microversion_for, conf)


class PlacementBackend(base.AllocationBackend):

    name = allocation_conf.PLACEMENT

    def __init__(self, client=None):
        super().__init__()
        self.context = ia_context.get_admin_context()
        self.client = client or new_client()
        self.synced_providers = placement_sync.SyncedProviders()
        self.foreign_holds = placement_claims.ForeignHolds()
        self.claim_batcher = placement_batch.ClaimBatcher(
            self.client, lambda: CONF.placement.claim_batch_size)
        # NOTE: one thread mirrors changed nodes to Placement after the
        # change, off the RPC and worker threads.
        self._sync_pool = None
        self._sync_queued = set()
        self._sync_lock = threading.Lock()

    @classmethod
    def check_configuration(cls, conf):
        auth_type = conf.placement.auth_type
        if not auth_type:
            return [(True, '[placement]auth_type is not set: set it (e.g. '
                           'password, with auth_url, username, password '
                           'and the project options) so conductors can '
                           'reach Placement.')], 'checked [placement]'
        try:
            # NOTE: builds keystoneauth1's plugin, session and adapter
            # from the options as a conductor does, sending nothing.
            new_client(conf)
        except exception.ConfigInvalid as exc:
            return [(True, 'The [placement] options do not load: %s'
                           % exc)], 'checked [placement]'
        problems = []
        if not conf.placement.sync_interval:
            problems.append((False, '[placement]sync_interval is 0: claims '
                                    'left by a Placement outage or a crash '
                                    'are never repaired.'))
        return problems, ('the [placement] options load (auth_type %s); '
                          'Placement itself is not contacted'
                          % auth_type)

    def start(self):
        self._sync_pool = futurist.ThreadPoolExecutor(max_workers=1)

    def stop(self, graceful=True):
        if self._sync_pool is not None:
            self._sync_pool.shutdown(wait=graceful)

    def periodic_tasks(self, reloading=False):
        # NOTE: at once at the start: nodes enrolled while no conductor
        # ran (or before the backend was switched) reach Placement only
        # through this pass.
        return [(CONF.placement.sync_interval, self.sync_all,
                 not reloading)]

    # Allocations

    def prefetch(self, allocation, criteria):
        return placement_claims.first_candidates(self.context, allocation,
                                                 criteria)

    def reserve(self, context, allocation, criteria, conductor_id,
                prefetched):
        try:
            return placement_claims.reserve_some_node(
                context, self.client, allocation, criteria, conductor_id,
                self.foreign_holds, self.claim_batcher,
                self.synced_providers, first=prefetched)
        except (exception.PlacementUnavailable,
                exception.PlacementRequestFailed) as exc:
            # NOTE: keystoneauth1's timeout and retries bound each
            # request; the allocation fails instead of waiting for
            # Placement.  A claim that may have been made is released by
            # the caller (release()) or by the periodic sync.
            raise exception.AllocationBackendFailed(
                reason='Placement could not be used: %s' % exc)

    def release(self, allocation_uuid):
        placement_claims.release_quietly(self.client, allocation_uuid)

    def explain(self, criteria):
        """The database's sentence, unless the free nodes that match are
        held in Placement by other consumers."""
        ids = self.dbapi.get_allocation_candidates(
            criteria, CONF.conductor.allocation_candidate_batch)
        if ids and len(self.foreign_holds):
            uuids = node_obj.Node.uuids_by_id(self.context, ids)
            held = sorted(uuid for uuid in uuids.values()
                          if uuid in self.foreign_holds)
            if held and len(held) == len(uuids):
                shown = ', '.join(held[:3]) + (', ...' if len(held) > 3
                                               else '')
                return ('the matching free nodes are held in Placement by '
                        'other consumers (%s)' % shown)
        return super().explain(criteria)

    # Allocation groups

    def unclaimable(self, context, node_ids):
        if not node_ids or not len(self.foreign_holds):
            return set()
        uuids = node_obj.Node.uuids_by_id(context, node_ids)
        return {node_id for node_id, uuid in uuids.items()
                if uuid in self.foreign_holds}

    def claim_group(self, context, plan, rows):
        return placement_groups.claim(context, self.client,
                                      self.foreign_holds,
                                      self.synced_providers, plan, rows)

    def release_group_claims(self, claims):
        if claims is not None:
            placement_groups.restore(self.client, claims)

    def release_failed_group(self, context, members):
        placement_groups.drop_failed(context, self.client, members)

    # Keeping Placement in step

    def sync_all(self):
        """The full pass: release the claims no allocation holds, then
        bring every provider in line with its node (and delete those of
        deleted nodes, now unclaimed).

        :returns: placement_sync.SyncReport.
        """
        # NOTE: one listing of the managed providers for both halves: with
        # a large fleet it is the biggest answer Placement gives.
        managed = placement_sync.managed_providers(self.client)
        stale = placement_claims.release_stale_claims(
            self.context, self.client, managed)
        if stale.released:
            LOG.info('Released %d stale Placement claims', stale.released)
        # NOTE: what the pass found replaces what allocations met since
        # the last one: a holder that let go is not skipped any longer.
        self.foreign_holds.refresh(stale.foreign)
        if stale.foreign:
            LOG.info('%d free nodes are held in Placement by other '
                     'consumers', len(stale.foreign))
        return placement_sync.sync_all(
            self.context, self.client, self.synced_providers,
            concurrency=CONF.placement.sync_concurrency, managed=managed)

    def node_changed(self, node_uuid):
        """Mirror one node to Placement soon (the full pass repairs a
        failure)."""
        with self._sync_lock:
            if node_uuid in self._sync_queued:
                return
            self._sync_queued.add(node_uuid)
        if not self._submit(self._sync_node, node_uuid):
            with self._sync_lock:
                self._sync_queued.discard(node_uuid)

    def node_id_changed(self, node_id):
        # NOTE: the uuid is read on the sync thread, not the caller's.
        self._submit(self._sync_node_id, node_id)

    def node_reserved(self, node_id):
        """Nothing to write: the allocation's claim holds the provider's
        one unit already, so Placement offers the node to nobody.  The
        provider is marked reserved by the next change of the node or
        full pass that finds it still allocated."""

    def _submit(self, func, *args):
        try:
            self._sync_pool.submit(func, *args)
            return True
        except RuntimeError:
            # NOTE: stopping: the next full pass of a conductor syncs it.
            return False

    def _sync_node_id(self, node_id):
        try:
            uuids = node_obj.Node.uuids_by_id(self.context, [node_id])
        except Exception:
            LOG.exception('Reading node %s failed', node_id)
            return
        for node_uuid in uuids.values():
            self.node_changed(node_uuid)

    def _sync_node(self, node_uuid):
        # NOTE: dequeued before the node is read, so a change made while
        # this sync runs queues another one.
        with self._sync_lock:
            self._sync_queued.discard(node_uuid)
        try:
            placement_sync.sync_node(self.context, self.client, node_uuid,
                                     self.synced_providers)
        except Exception:
            LOG.exception('Synchronising node %s to Placement failed; the '
                          'next full pass retries', node_uuid)
