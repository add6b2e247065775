"""The conductor's periodic tasks, on a small pool of their own so a busy
worker pool never delays take-over and lock recovery."""

import threading

import futurist
from futurist import periodics
from oslo_log import log

LOG = log.getLogger(__name__)


class PeriodicTasks:
    """Runs the tasks a factory gives and restarts them when their
    intervals change (SIGHUP).

    :param tasks: ``f(reloading)`` returning a list of (spacing in
        seconds, callable, run at once), each read from the configuration
        when called; a spacing of 0 disables its task.
    """

    def __init__(self, tasks):
        self._tasks = tasks
        self._running_spacings = None
        self._worker = None
        self._thread = None
        # NOTE: a reload restarts the tasks while a stop may be stopping
        # them.
        self._lock = threading.Lock()
        self._stopped = False

    def start(self):
        with self._lock:
            self._start(reloading=False)

    def stop(self):
        with self._lock:
            self._stopped = True
            self._stop()

    def _spacings(self):
        return tuple(spacing for spacing, _func, _now in self._tasks(False))

    def restart_if_changed(self):
        """:returns: True when the intervals changed and the tasks were
        restarted."""
        with self._lock:
            if self._stopped or self._running_spacings is None or \
                    self._running_spacings == self._spacings():
                return False
            LOG.info('Periodic task intervals changed to %s; restarting '
                     'the periodic tasks', self._spacings())
            self._stop()
            self._start(reloading=True)
            return True

    def watchers(self):
        """futurist's watchers of the running tasks (name and counts)."""
        if self._worker is None:
            return []
        return list(self._worker.iter_watchers())

    def _start(self, reloading):
        self._running_spacings = self._spacings()
        tasks = [(_periodic(spacing, func, run_immediately), None, None)
                 for spacing, func, run_immediately in self._tasks(reloading)
                 if spacing]
        # NOTE: one thread per task at most: the tasks never wait for each
        # other (a Placement full pass can take minutes).
        workers = max(1, len(tasks))
        self._worker = periodics.PeriodicWorker(
            tasks, executor_factory=lambda: futurist.ThreadPoolExecutor(
                max_workers=workers))
        self._thread = threading.Thread(target=self._worker.start,
                                        name='periodics', daemon=True)
        self._thread.start()

    def _stop(self):
        """Stop the tasks, waiting for a running one to end."""
        if self._worker is not None:
            self._worker.stop()
            self._worker.wait()
            self._thread.join()
            self._worker = None


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
    # NOTE: futurist names a task (its watchers, its log lines) after
    # these.
    task.__name__ = func.__name__
    task.__qualname__ = func.__qualname__
    task.__module__ = func.__module__
    return task
