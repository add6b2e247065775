"""The conductor service: registration, heartbeat, RPC server, worker pool
and periodic tasks, all on native threads."""

import random
import threading

import futurist
from futurist import periodics
from futurist import rejection
from futurist import waiters
from oslo_log import log
import oslo_messaging as messaging

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.common import rpc
from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor import manager
from ironic_alloc.conductor import placement_claims
from ironic_alloc.conductor import placement_sync
from ironic_alloc.conductor import rpcapi
from ironic_alloc.conf import allocation as allocation_conf
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.objects import node as node_obj

LOG = log.getLogger(__name__)


class ConductorService:
    """One conductor process (or the conductor half of the standalone one).

    start() registers the conductor under a new row id, serves RPC and runs
    periodic tasks; stop() stops taking work, lets the pool drain and marks
    the conductor offline.
    """

    def __init__(self, host=None):
        self.host = host or CONF.host
        self.context = ia_context.get_admin_context()
        self.conductor = None
        self.stopped = threading.Event()
        self._stopping = threading.Event()
        self._rpc_server = None
        self._pool = None
        self._periodic_worker = None
        self._periodic_thread = None
        self._periodic_spacings = None
        # NOTE: reload() restarts the periodic tasks while stop() may be
        # stopping them.
        self._periodic_lock = threading.Lock()
        self._heartbeat_thread = None
        # {allocation id: future of its work on the pool}
        self._in_flight = {}
        self._in_flight_lock = threading.Lock()
        # Futures of the pool's work, awaited by a graceful stop.
        self._pending = set()
        self._pending_lock = threading.Lock()
        # [allocation]backend = placement: the client, and one thread
        # that mirrors changed nodes to Placement after the change.
        self.placement_client = None
        self.synced_providers = None
        self._sync_pool = None
        self._sync_queued = set()
        self._sync_lock = threading.Lock()

    # Life cycle

    def start(self):
        self.conductor = conductor_obj.Conductor.register(
            self.context, self.host, CONF.conductor.conductor_group)
        LOG.info('Conductor %(host)s registered with id %(id)s',
                 {'host': self.host, 'id': self.conductor.id})
        # NOTE: locks this host held before a restart belong to threads
        # that no longer exist; release them and fail their actions.
        released = node_obj.Node.release_dead_reservations(
            CONF.conductor.heartbeat_timeout, states.ABANDONED_TO,
            hostname=self.host)
        for uuid, _host, state in released:
            LOG.warning('Released the lock of node %(node)s left by a '
                        'previous run of this host (state %(state)s)',
                        {'node': uuid, 'state': state})

        size = CONF.conductor.workers_pool_size
        self._pool = futurist.ThreadPoolExecutor(
            max_workers=size,
            check_and_reject=rejection.reject_when_reached(size))
        if CONF.allocation.backend == allocation_conf.PLACEMENT:
            self.placement_client = placement.PlacementClient()
            self.synced_providers = placement_sync.SyncedProviders()
            self._sync_pool = futurist.ThreadPoolExecutor(max_workers=1)
        self.manager = manager.ConductorManager(self)

        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat_loop, name='heartbeat', daemon=True)
        self._heartbeat_thread.start()

        self._start_periodics()

        target = messaging.Target(topic=rpc.CONDUCTOR_TOPIC,
                                  server=self.host)
        self._rpc_server = rpc.get_server(target, [self.manager])
        self._rpc_server.start()
        LOG.info('Conductor %s started', self.host)

    def stop(self, graceful=True):
        """Stop serving; with ``graceful`` wait for running work first."""
        if self._stopping.is_set():
            self.stopped.wait()
            return
        self._stopping.set()
        LOG.info('Conductor %s stopping', self.host)
        if self._rpc_server is not None:
            try:
                self._rpc_server.stop()
                self._rpc_server.wait()
            except Exception:
                LOG.exception('Stopping the RPC server failed')
        with self._periodic_lock:
            self._stop_periodics()
        if self._pool is not None:
            # NOTE: wait before shutting the pool down: futurist's workers
            # drop queued work once told to stop.
            if graceful:
                self._wait_for_work()
            self._pool.shutdown(wait=False)
        if self._sync_pool is not None:
            self._sync_pool.shutdown(wait=graceful)
        if graceful and self.conductor is not None:
            self._hand_back_allocations()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join()
        if self.conductor is not None:
            try:
                self.conductor.unregister()
            except Exception:
                LOG.exception('Could not mark conductor %s offline',
                              self.host)
        LOG.info('Conductor %s stopped', self.host)
        self.stopped.set()

    def reload(self):
        """Re-read the configuration files and apply the mutable options
        (SIGHUP).

        Options read where they are used take effect at once; oslo.log
        applies ``[DEFAULT]debug`` itself.  The periodic tasks are
        restarted when one of their intervals changed; work in flight and
        the RPC server are left alone.
        """
        CONF.mutate_config_files()
        with self._periodic_lock:
            if not self._stopping.is_set() and \
                    self._periodic_spacings is not None and \
                    self._periodic_spacings != _periodic_spacings():
                LOG.info('Periodic task intervals changed to %s; '
                         'restarting the periodic tasks',
                         _periodic_spacings())
                self._stop_periodics()
                self._start_periodics(reloading=True)
        LOG.info('Conductor %s reloaded its mutable options', self.host)

    # Work

    def spawn_with_lock(self, lock, rollback, func, *args):
        """Run ``func`` on the pool; it inherits the node lock.

        :param rollback: node values restored when the pool is full.
        :raises: NoFreeConductorWorker.
        """
        try:
            self._submit(func, *args)
        except futurist.RejectedSubmission:
            lock.node.update(rollback)
            lock.node.save()
            raise exception.NoFreeConductorWorker()
        lock.handoff()

    def _submit(self, func, *args):
        future = self._pool.submit(func, *args)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future):
        with self._pending_lock:
            self._pending.discard(future)

    def _wait_for_work(self):
        """Wait up to [conductor]graceful_shutdown_timeout for the pool's
        work; what is still running then is left to end with the process
        (its conditional writes keep that safe)."""
        with self._pending_lock:
            pending = list(self._pending)
        if not pending:
            return
        timeout = CONF.conductor.graceful_shutdown_timeout or None
        LOG.info('Waiting for %d tasks to finish', len(pending))
        _done, not_done = waiters.wait_for_all(pending, timeout)
        if not_done:
            LOG.warning('%(count)d tasks still running after '
                        '%(timeout)s seconds; stopping without them',
                        {'count': len(not_done), 'timeout': timeout})

    # Allocations

    def start_allocation(self, allocation_id):
        """Work on an allocation unless that work is already in flight.

        A full pool leaves the allocation for the next re-drive pass.

        :returns: True when the work was started now.
        """
        started, _future = self._start_allocation(allocation_id)
        return started

    def wait_for_allocation(self, allocation_id, timeout):
        """Work on an allocation (or join the work in flight) and wait for
        it at most ``timeout`` seconds.

        :returns: True when the work ended within the wait.
        """
        _started, future = self._start_allocation(allocation_id)
        if future is None:
            return False
        try:
            future.result(timeout)
        except futurist.TimeoutError:
            return False
        except Exception:
            # NOTE: logged by _allocation_done; the re-drive retries it.
            return False
        return True

    def _start_allocation(self, allocation_id):
        """:returns: (started now, future of the work or None)."""
        with self._in_flight_lock:
            if self._stopping.is_set():
                return False, None
            future = self._in_flight.get(allocation_id)
            if future is not None:
                return False, future
            try:
                future = self._submit(allocations.do_allocate, self.context,
                                      allocation_id, self.conductor.id,
                                      self.placement_client)
            except (futurist.RejectedSubmission, RuntimeError):
                LOG.warning('No free worker for allocation %s; it waits '
                            'for the next re-drive', allocation_id)
                return False, None
            self._in_flight[allocation_id] = future
        future.add_done_callback(
            lambda f: self._allocation_done(allocation_id, f))
        return True, future

    def _allocation_done(self, allocation_id, future):
        with self._in_flight_lock:
            self._in_flight.pop(allocation_id, None)
        if future.exception() is not None:
            LOG.error('Processing allocation %(id)s failed; it is retried '
                      'by the next re-drive: %(exc)s',
                      {'id': allocation_id, 'exc': future.exception()})
        elif future.result() is not None and self._sync_pool is not None:
            # NOTE: the reserved node is no longer pickable: reserved = 1
            # on its provider, on top of the claim.
            self._submit_sync(self._sync_node_id, future.result())

    def _redrive_allocations(self):
        """Restart work on this conductor's allocating rows (the database
        is the source of truth; casts only wake us up earlier)."""
        for allocation_id in db_api.get_instance().get_allocating_ids(
                self.conductor.id):
            self.start_allocation(allocation_id)

    def _take_over_allocations(self):
        dbapi = db_api.get_instance()
        alive = conductor_obj.Conductor.list_alive(
            self.context, CONF.conductor.heartbeat_timeout)
        alive_ids = [c.id for c in alive]
        if self.conductor.id not in alive_ids:
            # NOTE: our own heartbeat is late: we may be the dead one.
            return
        for allocation_id, owner in dbapi.get_orphan_allocations(alive_ids):
            if dbapi.take_over_allocation(allocation_id, owner,
                                          self.conductor.id):
                LOG.info('Took over allocation %(id)s from dead conductor '
                         '%(owner)s', {'id': allocation_id, 'owner': owner})
                self.start_allocation(allocation_id)
        if CONF.conductor.error_allocation_max_age:
            purged = dbapi.purge_error_allocations(
                CONF.conductor.error_allocation_max_age)
            if purged:
                LOG.info('Purged %d old allocations in state error', purged)

    def _hand_back_allocations(self):
        """Give unfinished allocations to a live peer at once, instead of
        leaving them until our heartbeat times out."""
        dbapi = db_api.get_instance()
        try:
            left = dbapi.get_allocating_ids(self.conductor.id)
            if not left:
                return
            peers = [c for c in conductor_obj.Conductor.list_alive(
                self.context, CONF.conductor.heartbeat_timeout)
                if c.id != self.conductor.id]
            if not peers:
                LOG.warning('%d allocations stay with this stopped '
                            'conductor: no live peer to hand them to; they '
                            'resume when it restarts or a peer takes them '
                            'over', len(left))
                return
            client = rpcapi.ConductorAPI()
            for allocation_id in left:
                peer = random.choice(peers)
                if dbapi.take_over_allocation(allocation_id,
                                              self.conductor.id, peer.id):
                    client.create_allocation(self.context, allocation_id,
                                             peer.hostname)
            LOG.info('Handed %d unfinished allocations to live peers',
                     len(left))
        except Exception:
            LOG.exception('Handing back allocations failed; peers take '
                          'them over after the heartbeat timeout')

    # Heartbeat and periodic tasks

    def _heartbeat_loop(self):
        # NOTE: the interval is read on every turn: it is mutable.
        while not self._stopping.wait(CONF.conductor.heartbeat_interval):
            try:
                alive = self.conductor.touch()
            except Exception:
                LOG.exception('Heartbeat of conductor %s failed; retrying',
                              self.host)
                continue
            LOG.debug('Conductor %s wrote its heartbeat', self.host)
            if not alive:
                # NOTE: another process registered this hostname: this one
                # is stale and its conditional writes fail from now on.
                LOG.error('Conductor %s was replaced by a newer process '
                          'of the same host; stopping', self.host)
                threading.Thread(target=self.stop, args=(False,),
                                 daemon=True).start()
                return

    def _periodic_tasks(self, reloading=False):
        """Periodic tasks enabled by the configuration (0 disables one).

        :param reloading: restarted for new intervals (SIGHUP), not at the
            start: the Placement pass then waits for its first interval.
        """
        tasks = [_periodic(CONF.conductor.allocation_redrive_interval,
                           self._redrive_allocations, run_immediately=True)]
        if CONF.conductor.check_allocations_interval:
            tasks.append(_periodic(CONF.conductor.check_allocations_interval,
                                   self._take_over_allocations))
        if CONF.conductor.sync_local_state_interval:
            tasks.append(_periodic(CONF.conductor.sync_local_state_interval,
                                   self._release_dead_locks))
        if self.placement_client is not None and CONF.placement.sync_interval:
            # NOTE: at once at the start: nodes enrolled while no
            # conductor ran (or before the backend was switched) reach
            # Placement only through this pass.
            tasks.append(_periodic(CONF.placement.sync_interval,
                                   self.sync_placement,
                                   run_immediately=not reloading))
        return tasks

    def _start_periodics(self, reloading=False):
        self._periodic_spacings = _periodic_spacings()
        tasks = [(t, None, None) for t in self._periodic_tasks(reloading)]
        # NOTE: periodic tasks get their own small pool so a busy worker
        # pool never delays take-over and lock recovery; one more thread
        # for the Placement full pass, which can take minutes.
        workers = 2 if self.placement_client is None else 3
        self._periodic_worker = periodics.PeriodicWorker(
            tasks, executor_factory=lambda: futurist.ThreadPoolExecutor(
                max_workers=workers))
        self._periodic_thread = threading.Thread(
            target=self._periodic_worker.start, name='periodics',
            daemon=True)
        self._periodic_thread.start()

    def _stop_periodics(self):
        """Stop the periodic tasks, waiting for a running one to end."""
        if self._periodic_worker is not None:
            self._periodic_worker.stop()
            self._periodic_worker.wait()
            self._periodic_thread.join()
            self._periodic_worker = None

    # Placement ([allocation]backend = placement)

    def sync_placement(self):
        """The full pass: release the claims no allocation holds, then
        bring every provider in line with its node (and delete those of
        deleted nodes, now unclaimed)."""
        # NOTE: one listing of the managed providers for both halves: with
        # a large fleet it is the biggest answer Placement gives.
        managed = placement_sync.managed_providers(self.placement_client)
        released = placement_claims.release_stale_claims(
            self.context, self.placement_client, managed)
        if released:
            LOG.info('Released %d stale Placement claims', released)
        return placement_sync.sync_all(
            self.context, self.placement_client, self.synced_providers,
            concurrency=CONF.placement.sync_concurrency, managed=managed)

    def sync_node_later(self, node_uuid):
        """Mirror one changed node to Placement soon, best effort (the
        full pass repairs a failure).  A no-op with the database backend.
        """
        if self._sync_pool is None:
            return
        with self._sync_lock:
            if node_uuid in self._sync_queued:
                return
            self._sync_queued.add(node_uuid)
        if not self._submit_sync(self._sync_node, node_uuid):
            with self._sync_lock:
                self._sync_queued.discard(node_uuid)

    def _submit_sync(self, func, *args):
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
            self.sync_node_later(node_uuid)

    def _sync_node(self, node_uuid):
        # NOTE: dequeued before the node is read, so a change made while
        # this sync runs queues another one.
        with self._sync_lock:
            self._sync_queued.discard(node_uuid)
        try:
            placement_sync.sync_node(self.context, self.placement_client,
                                     node_uuid, self.synced_providers)
        except Exception:
            LOG.exception('Synchronising node %s to Placement failed; the '
                          'next full pass retries', node_uuid)

    def _release_dead_locks(self):
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


def _periodic_spacings():
    """The configured intervals of the periodic tasks."""
    return (CONF.conductor.allocation_redrive_interval,
            CONF.conductor.check_allocations_interval,
            CONF.conductor.sync_local_state_interval,
            CONF.placement.sync_interval)


def _periodic(spacing, func, run_immediately=False):
    """A futurist periodic task calling ``func`` every ``spacing`` s.

    Errors are logged and the task keeps running.
    """
    @periodics.periodic(spacing, run_immediately=run_immediately)
    def task():
        try:
            func()
        except Exception:
            LOG.exception('Periodic task %s failed', func.__name__)
    task.__name__ = func.__name__
    return task
