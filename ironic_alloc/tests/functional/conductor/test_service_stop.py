"""A graceful stop waits for the worker pool, up to
[conductor]graceful_shutdown_timeout."""

import threading

from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import fixtures as ia_fixtures

# Bound on waiting: it only keeps a hang from stalling the run.
WAIT = 30


class TestGracefulStop(base.DbTestCase):

    def _start(self, **opts):
        conductor = ia_fixtures.ConductorFixture(host='stopping-host',
                                                 **opts)
        self.useFixture(conductor)
        return conductor.service

    def _stop_in_thread(self, service):
        thread = threading.Thread(target=service.stop, daemon=True)
        thread.start()
        return thread

    def test_stop_waits_for_running_work(self):
        service = self._start(graceful_shutdown_timeout=0)
        release = threading.Event()
        started = threading.Event()
        finished = []

        def work():
            started.set()
            release.wait(WAIT)
            finished.append(release.is_set())

        # NOTE: the pool runs node actions and allocations.
        service.pool.submit(work)
        self.assertTrue(started.wait(WAIT))
        stopping = self._stop_in_thread(service)
        # The stop waits for the work (0 = no time limit) ...
        self.assertFalse(service.stopped.wait(1))
        self.assertEqual([], finished)
        release.set()
        # ... and ends once it is done.
        self.assertTrue(service.stopped.wait(WAIT))
        stopping.join(WAIT)
        self.assertEqual([True], finished)

    def test_stop_gives_up_after_timeout(self):
        service = self._start(graceful_shutdown_timeout=1)
        release = threading.Event()
        started = threading.Event()
        self.addCleanup(release.set)

        def work():
            started.set()
            release.wait(WAIT)

        service.pool.submit(work)
        self.assertTrue(started.wait(WAIT))
        self._stop_in_thread(service)
        # Stopped although the work never ended, and marked offline.
        self.assertTrue(service.stopped.wait(WAIT))
        self.assertFalse(release.is_set())
        row = conductor_obj.Conductor.get_by_hostname(self.context,
                                                      'stopping-host')
        self.assertFalse(row.online)
