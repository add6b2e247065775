"""The conductor's worker pool, and the allocation worker with its
in-flight bookkeeping."""

import functools
import threading

import futurist
from futurist import rejection
from futurist import waiters
from oslo_log import log

from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor import groups
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)


class WorkerPool:
    """A bounded pool of threads for node actions and allocations; a
    graceful stop waits for what it runs."""

    def __init__(self):
        self.size = size = CONF.conductor.workers_pool_size
        self._pool = futurist.ThreadPoolExecutor(
            max_workers=size,
            check_and_reject=rejection.reject_when_reached(size))
        # Futures of the pool's work, awaited by a graceful stop.
        self._pending = set()
        self._pending_lock = threading.Lock()
        # What the metrics report: work running, work waiting for a thread.
        self._running = 0
        self._queued = 0

    def usage(self):
        """(work running, work waiting for a thread, threads)."""
        with self._pending_lock:
            return self._running, self._queued, self.size

    def submit(self, func, *args):
        """:raises: futurist.RejectedSubmission when the pool is full,
        RuntimeError once it is shut down."""
        with self._pending_lock:
            self._queued += 1
        try:
            future = self._pool.submit(self._run, func, *args)
        except BaseException:
            with self._pending_lock:
                self._queued -= 1
            raise
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def _run(self, func, *args):
        with self._pending_lock:
            self._queued -= 1
            self._running += 1
        try:
            return func(*args)
        finally:
            with self._pending_lock:
                self._running -= 1

    def spawn_with_lock(self, lock, rollback, func, *args):
        """Run ``func`` on the pool; it inherits the node lock.

        :param rollback: node values restored when the pool is full.
        :raises: NoFreeConductorWorker.
        """
        try:
            self.submit(func, *args)
        except futurist.RejectedSubmission:
            lock.node.update(rollback)
            lock.node.save()
            raise exception.NoFreeConductorWorker()
        lock.handoff()

    def _forget(self, future):
        with self._pending_lock:
            self._pending.discard(future)
            if future.cancelled():
                # NOTE: dropped before a thread ran it.
                self._queued -= 1

    def shutdown(self, graceful=True):
        """Stop taking work; with ``graceful`` first wait up to
        [conductor]graceful_shutdown_timeout for the running work (what
        still runs then ends with the process: its conditional writes
        keep that safe)."""
        # NOTE: wait before shutting the pool down: futurist's workers
        # drop queued work once told to stop.
        if graceful:
            self._wait_for_work()
        self._pool.shutdown(wait=False)

    def _wait_for_work(self):
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


class AllocationWorker:
    """Runs allocations.do_allocate on the pool, at most once at a time
    per allocation, and groups.do_allocate_group at most once at a time
    per allocation group.

    A full pool leaves an allocation for the next re-drive pass
    (takeover.TakeOver.redrive): its row stays allocating and ours.
    """

    def __init__(self, pool, registration, backend):
        self.context = ia_context.get_admin_context()
        self._pool = pool
        self._registration = registration
        self._backend = backend
        # {allocation id, or ('group', group id): future of its work on
        # the pool}
        self._in_flight = {}
        self._lock = threading.Lock()
        self._stopping = False

    def start(self, allocation_id):
        """Work on an allocation unless that work is already in flight.

        :returns: True when the work was started now.
        """
        started, _future = self._start(allocation_id)
        return started

    def start_group(self, group_id):
        """Work on an allocation group unless that work is already in
        flight.

        :returns: True when the work was started now.
        """
        started, _future = self._start(
            ('group', group_id), groups.do_allocate_group, group_id)
        return started

    def wait(self, allocation_id, timeout):
        """Work on an allocation (or join the work in flight) and wait for
        it at most ``timeout`` seconds.

        :returns: True when the work ended within the wait.
        """
        _started, future = self._start(allocation_id)
        if future is None:
            return False
        try:
            future.result(timeout)
        except futurist.TimeoutError:
            return False
        except Exception:
            # NOTE: logged by _done; the re-drive retries it.
            return False
        return True

    def stop(self):
        """Start no more work (what runs is the pool's to wait for)."""
        with self._lock:
            self._stopping = True

    def _start(self, key, work=None, work_id=None):
        """:param key: the in-flight key: an allocation id, or ('group',
            group id) with ``work`` and its ``work_id``.
        :returns: (started now, future of the work or None)."""
        if work is None:
            work, work_id = allocations.do_allocate, key
        with self._lock:
            if self._stopping:
                return False, None
            future = self._in_flight.get(key)
            if future is not None:
                return False, future
            try:
                future = self._pool.submit(
                    work, self.context, work_id, self._registration.id,
                    self._backend)
            except (futurist.RejectedSubmission, RuntimeError):
                LOG.warning('No free worker for %s; it waits for the next '
                            're-drive', _what(key))
                return False, None
            self._in_flight[key] = future
        future.add_done_callback(functools.partial(self._done, key))
        return True, future

    def _done(self, key, future):
        with self._lock:
            self._in_flight.pop(key, None)
        if future.exception() is not None:
            LOG.error('Processing %(what)s failed; it is retried by the '
                      'next re-drive: %(exc)s',
                      {'what': _what(key), 'exc': future.exception()})
        elif isinstance(key, tuple):
            for node_id in future.result() or ():
                self._backend.node_reserved(node_id)
        elif future.result() is not None:
            self._backend.node_reserved(future.result())


def _what(key):
    if isinstance(key, tuple):
        return 'allocation group %s' % key[1]
    return 'allocation %s' % key
