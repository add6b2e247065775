"""Kill, pause and restart real processes under load, then check rows.

Every test starts its own ``ironic-alloc-api`` and ``ironic-alloc-conductor``
processes on RabbitMQ and PostgreSQL or MariaDB (see fixtures.py), drives
them with concurrent HTTP clients, breaks something on purpose, and then
checks, with SQL and through the API, that no allocation was lost or is
stuck, no node has two allocations and node and allocation rows agree.
Each test prints what it did and the counts it checked.

The tests restart the shared broker and database server, so they take
a machine-wide lock and run one at a time whatever stestr's concurrency.
"""

import collections
from concurrent import futures
import json
import logging
import signal
import time

import fixtures
from oslotest import base as oslo_base
import requests
import sqlalchemy as sa
from testtools import content

from ironic_alloc.tests.multiprocess import fixtures as mp

# NOTE: a bound for hangs only; the slowest test takes about a minute.
TEST_TIMEOUT = 240
# Take-over of a dead conductor's rows: heartbeat timeout, one take-over
# pass, and some slack for a loaded 2-core machine.
TAKE_OVER_BOUND = mp.HEARTBEAT_TIMEOUT + 2 * mp.CHECK_ALLOCATIONS_INTERVAL + 8
# How long after a restarted server the processes may still answer 503
# (reconnection with the short intervals of the generated configuration,
# heartbeats written again).
RECOVERY_GRACE = mp.HEARTBEAT_TIMEOUT + 6
# [api]allocation_create_wait of the tests that set it.
CREATE_WAIT = 3


