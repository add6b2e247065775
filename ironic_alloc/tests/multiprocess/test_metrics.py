"""Prometheus metrics scraped from a real deployment under load: one
``ironic-alloc-api`` with two worker processes (multiprocess mode), two
``ironic-alloc-conductor`` processes each with its exporter, RabbitMQ
and PostgreSQL or MariaDB.

The counters must agree with what was done: the API's count of
``POST /v1/allocations`` answered 201, summed over its workers, equals the
allocations the clients were given and the rows in the database; the
allocations-by-state gauge equals the rows; the conductors' POST-to-active
histograms together count every active allocation once.  A worker killed
with ``kill -9`` must not take its counts with it.
"""

import os
import signal

import requests
import sqlalchemy as sa

from ironic_alloc.tests.functional import test_metrics as functional
from ironic_alloc.tests.multiprocess import fixtures as mp
from ironic_alloc.tests.multiprocess import test_fault_tolerance

NODES = 40
ALLOCATIONS = 36
API_WORKERS = 2
CREATED = ('ironic_alloc_api_requests_total',
           frozenset({'method': 'POST', 'route': 'v1/allocations',
                      'status': '201'}.items()))


def _worker_pids(pid):
    """Pids of the live worker processes of the API process ``pid``."""
    found = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != 'Z':
            found.add(int(entry))
    return found


class TestMetricsUnderLoad(test_fault_tolerance.MultiProcessTestCase):

    def scrape(self, url):
        resp = requests.get(url + '/metrics', timeout=mp.REQUEST_TIMEOUT)
        self.assertEqual(200, resp.status_code, resp.text[:500])
        return functional.parse(resp.text)

    def rows(self, state):
        with self.cluster.engine.connect() as conn:
            return conn.execute(sa.text(
                "SELECT count(*) FROM allocations WHERE state = :s "
                "AND kind = 'allocation'"), {'s': state}).scalar()

    def test_counters_agree_with_allocations(self):
        self.cluster.rebuild_schema()
        self.cluster.load_nodes(NODES)
        exporters = {}
        for name in ('c1', 'c2'):
            port = mp.free_port()
            self.cluster.start_conductor(name, options={
                'metrics': {'host': '127.0.0.1', 'port': str(port)}})
            exporters[name] = 'http://127.0.0.1:%d' % port
        url = self.cluster.start_api(workers=API_WORKERS)
        api_proc = self.cluster.apis[0][0]
        self.wait_for('%d API workers' % API_WORKERS,
                      lambda: len(_worker_pids(api_proc.pid)) == API_WORKERS,
                      mp.START_TIMEOUT)

        load = mp.Load([url], clients=6, total=ALLOCATIONS).start()
        load.join(mp.REQUEST_TIMEOUT * 4)
        made = load.counts[('POST', 201)]
        mp.log('answers: %s', dict(load.counts))
        self.assertEqual(ALLOCATIONS, made, dict(load.counts))
        self.wait_for('allocations processed',
                      lambda: self.rows('allocating') == 0, 30)
        active = self.rows('active')
        self.assertEqual(ALLOCATIONS, active)

        # Any worker answers a scrape with every worker's counts: several
        # scrapes, whichever worker takes them, agree.
        for _ in range(4):
            samples = self.scrape(url)
            self.assertEqual(made, samples.get(CREATED, 0))
            self.assertEqual(active, functional.value(
                samples, 'ironic_alloc_allocations', state='active',
                kind='allocation'))
            self.assertEqual(1, functional.value(
                samples, 'ironic_alloc_allocation_count_up'))

        observed = 0
        for name, exporter in exporters.items():
            samples = self.scrape(exporter)
            self.assertEqual(active, functional.value(
                samples, 'ironic_alloc_allocations', state='active',
                kind='allocation'), name)
            self.assertEqual(8, functional.value(
                samples, 'ironic_alloc_conductor_workers_size',
                conductor=self.cluster.conductors[name].hostname), name)
            observed += functional.value(
                samples, 'ironic_alloc_allocation_active_seconds_count')
        self.assertEqual(active, observed)

        # A worker killed outright: its replacement marks it dead, its
        # counts stay in the sum.
        victim = sorted(_worker_pids(api_proc.pid))[0]
        os.kill(victim, signal.SIGKILL)
        self.wait_for('the killed worker replaced', lambda: (
            victim not in _worker_pids(api_proc.pid)
            and len(_worker_pids(api_proc.pid)) == API_WORKERS),
            mp.START_TIMEOUT)
        more = mp.Load([url], clients=2, total=4).start()
        more.join(mp.REQUEST_TIMEOUT * 2)
        self.assertEqual(4, more.counts[('POST', 201)], dict(more.counts))
        samples = self.scrape(url)
        self.assertEqual(made + 4, samples.get(CREATED, 0))
