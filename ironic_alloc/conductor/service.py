"""The conductor service: it puts the conductor's parts together, serves
RPC and runs the periodic tasks, all on native threads.

The parts, each in its own module and given explicitly to whoever uses
it:

* ``registration.Registration``: the conductor's row and heartbeat;
* ``workers.WorkerPool`` and ``workers.AllocationWorker``: the bounded
  pool and the allocations in flight on it;
* ``takeover.TakeOver``: re-drive, take-over, hand-back, dead locks;
* ``leases.LeaseExpiry``: the release of holds whose lease ended;
* ``purge.ErrorAllocationPurge``: the purge of old error allocations;
* the allocation backend (``backends.load()``) and its background work;
* ``periodics.PeriodicTasks``: the periodic tasks of all of them;
* ``manager.ConductorManager``: the RPC endpoints.

With ``[metrics]port`` set, the conductor also serves its Prometheus
metrics (``common/metrics.py``) on ``[metrics]host``.
"""

import threading

from oslo_log import log
import oslo_messaging as messaging

from ironic_alloc.common import metrics
from ironic_alloc.common import notifications
from ironic_alloc.common import rpc
from ironic_alloc.conductor import backends
from ironic_alloc.conductor import leases
from ironic_alloc.conductor import manager
from ironic_alloc.conductor import periodics
from ironic_alloc.conductor import purge
from ironic_alloc.conductor import registration
from ironic_alloc.conductor import takeover
from ironic_alloc.conductor import tallies
from ironic_alloc.conductor import workers
from ironic_alloc.conf import CONF
from ironic_alloc.objects import allocation as allocation_obj

LOG = log.getLogger(__name__)


class ConductorService:
    """One conductor process (or the conductor half of the standalone one).

    start() registers the conductor under a new row id, serves RPC and runs
    periodic tasks; stop() stops taking work, lets the pool drain and marks
    the conductor offline.
    """

    def __init__(self, host=None):
        self.host = host or CONF.host
        self.stopped = threading.Event()
        self._stopping = threading.Event()
        self.registration = registration.Registration(
            self.host, on_replaced=self._replaced)
        self.backend = None
        self.pool = None
        self.allocation_worker = None
        self.takeover = None
        self.lease_expiry = None
        self.error_purge = None
        self.periodic_tasks = None
        self.manager = None
        self._rpc_server = None
        self._metrics_server = None

    @property
    def conductor(self):
        """The conductor's row (None before start())."""
        return self.registration.conductor

    # Life cycle

    def start(self):
        self.registration.register()
        self.backend = backends.load()
        self.pool = workers.WorkerPool()
        metrics.watch_worker_pool(self.host, self.pool.usage)
        metrics.set_allocation_counter(allocation_obj.Allocation.count_by_state)
        self.allocation_worker = workers.AllocationWorker(
            self.pool, self.registration, self.backend)
        self.takeover = takeover.TakeOver(self.registration,
                                          self.allocation_worker)
        self.takeover.release_own_locks()
        self.lease_expiry = leases.LeaseExpiry(self.backend)
        self.error_purge = purge.ErrorAllocationPurge()
        self.tally_fold = tallies.TallyFold()
        self.backend.start()
        self.manager = manager.ConductorManager(
            self.host, self.pool, self.allocation_worker, self.backend)

        self.registration.start_heartbeat()
        self.periodic_tasks = periodics.PeriodicTasks(self._periodic_tasks)
        self.periodic_tasks.start()

        target = messaging.Target(topic=rpc.CONDUCTOR_TOPIC,
                                  server=self.host)
        self._rpc_server = rpc.get_server(target, [self.manager])
        self._rpc_server.start()
        if CONF.metrics.port:
            self._metrics_server = metrics.start_exporter(CONF.metrics.host,
                                                          CONF.metrics.port)
            LOG.info('Conductor %(host)s serves its metrics on '
                     'http://%(addr)s:%(port)s/metrics',
                     {'host': self.host, 'addr': CONF.metrics.host,
                      'port': CONF.metrics.port})
        LOG.info('Conductor %s started', self.host)

    def stop(self, graceful=True):
        """Stop serving; with ``graceful`` wait for running work first."""
        if self._stopping.is_set():
            self.stopped.wait()
            return
        self._stopping.set()
        LOG.info('Conductor %s stopping', self.host)
        if self.allocation_worker is not None:
            self.allocation_worker.stop()
        if self._rpc_server is not None:
            try:
                self._rpc_server.stop()
                self._rpc_server.wait()
            except Exception:
                LOG.exception('Stopping the RPC server failed')
        if self.periodic_tasks is not None:
            self.periodic_tasks.stop()
        if self.pool is not None:
            self.pool.shutdown(graceful)
        if self.backend is not None:
            self.backend.stop(graceful)
        if graceful and self.takeover is not None:
            self.takeover.hand_back()
        self.registration.stop_heartbeat()
        self.registration.unregister()
        metrics.forget_worker_pool(self.host)
        # NOTE: after the work stopped, so that its last notifications
        # are sent too.
        notifications.stop()
        if self._metrics_server is not None:
            metrics.stop_exporter(self._metrics_server)
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
        self.reset()

    def reset(self):
        """Apply the mutable options once the files were re-read.

        For a launcher that re-reads them itself (oslo.service's
        ``Launcher.restart()`` calls ``reset()`` after that).
        """
        if not self._stopping.is_set() and self.periodic_tasks is not None:
            self.periodic_tasks.restart_if_changed()
        LOG.info('Conductor %s reloaded its mutable options', self.host)

    def _replaced(self):
        self.stop(graceful=False)

    # Periodic tasks

    def _periodic_tasks(self, reloading):
        """Every part's periodic tasks."""
        return [
            (CONF.conductor.allocation_redrive_interval,
             self.takeover.redrive, True),
            (CONF.conductor.check_allocations_interval,
             self.takeover.take_over, False),
            (CONF.conductor.sync_local_state_interval,
             self.takeover.release_dead_locks, False),
            # NOTE: not a take-over setting: every conductor releases
            # expired holds, whatever those say (the option's minimum is
            # 1, so it is never disabled).
            (CONF.reservation.expiry_interval,
             self.lease_expiry.release_expired, True),
            # NOTE: not a take-over setting either: the purge runs when
            # take-over checks are disabled.
            (self.error_purge.spacing(),
             self.error_purge.purge_error_allocations, False),
            # NOTE: every conductor folds (one at a time), whatever the
            # take-over settings are; the option's minimum is 1.
            (CONF.conductor.node_tally_fold_interval,
             self.tally_fold.fold, True),
        ] + self.backend.periodic_tasks(reloading)