class MultiProcessTestCase(oslo_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(TEST_TIMEOUT, gentle=True))
        logging.getLogger('urllib3').setLevel(logging.WARNING)
        mp.enter_tier(self)
        self.cluster = mp.Cluster(self.id().rsplit('.', 1)[-1][5:30])
        self.failed = False
        self.addCleanup(lambda: self.cluster.cleanup(keep_logs=self.failed))
        self.addOnException(self._attach_logs)
        self.started = time.monotonic()
        mp.log('%s: work dir %s, database %s', self.id(),
               self.cluster.workdir, mp._safe(self.cluster.db_url))

    def _attach_logs(self, exc_info):
        self.failed = True
        self.addDetail('service-logs',
                       content.text_content(self.cluster.logs_tail()))
        # NOTE: the database may be the server a test stopped: an error
        # escaping from here would end the whole test runner, and the
        # failure would go unreported.
        try:
            conductors = str(self.cluster.conductor_table())
        except Exception as exc:
            conductors = 'conductors table unreadable: %s' % exc
        self.addDetail('conductors', content.text_content(conductors))

    def prepare(self, nodes, apis=1, conductors=2, api_options=None):
        self.cluster.rebuild_schema()
        self.cluster.load_nodes(nodes)
        urls = [self.cluster.start_api(options=api_options)
                for _ in range(apis)]
        for i in range(conductors):
            self.cluster.start_conductor('c%d' % (i + 1))
        mp.log('started %d API processes %s and %d conductors; %d nodes',
               apis, urls, conductors, nodes)
        return urls

    def owned_allocating(self, conductor_id):
        with self.cluster.engine.connect() as conn:
            return {r[0] for r in conn.execute(sa.text(
                "SELECT uuid FROM allocations WHERE state = 'allocating' "
                "AND conductor_affinity = :c"), {'c': conductor_id})}

    def wait_for(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail('%s: not within %ds' % (what, timeout))
            time.sleep(0.2)

    def settle_and_check(self, url, load):
        waited = self.cluster.wait_settled(TAKE_OVER_BOUND + 10)
        counts = mp.check_consistency(self.cluster, url, load.created,
                                      load.deleted, load.delete_unknown)
        mp.log('settled %.1fs after the load ended; checked: %s', waited,
               counts)
        for proc in self.cluster.processes():
            if proc.name not in getattr(self, 'killed', ()):
                self.assertTrue(proc.running(),
                                '%s exited by itself' % proc.name)
        return counts

    def assert_answered(self, load, allowed, method=None):
        statuses = load.statuses(method)
        mp.log('answers%s: %s (slowest: %s)',
               ' to %s' % method if method else '', statuses,
               {k: round(v, 2) for k, v in load.slowest.items()})
        bad = {k: v for k, v in statuses.items()
               if (k[1] if method is None else k) not in allowed}
        self.assertEqual({}, bad, 'unexpected answers; samples: %s'
                         % {k: load.samples.get(k) for k in bad})

    def probe(self, method, url):
        """One request from the test thread: (status, seconds)."""
        load = mp.Load([url])
        import requests
        session = requests.Session()
        started = time.monotonic()
        if method == 'POST':
            resp = load.request(session, 'POST', url + '/v1/allocations')
        else:
            resp = load.request(session, 'DELETE', url)
        elapsed = time.monotonic() - started
        status = resp.status_code if resp is not None else \
            list(load.counts)[0][1]
        return status, elapsed, (resp.text[:300] if resp is not None
                                 else load.samples)


class TestConductorFailure(MultiProcessTestCase):

    def test_killed_conductor_allocations_taken_over(self):
        """kill -9 a conductor owning allocating rows while clients POST."""
        self.killed = ('c1',)
        url, = self.prepare(nodes=1500)
        c1 = self.cluster.conductors['c1']
        c1_id = self.cluster.conductor_id('c1')
        c2_id = self.cluster.conductor_id('c2')
        load = mp.Load([url], clients=4, pause=0.05).start()
        self.addCleanup(load.stop)
        time.sleep(1)
        # NOTE: a stopped conductor still looks alive until its heartbeat
        # times out, so it keeps receiving allocations it cannot process.
        c1.pause()
        self.wait_for('c1 owns allocating allocations created by POSTs',
                      lambda: self.owned_allocating(c1_id),
                      mp.HEARTBEAT_TIMEOUT + 5)
        from_posts = len(self.owned_allocating(c1_id))
        # NOTE: the API stops choosing c1 once its heartbeat is too old, so
        # on a slow machine the POSTs of that window may give it only a
        # few rows; the rest are written as the API writes them.
        if from_posts < 20:
            load.created.extend(self.cluster.insert_allocations(
                20 - from_posts, c1_id))
        owned = self.owned_allocating(c1_id)
        mp.log('c1 owns %d allocating allocations (%d from POSTs)',
               len(owned), from_posts)
        c1.kill()
        killed_at = time.monotonic()
        mp.log('kill -9 c1 (id %s) owning %d allocating allocations',
               c1_id, len(owned))
        time.sleep(mp.HEARTBEAT_TIMEOUT + mp.CHECK_ALLOCATIONS_INTERVAL)
        load.stop()
        mp.log('load stopped %.1fs after the kill', time.monotonic() -
               killed_at)
        self.assert_answered(load, {201}, 'POST')
        counts = self.settle_and_check(url, load)
        self.assertEqual(0, counts['by_state'].get('error', 0))
        with self.cluster.engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT uuid, state, conductor_affinity FROM allocations')
            ).all()
        taken = [r for r in rows if r.uuid in owned]
        self.assertEqual(len(owned), len(taken))
        self.assertEqual({('active', c2_id)},
                         {(r.state, r.conductor_affinity) for r in taken})
        mp.log('all %d allocations of the killed conductor are active '
               'under c2 (id %s); %d taken over according to c2\'s log',
               len(taken), c2_id,
               self.cluster.grep_logs('Took over allocation', ['c2']))

    def test_partitioned_conductor_late_writes_refused(self):
        """SIGSTOP a conductor in the middle of its work, let another take
        its rows over, SIGCONT it: its late writes change nothing."""
        url, = self.prepare(nodes=300)
        c1 = self.cluster.conductors['c1']
        c1_id = self.cluster.conductor_id('c1')
        c2_id = self.cluster.conductor_id('c2')
        # NOTE: a table lock held by the test stops every allocation in
        # flight between reading its row (owned by its conductor) and
        # searching for a node, so c1 is paused with work half done.
        # The rows are written as the API writes them (allocating, owned
        # by c1): the API itself reads the nodes table, which is locked.
        lock_conn = self.cluster.engine.connect()
        self.addCleanup(lock_conn.close)
        trans = lock_conn.begin()
        if self.cluster.engine.dialect.name == 'postgresql':
            lock_conn.execute(sa.text(
                'LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE'))
        else:
            lock_conn.execute(sa.text('LOCK TABLES nodes WRITE'))
        owned = self.cluster.insert_allocations(12, c1_id)
        # The re-drive (every second) starts them; the workers block.
        time.sleep(mp.REDRIVE_INTERVAL + 1.5)
        c1.pause()
        stopped_at = time.monotonic()
        if self.cluster.engine.dialect.name != 'postgresql':
            lock_conn.execute(sa.text('UNLOCK TABLES'))
        trans.rollback()
        still = self.owned_allocating(c1_id)
        mp.log('nodes table locked, 12 allocating allocations owned by c1 '
               '(id %s) written, SIGSTOP c1, lock released: %d still '
               'allocating under c1', c1_id, len(still))
        # NOTE: c1 may have finished some before the lock was taken
        # effect on them; the others are in flight in a stopped process.
        self.assertTrue(still)
        finished = set(owned) - still
        owned = still
        load = mp.Load([url], clients=2, total=20).start()
        load.join(60)
        load.created.extend(owned | finished)

        def taken_over():
            with self.cluster.engine.connect() as conn:
                rows = conn.execute(sa.text(
                    'SELECT uuid, state, conductor_affinity FROM '
                    'allocations')).all()
            return all(r.state == 'active' and r.conductor_affinity == c2_id
                       for r in rows if r.uuid in owned)

        self.wait_for('c2 took over and finished the allocations of c1',
                      taken_over, TAKE_OVER_BOUND)
        mp.log('c2 (id %s) took over and finished them %.1fs after the '
               'SIGSTOP', c2_id, time.monotonic() - stopped_at)
        # NOTE: the API's allocations too, so that nothing but c1 may
        # change a row from here on.
        self.cluster.wait_settled(TAKE_OVER_BOUND)
        before = self._snapshot(owned)
        refused_before = self.cluster.grep_logs(
            'was deleted or taken over while being processed', ['c1'])
        c1.signal(signal.SIGCONT)
        mp.log('SIGCONT c1')
        self.wait_for('c1 tried its late writes', lambda: (
            self.cluster.grep_logs(
                'was deleted or taken over while being processed', ['c1'])
            > refused_before), 15)
        # Its heartbeat, re-drive and take-over passes run meanwhile.
        time.sleep(mp.HEARTBEAT_TIMEOUT)
        refused = self.cluster.grep_logs(
            'was deleted or taken over while being processed', ['c1'])
        self.assertEqual(before, self._snapshot(owned))
        self.assert_answered(load, {201}, 'POST')
        self.settle_and_check(url, load)
        mp.log('c1 resumed: %d late reservations refused (guarded UPDATE '
               '... WHERE conductor_affinity = c1), rows of the %d '
               'allocations and their nodes unchanged', refused, len(owned))

    def _snapshot(self, uuids):
        """The rows of these allocations and of their nodes."""
        with self.cluster.engine.connect() as conn:
            allocs = sorted(tuple(r) for r in conn.execute(sa.text(
                'SELECT uuid, state, node_id, conductor_affinity, id FROM '
                'allocations')) if r.uuid in uuids)
            ids = {a[4] for a in allocs}
            nodes = sorted(tuple(r) for r in conn.execute(sa.text(
                'SELECT id, allocation_id, instance_uuid FROM nodes WHERE '
                'allocation_id IS NOT NULL')) if r.allocation_id in ids)
        return allocs, nodes


