"""Hundreds of concurrent allocation requests over real HTTP with
[allocation]backend = placement: three real conductors, Placement on
PostgreSQL with several workers (where it can give one unit to two
consumers).  No node may be given twice in our database, Placement must
hold exactly the claims of the active allocations (none leaked), and the
nodes another user of Placement holds keep that user's claims only.
"""

import http.client
import logging
import threading
import time

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import states
from ironic_alloc.common import wsgi_service
from ironic_alloc.conductor.backends import placement_claims
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures
from ironic_alloc.tests.placement import base
from ironic_alloc.tests.placement import test_allocations

HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.79'}
NODES = 40
# Nodes with the trait that Nova holds in Placement.
HELD = 3
REQUESTS = 200
CLIENTS = 20
WAIT = 120


class _CountingHandler(logging.Handler):
    """Counts the log records containing ``text`` (for the report)."""

    def __init__(self, text):
        super().__init__(logging.INFO)
        self.text = text
        self.count = 0

    def emit(self, record):
        if self.text in record.getMessage():
            self.count += 1


class TestPlacementAllocationRace(base.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.server = self.start_placement('postgresql')
        self.pg_client = self.make_client(self.server)
        test_allocations.use_placement_backend(self, self.server)
        self.config(auth_strategy='noauth')
        for host in ('race-a', 'race-b', 'race-c'):
            self.useFixture(ia_fixtures.ConductorFixture(
                host=host, allocation_redrive_interval=2))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.api = wsgi_service.WSGIService(api_app.setup_app,
                                            '127.0.0.1', 0)
        self.api.start()
        self.addCleanup(self.api.stop)

    def request(self, conn, method, path, body=None):
        return ia_fixtures.json_request(conn, method, path, body, HEADERS)

    def _in_parallel(self, func, chunks):
        failures = []

        def run(chunk):
            conn = http.client.HTTPConnection('127.0.0.1', self.api.port,
                                              timeout=WAIT)
            try:
                func(conn, chunk)
            except Exception as exc:
                failures.append(exc)
            finally:
                conn.close()

        threads = [threading.Thread(target=run, args=(chunk,))
                   for chunk in chunks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual([], failures)

    def _post_all(self):
        created = []
        lock = threading.Lock()

        def post(conn, count):
            for _ in range(count):
                status, body = self.request(
                    conn, 'POST', '/v1/allocations',
                    {'resource_class': 'gold', 'traits': ['CUSTOM_RACE']})
                if status != 201:
                    raise AssertionError('POST: %s %s' % (status, body))
                with lock:
                    created.append(body['uuid'])

        self._in_parallel(post, [REQUESTS // CLIENTS] * CLIENTS)
        return created

    def _wait_done(self, conn, uuids):
        results = {}
        deadline = time.monotonic() + WAIT
        for uuid in uuids:
            while True:
                _s, body = self.request(conn, 'GET',
                                        '/v1/allocations/%s' % uuid)
                if body['state'] != states.ALLOCATING:
                    results[uuid] = body
                    break
                self.assertLess(time.monotonic(), deadline, body)
                time.sleep(0.05)
        return results

    def claims_by_provider(self, nodes):
        return {node.uuid: set(self.pg_client.get(
            '/resource_providers/%s/allocations' % node.uuid)['allocations'])
            for node in nodes}

    def test_race_then_release_all(self):
        nodes = [utils.make_available_node(
            self.context, name='race-node-%d' % i, traits=['CUSTOM_RACE'])
            for i in range(NODES)]
        # Nodes the race must not touch: no trait, in maintenance, or
        # held in Placement by another user of it (Nova).
        held = [utils.make_available_node(self.context,
                                          traits=['CUSTOM_RACE'])
                for _ in range(HELD)]
        others = [utils.make_available_node(self.context),
                  utils.make_available_node(self.context, maintenance=True,
                                            traits=['CUSTOM_RACE'])]
        self.assertTrue(placement_sync.sync_all(
            self.context, self.pg_client).ok)
        nova = {}
        for node in held:
            instance = test_allocations.nova_instance()
            body = placement_claims.claim_body(instance, node.uuid,
                                               'CUSTOM_GOLD')
            body.update(user_id='nova', project_id='nova-project')
            self.pg_client.put('/allocations/%s' % instance.uuid, body,
                               expected=(204,))
            nova[node.uuid] = {instance.uuid}

        lost = _CountingHandler('could not reserve it')
        logging.getLogger('ironic_alloc.conductor.backends.placement_claims'
                          ).addHandler(lost)
        self.addCleanup(logging.getLogger(
            'ironic_alloc.conductor.backends.placement_claims').removeHandler, lost)
        uuids = self._post_all()
        conn = http.client.HTTPConnection('127.0.0.1', self.api.port,
                                          timeout=WAIT)
        results = self._wait_done(conn, uuids)
        active = {uuid: body['node_uuid'] for uuid, body in results.items()
                  if body['state'] == states.ALLOCATION_ACTIVE}
        errors = [body for body in results.values()
                  if body['state'] == states.ALLOCATION_ERROR]
        with open(self.server.access_log) as log:
            shared = sum('"POST /allocations HTTP' in line for line in log)
        print('Placement race: %d POSTs from %d clients, 3 conductors, %d '
              'nodes -> %d active, %d error; %d claims released after '
              'losing our reservation; %d claim requests shared by '
              'concurrent allocations'
              % (REQUESTS, CLIENTS, NODES, len(active), len(errors),
                 lost.count, shared))
        # Concurrent claims of one conductor went in shared requests
        # (placement_batch), some of them refused for Nova's holds.
        self.assertGreater(shared, 0)
        self.assertEqual(NODES, len(active))
        self.assertEqual(REQUESTS - NODES, len(errors))
        # Zero double allocations in our database...
        self.assertEqual(NODES, len(set(active.values())))
        self.assertEqual([], utils.check_invariant())
        # ...and Placement holds exactly the active allocations' claims.
        expected = {node_uuid: {uuid} for uuid, node_uuid in active.items()}
        expected.update({o.uuid: set() for o in others})
        expected.update(nova)
        self.assertEqual(expected, self.claims_by_provider(
            nodes + others + held))

        def delete(conn, chunk):
            for uuid in chunk:
                status, body = self.request(conn, 'DELETE',
                                            '/v1/allocations/%s' % uuid)
                if status != 204:
                    raise AssertionError('DELETE: %s %s' % (status, body))

        actives = sorted(active)
        self._in_parallel(delete, [actives[i::8] for i in range(8)])
        for uuid in uuids:
            status, _body = self.request(conn, 'DELETE',
                                         '/v1/allocations/%s' % uuid)
            self.assertIn(status, (204, 404))
        conn.close()
        expected = {n.uuid: set() for n in nodes + others}
        expected.update(nova)
        self.assertEqual(expected,
                         self.claims_by_provider(nodes + others + held))