class TestServerRestarts(MultiProcessTestCase):

    def _outage(self, server, what, url, delete_target):
        """Stop ``server`` under load, probe the API, start it again.

        :returns: (time it went down, time it was back).
        """
        down_at = time.monotonic()
        self._stop(server)
        mp.log('%s stopped (%.1fs)', what, time.monotonic() - down_at)
        probes = {}
        for method, target in (('POST', url), ('DELETE', delete_target)):
            status, elapsed, text = self.probe(method, target)
            probes[method] = status
            mp.log('%s during the %s outage: %s in %.1fs %s', method, what,
                   status, elapsed, text if status not in (201, 204)
                   else '')
            self.assertLess(elapsed, mp.RPC_CALL_TIMEOUT + 5)
        time.sleep(2)
        up_at = time.monotonic()
        server.start()
        server.stopped = False
        mp.log('%s started again (%.1fs); it was down %.1fs', what,
               time.monotonic() - up_at, time.monotonic() - down_at)
        return down_at, time.monotonic(), probes

    def _stop(self, server):
        """Stop ``server``; the test's clean-up starts it again unless the
        test did."""
        # NOTE: marked first, so that a stop that fails half-way still
        # starts the server again for the tests that follow.
        server.stopped = True
        self.addCleanup(self._ensure_started, server)
        server.stop()

    def _three_settled_allocations(self):
        urls = self.prepare(nodes=10)
        created = mp.Load(urls, clients=1, total=3)
        created.start().join(60)
        self.assertEqual({('POST', 201): 3}, dict(created.counts))
        self.cluster.wait_settled(TAKE_OVER_BOUND + 10)
        return created

    @staticmethod
    def _ensure_started(server):
        if getattr(server, 'stopped', False):
            server.start()

    def _run_outage(self, server, what, post_allowed, api_options=None):
        urls = self.prepare(nodes=1500, api_options=api_options)
        url = urls[0]
        load = mp.Load(urls, clients=4, delete_ratio=0.3, pause=0.05).start()
        self.addCleanup(load.stop)
        time.sleep(3)
        # NOTE: claimed, so that no client of the load deletes it.
        victim = load.claim()
        down_at, up_at, probes = self._outage(
            server, what, url, '%s/v1/allocations/%s' % (url, victim))
        time.sleep(RECOVERY_GRACE + 3)
        load.stop()
        # After recovery: new allocations complete, DELETE works again.
        after = mp.Load(urls, clients=2, delete_ratio=0.3, total=40)
        after.start().join(60)
        load.counts.update(after.counts)
        load.created.extend(after.created)
        load.deleted.extend(after.deleted)
        self.assertEqual({201, 204}, {s for _, s in after.counts},
                         'answers after recovery: %s' % after.statuses())
        status, _, text = self.probe('DELETE', '%s/v1/allocations/%s'
                                     % (url, victim))
        if status != 404:
            self.assertEqual(204, status, text)
            load.deleted.append(victim)
        mp.log('after recovery: %s; DELETE of the probed allocation: %s',
               after.statuses(), status)

        # NOTE: by time in flight, not start time: on a slow machine a
        # request sent just before the outage may still be waiting when
        # the server goes down.
        window = (down_at, up_at + RECOVERY_GRACE)
        outage = {m: load.statuses_in_flight(*window, m)
                  for m in ('POST', 'DELETE')}
        outside = {m: load.statuses_in_flight(*window, m, overlapping=False)
                   for m in ('POST', 'DELETE')}
        mp.log('answers during the outage (+%ds grace): %s; outside: %s',
               RECOVERY_GRACE, dict(outage), dict(outside))
        self.assert_answered(load, {201, 204, 404, 409, 503})
        for method in ('POST', 'DELETE'):
            self.assertEqual(0, outside[method].get(503, 0),
                             '503 to %s while nothing was down' % method)
        self.assertIn(probes['POST'], post_allowed)
        self.assertEqual(503, probes['DELETE'])
        counts = self.settle_and_check(url, load)
        self.assertEqual(0, counts['by_state'].get('error', 0))
        return load, outage

    def test_broker_restart_under_load(self):
        """RabbitMQ stopped and started while clients POST and DELETE."""
        load, outage = self._run_outage(mp.Broker(), 'RabbitMQ', {201})
        # NOTE: the row is written before the cast: POSTs never fail.
        self.assertEqual(0, outage['POST'].get(503, 0))
        self.assertTrue(self.cluster.grep_logs('Cast of allocation',
                                               ['api-1']) or
                        outage['POST'].get(201, 0) == 0)
        mp.log('casts lost during the outage and re-driven: %d',
               self.cluster.grep_logs('Cast of allocation', ['api-1']))

    def test_broker_restart_under_load_with_waiting_create(self):
        """The same with [api]allocation_create_wait: POSTs that wait for
        their conductor's answer still answer 201 during the outage, in
        time, and their allocations complete."""
        load, outage = self._run_outage(
            mp.Broker(), 'RabbitMQ', {201},
            api_options={'allocation_create_wait': str(CREATE_WAIT)})
        self.assertEqual(0, outage['POST'].get(503, 0))
        slowest = load.slowest.get('POST', 0)
        # NOTE: the wait, the call's margin and a broker connection
        # attempt; a POST that hung would show here.
        self.assertLess(slowest, CREATE_WAIT + mp.RPC_CALL_TIMEOUT + 5)
        mp.log('slowest POST %.1fs; messages lost during the outage and '
               're-driven: %d', slowest, self.cluster.grep_logs(
                   're-drives it from the database', ['api-1']))

    def test_first_calls_of_a_fresh_api_while_broker_down(self):
        """An API process started while RabbitMQ is down: its first calls
        (DELETEs, all at once) answer 503 instead of waiting for the
        broker, and succeed once the broker is back."""
        created = self._three_settled_allocations()
        broker = mp.Broker()
        self._stop(broker)
        fresh = self.cluster.start_api()
        mp.log('RabbitMQ stopped; API process started at %s', fresh)
        targets = ['%s/v1/allocations/%s' % (fresh, uuid)
                   for uuid in created.created]
        with futures.ThreadPoolExecutor(len(targets)) as pool:
            # NOTE: requests' timeout is the only bound: a call that waits
            # for the broker fails the test with requests.Timeout.
            answers = list(pool.map(lambda u: requests.delete(
                u, headers=mp.api_headers(), timeout=mp.REQUEST_TIMEOUT),
                targets))
        for resp in answers:
            self.assertEqual(503, resp.status_code, resp.text)
            fault = json.loads(resp.json()['error_message'])
            self.assertIn('message broker is unreachable',
                          fault['faultstring'])
        mp.log('first DELETEs of the fresh API during the outage: %s',
               [r.status_code for r in answers])
        broker.start()
        broker.stopped = False
        statuses = []
        for target in targets:
            deadline = time.monotonic() + RECOVERY_GRACE + 20
            sent_unanswered = False
            while True:
                resp = requests.delete(target, headers=mp.api_headers(),
                                       timeout=mp.REQUEST_TIMEOUT)
                if resp.status_code != 503 or time.monotonic() > deadline:
                    break
                sent_unanswered |= 'did not answer' in resp.text
                time.sleep(0.5)
            # NOTE: a call sent while the conductors were reconnecting
            # ("did not answer in time") may have been carried out: then
            # the retry finds nothing.  The 503s of the outage above never
            # left the API process.
            earlier = resp.status_code == 404 and sent_unanswered
            statuses.append('204 earlier' if earlier else resp.status_code)
        mp.log('DELETEs of the same allocations after the broker came '
               'back: %s', statuses)
        self.assertEqual([], [s for s in statuses
                              if s not in (204, '204 earlier')])
        self.assertEqual({}, {u: s for u, s in
                              mp.list_allocations(fresh).items()
                              if u in created.created})

    def test_database_restart_under_load(self):
        """The database server stopped and started under load."""
        self._run_outage(mp.DatabaseServer(), 'database', {503})

    @staticmethod
    def _wait_conductors_alive(api_url):
        """Wait until the API sees every conductor alive again."""
        deadline = time.monotonic() + RECOVERY_GRACE
        while True:
            resp = requests.get(api_url + '/v1/conductors',
                                headers=mp.api_headers(),
                                timeout=mp.REQUEST_TIMEOUT)
            alive = [c['alive'] for c in resp.json().get('conductors', [])]
            if (resp.status_code == 200 and alive and all(alive)) or (
                    time.monotonic() > deadline):
                break
            time.sleep(0.2)
        mp.log('conductors seen by the API after the outage: %s (%s)',
               alive, resp.status_code)

    def test_first_requests_of_fresh_api_workers_while_database_down(self):
        """An API process with three workers started while the database
        server is down (and [database]max_retries = -1): the workers'
        first requests answer 503 within seconds instead of waiting for
        the database, and succeed once it is back."""
        created = self._three_settled_allocations()
        database = mp.DatabaseServer()
        self._stop(database)
        fresh = self.cluster.start_api(workers=3)
        mp.log('database stopped; API process with 3 workers started at '
               '%s', fresh)
        victims = list(created.created)

        def first_request(index):
            # NOTE: a new connection each, so that the kernel spreads them
            # over the workers; requests' timeout is the only bound, so a
            # request waiting for the database fails the test.
            started = time.monotonic()
            kind = index % 3
            if kind == 0:
                resp = requests.get(fresh + '/v1/allocations',
                                    headers=mp.api_headers(),
                                    timeout=mp.REQUEST_TIMEOUT)
            elif kind == 1:
                resp = requests.post(fresh + '/v1/allocations',
                                     json={'resource_class': mp.RESOURCE_CLASS},
                                     headers=mp.api_headers(),
                                     timeout=mp.REQUEST_TIMEOUT)
            else:
                resp = requests.delete(
                    '%s/v1/allocations/%s' % (fresh, victims[index // 3]),
                    headers=mp.api_headers(), timeout=mp.REQUEST_TIMEOUT)
            return resp, time.monotonic() - started

        with futures.ThreadPoolExecutor(9) as pool:
            answers = list(pool.map(first_request, range(9)))
        mp.log('first requests of the fresh workers during the outage: %s '
               '(slowest %.2fs)', [r.status_code for r, _ in answers],
               max(t for _, t in answers))
        for resp, elapsed in answers:
            self.assertEqual(503, resp.status_code, resp.text)
            fault = json.loads(resp.json()['error_message'])
            self.assertIn('database is unavailable', fault['faultstring'])
            self.assertLess(elapsed, mp.RPC_CALL_TIMEOUT + 5)
        database.start()
        database.stopped = False

        # Every worker connects once the database is back.
        deadline = time.monotonic() + RECOVERY_GRACE + 20
        while True:
            with futures.ThreadPoolExecutor(9) as pool:
                statuses = list(pool.map(lambda _: requests.get(
                    fresh + '/v1/allocations', headers=mp.api_headers(),
                    timeout=mp.REQUEST_TIMEOUT).status_code, range(9)))
            if set(statuses) == {200} or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        mp.log('GETs of the fresh workers after the database came back: %s',
               statuses)
        self.assertEqual({200}, set(statuses))
        # NOTE: the conductors could not heartbeat during the outage: until
        # each has written a heartbeat again, the API rightly finds no live
        # conductor for a new allocation (503, NoValidHost).
        self._wait_conductors_alive(fresh)
        after = mp.Load([fresh], clients=2, delete_ratio=0.3, total=12)
        after.start().join(60)
        mp.log('load through the fresh workers afterwards: %s',
               after.statuses())
        self.assertEqual({201, 204}, {s for _, s in after.counts})
        for victim in victims:
            resp = requests.delete('%s/v1/allocations/%s' % (fresh, victim),
                                   headers=mp.api_headers(),
                                   timeout=mp.REQUEST_TIMEOUT)
            self.assertEqual(204, resp.status_code, resp.text)
        after.deleted.extend(victims)
        after.created.extend(victims)
        self.settle_and_check(fresh, after)


class TestConcurrentLoad(MultiProcessTestCase):

    def test_two_apis_three_conductors(self):
        """Several hundred allocations and deletions over two API ports."""
        urls = self.prepare(nodes=1000, apis=2, conductors=3)
        load = mp.Load(urls, clients=8, delete_ratio=0.35, total=600)
        started = time.monotonic()
        load.start().join(TEST_TIMEOUT / 2)
        mp.log('600 requests by 8 clients over %s in %.1fs', urls,
               time.monotonic() - started)
        self.assert_answered(load, {201, 204})
        per_port = collections.Counter()
        counts = self.settle_and_check(urls[0], load)
        self.assertEqual(0, counts['by_state'].get('error', 0))
        # The second API process sees the same rows.
        self.assertEqual(mp.list_allocations(urls[0]),
                         mp.list_allocations(urls[1]))
        with self.cluster.engine.connect() as conn:
            per_port.update(dict(conn.execute(sa.text(
                'SELECT conductor_affinity, count(*) FROM allocations '
                'GROUP BY conductor_affinity')).all()))
        mp.log('allocations per conductor id: %s', dict(per_port))
        self.assertEqual(3, len(per_port))
